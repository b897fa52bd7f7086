//! Signed deliveries: the queue's signing keys and the `Upstash-Signature` JWT each delivery
//! carries, exactly as the reference SDKs' `Receiver.verify` checks it.
//!
//! The JWT is HS256 over `{"iss": "Upstash", "sub": <destination URL>, "exp": now + 5 min,
//! "nbf": now, "iat": now, "jti": <message id>, "body": base64url(SHA-256(body))}`, signed with
//! the current key; receivers accept the current or the next key, so a rotation (next becomes
//! current, a new next is drawn) never breaks a receiver that has both.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::flow::Timestamp;
use crate::management::ManagementError;

/// How long a signature is valid after it is made, in seconds.
pub const SIGNATURE_LIFETIME_SECS: u64 = 300;

/// The queue's signing keys (`GET /v2/keys`): deliveries are signed with `current`; receivers
/// also accept `next`, which becomes current at the next rotation.
///
/// They are secrets shared with receivers: `Debug` hides them; the server keeps them in its
/// data directory (log and snapshots), which must be as private as the keys.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigningKeys {
    /// The key deliveries are signed with.
    pub current: String,
    /// The key that becomes current at the next rotation.
    pub next: String,
}

impl SigningKeys {
    /// Two new keys from the OS CSPRNG (`sig_` + 43 characters of URL-safe base64, 256 bits).
    ///
    /// # Errors
    /// [`ManagementError::Randomness`] if the OS random number generator fails.
    pub fn generate() -> Result<Self, ManagementError> {
        Ok(Self {
            current: new_key()?,
            next: new_key()?,
        })
    }

    /// The keys after a rotation: `next` becomes current and `new_next` the next one.
    #[must_use]
    pub fn rotated(&self, new_next: String) -> Self {
        Self {
            current: self.next.clone(),
            next: new_next,
        }
    }
}

/// A new signing key from the OS CSPRNG.
///
/// # Errors
/// [`ManagementError::Randomness`] if the OS random number generator fails.
pub fn new_key() -> Result<String, ManagementError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(ManagementError::randomness)?;
    Ok(format!("sig_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

impl fmt::Debug for SigningKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKeys(<redacted>)")
    }
}

/// The `Upstash-Signature` value for delivering `body` to `url` at `now`: an HS256 JWT signed
/// with `key` (see the module documentation for its claims).
///
/// # Examples
/// ```
/// use flowvec::flow::Timestamp;
/// use flowvec::wire::sign_delivery;
/// let jwt = sign_delivery("sig_key", "http://127.0.0.1:9/hook", b"hello", "0-1", Timestamp::from_secs(1_700_000_000));
/// let parts: Vec<&str> = jwt.split('.').collect();
/// assert_eq!(parts.len(), 3);
/// assert_eq!(parts[0], "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"); // {"alg":"HS256","typ":"JWT"}
/// ```
#[must_use]
pub fn sign_delivery(key: &str, url: &str, body: &[u8], jti: &str, now: Timestamp) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let secs = now.as_secs();
    let claims = serde_json::json!({
        "iss": "Upstash",
        "sub": url,
        "exp": secs + SIGNATURE_LIFETIME_SECS,
        "nbf": secs,
        "iat": secs,
        "jti": jti,
        "body": URL_SAFE_NO_PAD.encode(Sha256::digest(body)),
    });
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let mut mac =
        Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(signing_input.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signing_input}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_part(part: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64url")).expect("json")
    }

    #[test]
    fn claims_and_signature_are_what_receivers_check() {
        let now = Timestamp::from_millis(1_700_000_000_900);
        let jwt = sign_delivery("k1", "http://h/x", b"body", "0-7", now);
        let [header, payload, signature]: [&str; 3] = jwt
            .split('.')
            .collect::<Vec<_>>()
            .try_into()
            .expect("three parts");
        assert_eq!(decode_part(header)["alg"], "HS256");
        let claims = decode_part(payload);
        assert_eq!(claims["iss"], "Upstash");
        assert_eq!(claims["sub"], "http://h/x");
        assert_eq!(claims["nbf"], 1_700_000_000);
        assert_eq!(claims["exp"], 1_700_000_300);
        assert_eq!(claims["jti"], "0-7");
        assert_eq!(
            claims["body"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"body"))
        );
        // The signature is HMAC-SHA256 of "header.payload" under the key, and only that key.
        let mut mac = Hmac::<Sha256>::new_from_slice(b"k1").expect("any length");
        mac.update(format!("{header}.{payload}").as_bytes());
        let expected = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        assert_eq!(signature, expected);
        assert_ne!(sign_delivery("k2", "http://h/x", b"body", "0-7", now), jwt);
        assert_ne!(sign_delivery("k1", "http://h/x", b"bodY", "0-7", now), jwt);
    }

    #[test]
    fn keys_are_random_and_rotate() {
        let keys = SigningKeys::generate().expect("OS RNG");
        assert!(keys.current.starts_with("sig_") && keys.current.len() == 47);
        assert_ne!(keys.current, keys.next);
        let rotated = keys.rotated("sig_new".to_owned());
        assert_eq!(
            (rotated.current.as_str(), rotated.next.as_str()),
            (keys.next.as_str(), "sig_new")
        );
        assert_eq!(format!("{keys:?}"), "SigningKeys(<redacted>)");
    }
}
