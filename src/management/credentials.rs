//! HTTP Basic credentials of the management API: `Authorization: Basic base64(email:api_key)`
//! (RFC 7617), parsed without panicking and without ever echoing the secret.

use std::fmt;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use super::{ManagementError, secret};

/// Longest `Authorization` value accepted, in bytes. Real ones are well under 200 bytes; the
/// cap bounds the work an unauthenticated caller can cause.
pub const MAX_AUTHORIZATION_LEN: usize = 4096;

/// Standard base64 alphabet; padding optional (clients send it, but its absence is harmless).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// An account's API key in the clear: the password half of the management API's Basic
/// credentials.
///
/// `Debug` prints `ApiKey(<redacted>)`; there is no `Display` or `Serialize`; reading it takes
/// an explicit [`expose`](Self::expose).
///
/// # Examples
/// ```
/// use flowvec::management::ApiKey;
/// let key = ApiKey::generate()?;
/// assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
/// assert_eq!(key.expose().len(), 43);
/// # Ok::<(), flowvec::management::ManagementError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (e.g. one read from configuration).
    #[must_use]
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// A new key from the OS CSPRNG: 256 bits of entropy as 43 URL-safe base64 characters.
    ///
    /// # Errors
    /// [`ManagementError::Randomness`] if the OS random number generator fails.
    pub fn generate() -> Result<Self, ManagementError> {
        secret::generate_token().map(Self)
    }

    /// The key in the clear.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// The (email, API key) pair of an `Authorization: Basic …` header value.
///
/// `Debug` shows the email and redacts the key.
///
/// # Examples
/// ```
/// use flowvec::management::{BasicCredentials, ManagementError};
/// // base64("ann@example.com:k3y") — what `curl -u ann@example.com:k3y` sends.
/// let creds = BasicCredentials::parse("Basic YW5uQGV4YW1wbGUuY29tOmszeQ==")?;
/// assert_eq!(creds.email(), "ann@example.com");
/// assert_eq!(creds.api_key().expose(), "k3y");
///
/// let err = BasicCredentials::parse("Bearer abc").unwrap_err();
/// assert!(matches!(err, ManagementError::UnsupportedScheme { .. }));
/// # Ok::<(), ManagementError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct BasicCredentials {
    email: String,
    api_key: ApiKey,
}

impl BasicCredentials {
    /// Pairs an email and a key (for clients and tests; servers use [`parse`](Self::parse)).
    #[must_use]
    pub fn new(email: impl Into<String>, api_key: ApiKey) -> Self {
        Self {
            email: email.into(),
            api_key,
        }
    }

    /// Parses an `Authorization` header value: the scheme `Basic` (any case), one or more
    /// spaces or tabs, then standard base64 (padding optional) of UTF-8 `email:api_key`.
    /// The email is everything before the first `:`, the key everything after it (a key may
    /// hold `:`). Leading and trailing spaces and tabs around the value are ignored.
    ///
    /// Takes bytes, since a header value need not be UTF-8. Never panics.
    ///
    /// # Errors
    /// All credential variants of [`ManagementError`], none of which carries the secret:
    /// [`CredentialsTooLong`](ManagementError::CredentialsTooLong) (over
    /// [`MAX_AUTHORIZATION_LEN`] bytes),
    /// [`MissingCredentials`](ManagementError::MissingCredentials) (empty value),
    /// [`UnsupportedScheme`](ManagementError::UnsupportedScheme) (not `Basic`),
    /// [`MalformedBase64`](ManagementError::MalformedBase64),
    /// [`CredentialsNotUtf8`](ManagementError::CredentialsNotUtf8),
    /// [`MissingColon`](ManagementError::MissingColon),
    /// [`EmptyCredential`](ManagementError::EmptyCredential),
    /// [`ControlCharacter`](ManagementError::ControlCharacter).
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{BasicCredentials, ManagementError};
    /// // base64("ann@example.com") has no ':'.
    /// let err = BasicCredentials::parse(b"basic YW5uQGV4YW1wbGUuY29t").unwrap_err();
    /// assert_eq!(err, ManagementError::MissingColon);
    /// ```
    pub fn parse(value: impl AsRef<[u8]>) -> Result<Self, ManagementError> {
        let value = value.as_ref();
        if value.len() > MAX_AUTHORIZATION_LEN {
            return Err(ManagementError::CredentialsTooLong {
                len: value.len(),
                max: MAX_AUTHORIZATION_LEN,
            });
        }
        let value = trim_blanks(value);
        if value.is_empty() {
            return Err(ManagementError::MissingCredentials);
        }
        let Some(split) = value.iter().position(|&b| is_blank(b)) else {
            // A single word: a bare scheme, or bare credentials (quoted only if a known scheme).
            return Err(if value.eq_ignore_ascii_case(b"basic") {
                ManagementError::MalformedBase64 {
                    problem: "nothing after the scheme `Basic`".to_owned(),
                }
            } else {
                ManagementError::UnsupportedScheme {
                    scheme: quotable_scheme(value),
                }
            });
        };
        let (scheme, rest) = value.split_at(split);
        if !scheme.eq_ignore_ascii_case(b"basic") {
            return Err(ManagementError::UnsupportedScheme {
                scheme: quotable_scheme(scheme),
            });
        }
        let encoded = trim_blanks(rest);
        let decoded = BASE64
            .decode(encoded)
            .map_err(|error| ManagementError::MalformedBase64 {
                problem: describe(&error),
            })?;
        let decoded =
            String::from_utf8(decoded).map_err(|error| ManagementError::CredentialsNotUtf8 {
                valid_up_to: error.utf8_error().valid_up_to(),
            })?;
        let (email, api_key) = decoded
            .split_once(':')
            .ok_or(ManagementError::MissingColon)?;
        check_part("email", email)?;
        check_part("API key", api_key)?;
        Ok(Self {
            email: email.to_owned(),
            api_key: ApiKey::new(api_key),
        })
    }

