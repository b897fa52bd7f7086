//! The management part's error type.

/// How many characters of a caller-supplied value an error message quotes at most.
///
/// Ids and emails come from request paths and headers; quoting them whole would let a caller
/// write arbitrarily long text into the host's logs.
const QUOTE_MAX_CHARS: usize = 128;

/// Everything that can go wrong in [`crate::management`]: bad input, unknown databases, bad
/// credentials, and a failing OS random number generator.
///
/// Each variant carries the offending value where it is not a secret; the message says what was
/// expected. **No variant ever carries a password, an API key or a raw `Authorization` header**,
/// so an error can be logged or returned to a client as it is.
///
/// Suggested HTTP statuses for a host (the `wire` layer decides):
/// the credential variants ([`MissingCredentials`](Self::MissingCredentials) ..
/// [`InvalidCredentials`](Self::InvalidCredentials)) → 401;
/// [`DatabaseNotFound`](Self::DatabaseNotFound) → 404;
/// [`Randomness`](Self::Randomness) → 500; the rest → 400 (or 409 for the `…Exists` variants).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManagementError {
    /// No database with this id is visible to the account: either none exists, or it belongs
    /// to another account. The two cases are deliberately the same variant with the same message.
    #[error("database not found: {id:?}")]
    DatabaseNotFound {
        /// The id that was asked for (shortened if very long).
        id: String,
    },
    /// [`Registry::insert`](super::Registry::insert) of an id that is already registered.
    #[error("database already exists: {id:?}")]
    DatabaseExists {
        /// The id that was given.
        id: String,
    },
    /// [`Accounts::insert`](super::Accounts::insert) of an email that already has an account.
    #[error("account already exists: {email:?}")]
    AccountExists {
        /// The email that was given.
        email: String,
    },
    /// A field of a record or request has a value outside what is allowed.
    #[error("invalid {field}: {value:?}, expected {expected}")]
    InvalidField {
        /// Which field (its wire name).
        field: &'static str,
        /// The value that was given (shortened if very long).
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// A string that is not one of an enumeration's wire values.
    #[error("unknown {field}: {value:?}, expected one of {expected}")]
    UnknownValue {
        /// Which field (its wire name).
        field: &'static str,
        /// The value that was given (shortened if very long).
        value: String,
        /// The accepted wire values.
        expected: &'static str,
    },
    /// The operating system's random number generator failed, so no secret could be generated.
    /// Nothing was changed.
    #[error("the operating system's random number generator failed: {reason}")]
    Randomness {
        /// The OS error, as text.
        reason: String,
    },
    /// No `Authorization` header value, or an empty one.
    #[error("missing credentials: expected an Authorization header `Basic base64(email:api_key)`")]
    MissingCredentials,
    /// The `Authorization` value does not use the `Basic` scheme.
    #[error("unsupported authorization scheme {scheme:?}: expected `Basic base64(email:api_key)`")]
    UnsupportedScheme {
        /// The scheme that was given if it is a known scheme name such as `Bearer`; empty
        /// otherwise, since an unknown word there may be a secret.
        scheme: String,
    },
    /// The part after `Basic ` is not valid base64.
    #[error(
        "malformed Basic credentials: not valid base64 ({problem}); expected base64(email:api_key)"
    )]
    MalformedBase64 {
        /// What is wrong, with a byte offset where there is one (never the bytes themselves).
        problem: String,
    },
    /// The decoded credentials are not UTF-8.
    #[error(
        "malformed Basic credentials: decoded bytes are not UTF-8 (invalid from byte {valid_up_to})"
    )]
    CredentialsNotUtf8 {
        /// Length of the valid UTF-8 prefix.
        valid_up_to: usize,
    },
    /// The decoded credentials have no `:` between the email and the API key.
    #[error("malformed Basic credentials: no ':' between email and API key")]
    MissingColon,
    /// The email or the API key is empty.
    #[error("malformed Basic credentials: the {part} is empty")]
    EmptyCredential {
        /// `"email"` or `"API key"`.
        part: &'static str,
    },
    /// The email or the API key holds an ASCII control character (RFC 7617 forbids them).
    #[error("malformed Basic credentials: the {part} holds a control character at byte {position}")]
    ControlCharacter {
        /// `"email"` or `"API key"`.
        part: &'static str,
        /// Byte offset of the character within that part.
        position: usize,
    },
    /// The `Authorization` value is longer than the parser accepts.
    #[error("Authorization header too long: {len} bytes, expected at most {max}")]
    CredentialsTooLong {
        /// The length that was given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Well-formed credentials that do not match an account. The same variant and message
    /// whether the email is unknown or the API key is wrong.
    #[error("invalid email or API key")]
    InvalidCredentials,
}

impl ManagementError {
    /// Shortens a caller-supplied value for quoting in a message (at most
    /// [`QUOTE_MAX_CHARS`] characters, with `…` marking a cut).
    pub(crate) fn quote(value: &str) -> String {
        match value.char_indices().nth(QUOTE_MAX_CHARS) {
            None => value.to_owned(),
            Some((cut, _)) => format!("{}…", &value[..cut]),
        }
    }

    /// [`DatabaseNotFound`](Self::DatabaseNotFound) for a caller-supplied id.
    pub(crate) fn not_found(id: &str) -> Self {
        Self::DatabaseNotFound {
            id: Self::quote(id),
        }
    }

    /// [`Randomness`](Self::Randomness) from the OS error.
    pub(crate) fn randomness(error: getrandom::Error) -> Self {
        Self::Randomness {
            reason: error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_keeps_short_values_and_cuts_long_ones_on_a_char_boundary() {
        assert_eq!(ManagementError::quote("abc"), "abc");
        let long = "é".repeat(QUOTE_MAX_CHARS + 5);
        let quoted = ManagementError::quote(&long);
        assert_eq!(quoted.chars().count(), QUOTE_MAX_CHARS + 1);
        assert!(quoted.ends_with('…'));
    }

    #[test]
    fn not_found_message_escapes_control_characters() {
        let message = ManagementError::not_found("db\n1").to_string();
        assert_eq!(message, r#"database not found: "db\n1""#);
    }
}
