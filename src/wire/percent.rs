//! Percent-decoding of path segments and query strings (RFC 3986 §2.1, and `+` as a space in
//! `application/x-www-form-urlencoded` query strings).

use super::WireError;

/// Decodes `%XX` escapes in `raw`; `plus_is_space` also turns `+` into a space (query strings).
///
/// # Errors
/// [`WireError::BadEncoding`] for a `%` not followed by two hex digits, or bytes that are not
/// UTF-8 after decoding; `what` names the part of the request in the message.
pub(crate) fn decode(raw: &str, plus_is_space: bool, what: &str) -> Result<String, WireError> {
    if !raw.contains(['%', '+']) {
        return Ok(raw.to_owned());
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| {
                    let h = std::str::from_utf8(h).ok()?;
                    u8::from_str_radix(h, 16)
                        .ok()
                        .filter(|_| h.bytes().all(|b| b.is_ascii_hexdigit()))
                });
                let Some(byte) = hex else {
                    return Err(WireError::BadEncoding {
                        what: what.to_owned(),
                        value: quote(raw),
                        problem: format!("`%` at byte {i} is not followed by two hex digits"),
                    });
                };
                out.push(byte);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|err| WireError::BadEncoding {
        what: what.to_owned(),
        value: quote(raw),
        problem: format!(
            "decoded bytes are not UTF-8 (from byte {})",
            err.utf8_error().valid_up_to()
        ),
    })
}

/// Splits a raw query string into decoded `(name, value)` pairs, in order. A bare name (`all`)
/// has the value `""`; empty pieces (`a=1&&b=2`) are skipped.
///
/// # Errors
/// [`WireError::BadEncoding`] as for [`decode`].
pub(crate) fn query_pairs(raw: &str) -> Result<Vec<(String, String)>, WireError> {
    raw.split('&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
            Ok((
                decode(name, true, "query parameter name")?,
                decode(value, true, "query parameter value")?,
            ))
        })
        .collect()
}

/// At most 128 characters of a caller-supplied value, for error messages.
pub(crate) fn quote(value: &str) -> String {
    const MAX: usize = 128;
    match value.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &value[..cut]),
        None => value.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_escapes_and_keeps_plain_text() {
        assert_eq!(decode("a%20b%2Fc", false, "x").unwrap(), "a b/c");
        assert_eq!(decode("a+b", false, "x").unwrap(), "a+b");
        assert_eq!(decode("a+b", true, "x").unwrap(), "a b");
        assert_eq!(decode("%C3%A9t%c3%a9", false, "x").unwrap(), "été");
        assert_eq!(decode("plain", false, "x").unwrap(), "plain");
    }

    #[test]
    fn rejects_broken_escapes_and_non_utf8() {
        for bad in ["%", "%2", "%zz", "a%2", "%+1", "%FF"] {
            let err = decode(bad, false, "path segment").unwrap_err();
            assert!(err.to_string().contains("path segment"), "{err}");
        }
    }

    #[test]
    fn query_pairs_keep_order_and_bare_names() {
        let pairs = query_pairs("all&parallelism=3&&x=a%3Db+c").unwrap();
        let expected = [("all", ""), ("parallelism", "3"), ("x", "a=b c")];
        assert_eq!(pairs.len(), expected.len());
        for ((n, v), (en, ev)) in pairs.iter().zip(expected) {
            assert_eq!((n.as_str(), v.as_str()), (en, ev));
        }
        assert!(query_pairs("").unwrap().is_empty());
    }

    #[test]
    fn quote_shortens_long_values() {
        let long = "é".repeat(200);
        let q = quote(&long);
        assert_eq!(q.chars().count(), 129);
        assert!(q.ends_with('…'));
    }
}
