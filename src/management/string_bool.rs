//! [`StringBool`]: a boolean the reference sends as the string `"true"` or `"false"`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A boolean that is the JSON *string* `"true"` or `"false"` on the wire, as the reference
/// sends `db_acl_enabled`, `db_acl_default_user_status` and `prometheus_enabled`.
///
/// Serialises to the string, never to a JSON boolean; deserialises from exactly `"true"` or
/// `"false"` and rejects anything else (a JSON `true`, `"TRUE"`, `"1"`) with an error naming
/// the expected strings, so a client that sends the wrong type finds out.
///
/// # Examples
/// ```
/// use flowvec::management::StringBool;
/// assert_eq!(serde_json::to_string(&StringBool::TRUE)?, r#""true""#);
/// let b: StringBool = serde_json::from_str(r#""false""#)?;
/// assert!(!b.get());
/// assert!(serde_json::from_str::<StringBool>("false").is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StringBool(pub bool);

impl StringBool {
    /// `"true"`.
    pub const TRUE: Self = Self(true);
    /// `"false"`.
    pub const FALSE: Self = Self(false);

    /// The boolean value.
    #[must_use]
    pub const fn get(self) -> bool {
        self.0
    }

    /// The wire string, `"true"` or `"false"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        if self.0 { "true" } else { "false" }
    }
}

impl From<bool> for StringBool {
    fn from(value: bool) -> Self {
        Self(value)
    }
}

impl From<StringBool> for bool {
    fn from(value: StringBool) -> Self {
        value.0
    }
}

impl fmt::Display for StringBool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StringBool {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StringBool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = StringBool;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"the string "true" or "false""#)
            }

            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<StringBool, E> {
                match value {
                    "true" => Ok(StringBool(true)),
                    "false" => Ok(StringBool(false)),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_two_strings_are_accepted() {
        for bad in ["true", "1", r#""TRUE""#, r#""yes""#, r#""""#, "null"] {
            let err = serde_json::from_str::<StringBool>(bad)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(r#"the string "true" or "false""#),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            serde_json::from_str::<StringBool>(r#""true""#).expect("ok"),
            StringBool::TRUE
        );
    }
}