    /// The email (the account).
    #[must_use]
    pub fn email(&self) -> &str {
        &self.email
    }

    /// The API key.
    #[must_use]
    pub fn api_key(&self) -> &ApiKey {
        &self.api_key
    }

    /// The header value a client sends for these credentials: `Basic base64(email:api_key)`.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{ApiKey, BasicCredentials};
    /// let creds = BasicCredentials::new("ann@example.com", ApiKey::new("k3y"));
    /// assert_eq!(BasicCredentials::parse(creds.to_header_value())?, creds);
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    #[must_use]
    pub fn to_header_value(&self) -> String {
        let plain = format!("{}:{}", self.email, self.api_key.expose());
        format!("Basic {}", BASE64.encode(plain))
    }
}

impl fmt::Debug for BasicCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicCredentials")
            .field("email", &self.email)
            .field("api_key", &self.api_key)
            .finish()
    }
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn trim_blanks(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| !is_blank(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| !is_blank(b))
        .map_or(start, |last| last + 1);
    &bytes[start..end]
}

/// Schemes quoted back in [`ManagementError::UnsupportedScheme`]: the IANA HTTP Authentication
/// Scheme Registry plus a few common unregistered ones. Anything else might be a secret typed
/// into the wrong place, so it is not echoed.
const KNOWN_SCHEMES: &[&str] = &[
    "Bearer",
    "Concealed",
    "Digest",
    "DPoP",
    "GNAP",
    "HOBA",
    "Mutual",
    "Negotiate",
    "NTLM",
    "OAuth",
    "PrivateToken",
    "SCRAM-SHA-1",
    "SCRAM-SHA-256",
    "Token",
    "vapid",
    "AWS4-HMAC-SHA256",
];

/// The scheme as text if it is a known scheme name; otherwise empty, since it might be a secret.
fn quotable_scheme(scheme: &[u8]) -> String {
    KNOWN_SCHEMES
        .iter()
        .find(|known| known.as_bytes().eq_ignore_ascii_case(scheme))
        .map_or_else(String::new, |_| {
            String::from_utf8_lossy(scheme).into_owned()
        })
}

/// A base64 error described by position only: the offending byte is part of the secret.
fn describe(error: &base64::DecodeError) -> String {
    match error {
        base64::DecodeError::InvalidByte(offset, _) => {
            format!("invalid character at offset {offset}")
        }
        base64::DecodeError::InvalidLength(len) => format!("invalid length of {len} symbols"),
        base64::DecodeError::InvalidLastSymbol(offset, _) => {
            format!("invalid last symbol at offset {offset}")
        }
        base64::DecodeError::InvalidPadding => "invalid padding".to_owned(),
    }
}

fn check_part(part: &'static str, value: &str) -> Result<(), ManagementError> {
    if value.is_empty() {
        return Err(ManagementError::EmptyCredential { part });
    }
    if let Some((position, _)) = value.char_indices().find(|(_, c)| c.is_control()) {
        return Err(ManagementError::ControlCharacter { part, position });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_blanks_handles_all_blank_and_empty_input() {
        assert_eq!(trim_blanks(b""), b"");
        assert_eq!(trim_blanks(b" \t "), b"");
        assert_eq!(trim_blanks(b" a b\t"), b"a b");
    }

    #[test]
    fn quotable_scheme_quotes_only_known_scheme_names() {
        assert_eq!(quotable_scheme(b"Bearer"), "Bearer");
        assert_eq!(quotable_scheme(b"bearer"), "bearer");
        assert_eq!(quotable_scheme(b"YW5uOmszeQ"), "");
        assert_eq!(quotable_scheme(b"s3cr3t"), "");
        assert_eq!(quotable_scheme(b"\xff"), "");
    }

    #[test]
    fn a_single_word_is_quoted_only_if_it_is_a_known_scheme() {
        let err = BasicCredentials::parse("Bearer").unwrap_err();
        assert_eq!(
            err,
            ManagementError::UnsupportedScheme {
                scheme: "Bearer".to_owned()
            }
        );
        let err = BasicCredentials::parse("YW5uOmszeQ").unwrap_err();
        assert_eq!(
            err,
            ManagementError::UnsupportedScheme {
                scheme: String::new()
            }
        );
    }

    #[test]
    fn debug_redacts_the_key() {
        let creds = BasicCredentials::new("ann", ApiKey::new("very-secret"));
        let debug = format!("{creds:?}");
        assert!(
            debug.contains("ann") && !debug.contains("very-secret"),
            "{debug}"
        );
    }
}
