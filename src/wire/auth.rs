//! Bearer tokens for the queue and vector APIs ([`Tokens`]), checked in constant time.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::WireError;

/// Which bearer-token API a route belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// `/upsert`, `/query`, ...
    Vector,
    /// `/v2/publish`, `/v2/flowControl`, ...
    Queue,
}

/// The bearer tokens that open the vector API and the queue API.
///
/// Only SHA-256 digests are kept; a presented token is hashed and compared with every digest of
/// its API in constant time (no early exit), so neither the content nor the length of a valid
/// token leaks through timing. `Debug` shows counts only.
///
/// # Examples
/// ```
/// use flowvec::wire::Tokens;
/// let tokens = Tokens::new().with_vector_token("v-secret").with_queue_token("q-secret");
/// assert!(tokens.allows_vector("v-secret"));
/// assert!(!tokens.allows_vector("q-secret"));
/// assert!(tokens.allows_queue("q-secret"));
/// ```
#[derive(Clone, Default)]
pub struct Tokens {
    vector: Vec<[u8; 32]>,
    queue: Vec<[u8; 32]>,
}

impl Tokens {
    /// No tokens: every bearer request is refused with 401.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// One token for both APIs.
    #[must_use]
    pub fn shared(token: &str) -> Self {
        Self::new().with_vector_token(token).with_queue_token(token)
    }

    /// Adds a token that opens the vector API. An empty token is ignored (it could never be
    /// presented: `Bearer ` with nothing after it is refused).
    #[must_use]
    pub fn with_vector_token(mut self, token: &str) -> Self {
        if !token.is_empty() {
            self.vector.push(digest(token));
        }
        self
    }

    /// Adds a token that opens the queue API. An empty token is ignored.
    #[must_use]
    pub fn with_queue_token(mut self, token: &str) -> Self {
        if !token.is_empty() {
            self.queue.push(digest(token));
        }
        self
    }

    /// Whether `token` opens the vector API.
    #[must_use]
    pub fn allows_vector(&self, token: &str) -> bool {
        matches_any(&self.vector, token)
    }

    /// Whether `token` opens the queue API.
    #[must_use]
    pub fn allows_queue(&self, token: &str) -> bool {
        matches_any(&self.queue, token)
    }

    /// Checks an `Authorization` header value (`Bearer <token>`, scheme case-insensitive) for
    /// `api`.
    pub(crate) fn check(&self, api: Api, authorization: Option<&str>) -> Result<(), WireError> {
        let unauthorized = |reason| Err(WireError::Unauthorized { reason });
        let Some(value) = authorization else {
            return unauthorized("missing Authorization header; expected `Bearer <token>`");
        };
        let Some((scheme, token)) = value.trim().split_once(' ') else {
            return unauthorized("malformed Authorization header; expected `Bearer <token>`");
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return unauthorized("unsupported authorization scheme; expected `Bearer <token>`");
        }
        let token = token.trim();
        let ok = match api {
            Api::Vector => self.allows_vector(token),
            Api::Queue => self.allows_queue(token),
        };
        if ok && !token.is_empty() {
            Ok(())
        } else {
            unauthorized("invalid bearer token")
        }
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("vector", &self.vector.len())
            .field("queue", &self.queue.len())
            .finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Compares against every digest without stopping at a match.
fn matches_any(digests: &[[u8; 32]], token: &str) -> bool {
    let presented = digest(token);
    let mut found = subtle::Choice::from(0);
    for d in digests {
        found |= d.ct_eq(&presented);
    }
    found.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_accepts_only_bearer_with_a_known_token() {
        let tokens = Tokens::new().with_vector_token("v").with_queue_token("q");
        assert!(tokens.check(Api::Vector, Some("Bearer v")).is_ok());
        assert!(tokens.check(Api::Vector, Some("bearer v")).is_ok());
        assert!(tokens.check(Api::Queue, Some("Bearer q")).is_ok());
        for bad in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer "),
            Some("Basic v"),
            Some("Bearer q"),
            Some("v"),
        ] {
            let err = tokens.check(Api::Vector, bad).unwrap_err();
            assert_eq!(err.status(), 401, "{bad:?}");
        }
    }

    #[test]
    fn empty_tokens_are_never_configured() {
        let tokens = Tokens::shared("");
        assert!(!tokens.allows_vector(""));
        assert!(tokens.check(Api::Queue, Some("Bearer ")).is_err());
    }

    #[test]
    fn debug_hides_tokens() {
        let debug = format!("{:?}", Tokens::shared("secret-token"));
        assert!(!debug.contains("secret"), "{debug}");
    }
}
