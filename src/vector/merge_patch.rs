//! RFC 7396 JSON merge patch, used by `update` with `metadataUpdateMode: PATCH`.

use serde_json::{Map, Value};

/// Applies `patch` to `target` as RFC 7396 defines it: an object patch merges member by member
/// (a `null` member removes that member, others are merged recursively, a non-object target
/// becomes `{}` first); any other patch replaces the target.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(object) = target {
        for (key, value) in members {
            if value.is_null() {
                object.remove(key);
            } else {
                merge_patch(object.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::merge_patch;
    use serde_json::{Value, json};

    fn patched(target: Value, patch: Value) -> Value {
        let mut t = target;
        merge_patch(&mut t, &patch);
        t
    }

    /// Every example of RFC 7396 Appendix A.
    #[test]
    fn rfc_7396_appendix_a() {
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (
                json!({"a":"b","b":"c"}),
                json!({"a":null}),
                json!({"b":"c"}),
            ),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"a":"foo"}), json!(null), json!(null)),
            (json!({"a":"foo"}), json!("bar"), json!("bar")),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (
                json!({}),
                json!({"a":{"bb":{"ccc":null}}}),
                json!({"a":{"bb":{}}}),
            ),
        ];
        for (target, patch, expected) in cases {
            assert_eq!(
                patched(target.clone(), patch.clone()),
                expected,
                "{target} + {patch}"
            );
        }
    }

    #[test]
    fn patching_nothing_starts_from_an_empty_object() {
        assert_eq!(
            patched(Value::Null, json!({"a": 1, "b": null})),
            json!({"a": 1})
        );
    }
}
