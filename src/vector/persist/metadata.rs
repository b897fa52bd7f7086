//! Metadata (a JSON value) in binary: exact where JSON text is not (an `f64` keeps its bits, a
//! number keeps its integer or float kind), and faster to read than re-parsing JSON.
//!
//! A value is a tag byte, then: nothing (`null`, `false`, `true`), 8 bytes (`u64`, `i64`,
//! `f64`), a length-prefixed UTF-8 string, or a count followed by the items (arrays) or by
//! key-string/value pairs (objects). Decoding recurses at most
//! [`METADATA_MAX_DEPTH`](crate::vector::METADATA_MAX_DEPTH) levels (the cap every stored
//! metadata obeys), so crafted bytes cannot overflow the stack.

use super::bytes::{Decoder, put_len, put_str, put_u8, put_u64};
use crate::vector::{METADATA_MAX_DEPTH, VectorError};
use serde_json::{Map, Number, Value};

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const U64: u8 = 3;
const I64: u8 = 4;
const F64: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

/// Appends `v`. Stored metadata is at most [`METADATA_MAX_DEPTH`] deep, so the recursion is
/// bounded.
pub(super) fn encode(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => put_u8(out, NULL),
        Value::Bool(false) => put_u8(out, FALSE),
        Value::Bool(true) => put_u8(out, TRUE),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                put_u8(out, U64);
                put_u64(out, u);
            } else if let Some(i) = n.as_i64() {
                put_u8(out, I64);
                put_u64(out, i as u64);
            } else {
                put_u8(out, F64);
                put_u64(out, n.as_f64().unwrap_or(0.0).to_bits());
            }
        }
        Value::String(s) => {
            put_u8(out, STRING);
            put_str(out, s);
        }
        Value::Array(items) => {
            put_u8(out, ARRAY);
            put_len(out, items.len());
            for item in items {
                encode(item, out);
            }
        }
        Value::Object(map) => {
            put_u8(out, OBJECT);
            put_len(out, map.len());
            for (k, item) in map {
                put_str(out, k);
                encode(item, out);
            }
        }
    }
}

/// Reads one value; `depth` is the number of containers around it.
pub(super) fn decode(d: &mut Decoder<'_>, depth: usize) -> Result<Value, VectorError> {
    let tag = d.u8("metadata tag")?;
    Ok(match tag {
        NULL => Value::Null,
        FALSE => Value::Bool(false),
        TRUE => Value::Bool(true),
        U64 => Value::Number(d.u64("metadata number")?.into()),
        I64 => Value::Number((d.u64("metadata number")? as i64).into()),
        F64 => {
            let f = f64::from_bits(d.u64("metadata number")?);
            Value::Number(
                Number::from_f64(f)
                    .ok_or_else(|| d.corrupt(format!("metadata number {f} is not finite")))?,
            )
        }
        STRING => Value::String(d.str("metadata string")?.to_owned()),
        ARRAY | OBJECT => {
            if depth >= METADATA_MAX_DEPTH {
                return Err(d.corrupt(format!(
                    "metadata nested deeper than {METADATA_MAX_DEPTH} levels"
                )));
            }
            if tag == ARRAY {
                // Each item takes at least its tag byte.
                let n = d.count(1, "metadata array length")?;
                let mut items = Vec::new();
                for _ in 0..n {
                    items.push(decode(d, depth + 1)?);
                }
                Value::Array(items)
            } else {
                // Each member takes at least an 8-byte key length and a tag byte.
                let n = d.count(9, "metadata object size")?;
                let mut map = Map::new();
                for _ in 0..n {
                    let key = d.str("metadata key")?.to_owned();
                    let item = decode(d, depth + 1)?;
                    if map.insert(key, item).is_some() {
                        return Err(d.corrupt("metadata object has a key twice"));
                    }
                }
                Value::Object(map)
            }
        }
        other => return Err(d.corrupt(format!("unknown metadata tag {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(v: &Value) -> Value {
        let mut buf = Vec::new();
        encode(v, &mut buf);
        let mut d = Decoder::new(&buf, 0);
        let back = decode(&mut d, 0).unwrap();
        assert!(d.is_empty());
        back
    }

    #[test]
    fn values_come_back_identical_including_number_kinds_and_float_bits() {
        let v = json!({
            "null": null, "t": true, "f": false, "u": u64::MAX, "i": i64::MIN, "one": 1,
            "one_f": 1.0, "tiny": 5e-324, "third": 0.1 + 0.2, "neg_zero": -0.0,
            "s": "é\u{0}\"", "a": [1, [2, {"b": []}], {}], "": ""
        });
        let back = round_trip(&v);
        assert_eq!(back, v);
        assert!(back["one"].is_u64() && back["one_f"].is_f64());
        assert_eq!(
            back["third"].as_f64().map(f64::to_bits),
            Some((0.1f64 + 0.2).to_bits())
        );
        assert!(back["neg_zero"].as_f64().is_some_and(f64::is_sign_negative));
    }

    #[test]
    fn crafted_bytes_are_refused() {
        // Nesting beyond the cap.
        let deep: Vec<u8> = std::iter::repeat_n(ARRAY, 100_000)
            .flat_map(|t| std::iter::once(t).chain(1u64.to_le_bytes()))
            .collect();
        assert!(decode(&mut Decoder::new(&deep, 0), 0).is_err());
        // A NaN.
        let mut nan = vec![F64];
        nan.extend_from_slice(&f64::NAN.to_bits().to_le_bytes());
        assert!(decode(&mut Decoder::new(&nan, 0), 0).is_err());
        // An unknown tag, a huge count, a repeated key.
        assert!(decode(&mut Decoder::new(&[9], 0), 0).is_err());
        let mut huge = vec![ARRAY];
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&mut Decoder::new(&huge, 0), 0).is_err());
        let mut twice = Vec::new();
        put_u8(&mut twice, OBJECT);
        put_len(&mut twice, 2);
        for _ in 0..2 {
            put_str(&mut twice, "k");
            put_u8(&mut twice, NULL);
        }
        assert!(decode(&mut Decoder::new(&twice, 0), 0).is_err());
    }
}
