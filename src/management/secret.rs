//! Machine-generated secrets and their salted hashes: the one place that touches the OS CSPRNG,
//! SHA-256 and constant-time comparison.
//!
//! **Why SHA-256 and not a slow KDF (argon2, scrypt, bcrypt).** A slow KDF exists to make
//! guessing *low-entropy, human-chosen* passwords expensive after a hash leaks. The secrets
//! hashed here are 256-bit values from the OS CSPRNG ([`SECRET_BYTES`] bytes), so an offline
//! attacker faces 2^255 SHA-256 evaluations on average whatever the hash's speed; a salted
//! SHA-256 is a preimage-resistant commitment and that is all that is needed. The per-secret
//! random salt keeps equal secrets from having equal hashes and defeats precomputation. A host
//! that stores *human-chosen* API keys (see [`Accounts::insert`](super::Accounts::insert)) does
//! not get this argument and should prefer generated keys.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::ManagementError;

/// Random bytes in every generated secret: 256 bits of entropy.
pub(crate) const SECRET_BYTES: usize = 32;

/// Random bytes of salt per stored hash.
const SALT_BYTES: usize = 16;

/// Domain-separation prefix, so a digest made here cannot be confused with any other SHA-256
/// use of the same bytes.
const DOMAIN: &[u8] = b"flowvec.management.secret.v1\0";

/// Fills `buf` from the OS CSPRNG.
pub(crate) fn fill_random(buf: &mut [u8]) -> Result<(), ManagementError> {
    getrandom::fill(buf).map_err(ManagementError::randomness)
}

/// A new secret: [`SECRET_BYTES`] bytes from the OS CSPRNG as URL-safe base64 without padding
/// (43 characters of `A-Z a-z 0-9 - _`).
pub(crate) fn generate_token() -> Result<String, ManagementError> {
    let mut bytes = [0u8; SECRET_BYTES];
    fill_random(&mut bytes)?;
    let token = URL_SAFE_NO_PAD.encode(bytes);
    bytes.fill(0);
    Ok(token)
}

/// A salted SHA-256 commitment to a secret; verification compares in constant time.
///
/// Serializes as `"<salt>.<digest>"` in URL-safe base64 (no secret in it), so hashes can sit in
/// a command log and in snapshots.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SecretHash {
    salt: [u8; SALT_BYTES],
    digest: [u8; 32],
}

impl SecretHash {
    /// Hashes `secret` under a fresh random salt.
    pub(crate) fn new(secret: &[u8]) -> Result<Self, ManagementError> {
        let mut salt = [0u8; SALT_BYTES];
        fill_random(&mut salt)?;
        Ok(Self {
            salt,
            digest: digest(&salt, secret),
        })
    }

    /// A hash that no candidate matches in practice, for doing the same work on a miss as on a
    /// hit (an unknown account or database costs as much as a known one).
    pub(crate) fn decoy() -> Self {
        Self {
            salt: [0u8; SALT_BYTES],
            digest: [0u8; 32],
        }
    }

    /// Whether `candidate` is the secret. The digest comparison is constant-time; the hashing
    /// time depends only on the candidate's length, which the caller already knows.
    pub(crate) fn verify(&self, candidate: &[u8]) -> bool {
        let computed = digest(&self.salt, candidate);
        bool::from(computed.ct_eq(&self.digest))
    }
}

impl serde::Serialize for SecretHash {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(self.salt),
            URL_SAFE_NO_PAD.encode(self.digest)
        );
        serializer.serialize_str(&text)
    }
}

impl<'de> serde::Deserialize<'de> for SecretHash {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        let bad = || serde::de::Error::custom("a secret hash is `<salt>.<digest>` in base64url");
        let (salt, digest) = text.split_once('.').ok_or_else(bad)?;
        let salt = URL_SAFE_NO_PAD.decode(salt).map_err(|_| bad())?;
        let digest = URL_SAFE_NO_PAD.decode(digest).map_err(|_| bad())?;
        Ok(Self {
            salt: salt.try_into().map_err(|_| bad())?,
            digest: digest.try_into().map_err(|_| bad())?,
        })
    }
}

impl std::fmt::Debug for SecretHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretHash(<redacted>)")
    }
}

fn digest(salt: &[u8; SALT_BYTES], secret: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN);
    hasher.update(salt);
    hasher.update(secret);
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_round_trips_through_serde() {
        let hash = SecretHash::new(b"k").expect("OS RNG");
        let json = serde_json::to_string(&hash).expect("a string");
        assert_eq!(
            json.len(),
            1 + 22 + 1 + 43 + 1,
            "quoted salt.digest: {json}"
        );
        let back: SecretHash = serde_json::from_str(&json).expect("our own output");
        assert!(back == hash && back.verify(b"k"));
        assert!(serde_json::from_str::<SecretHash>("\"abc\"").is_err());
        assert!(
            serde_json::from_str::<SecretHash>("\"YQ.YQ\"").is_err(),
            "short salt"
        );
    }

    #[test]
    fn hash_verifies_the_secret_and_nothing_else() {
        let hash = SecretHash::new(b"correct horse").expect("OS RNG");
        assert!(hash.verify(b"correct horse"));
        assert!(!hash.verify(b"correct hors"));
        assert!(!hash.verify(b"correct horsf"));
        assert!(!hash.verify(b""));
    }

    #[test]
    fn equal_secrets_get_different_salts_and_digests() {
        let a = SecretHash::new(b"same").expect("OS RNG");
        let b = SecretHash::new(b"same").expect("OS RNG");
        assert_ne!(a.salt, b.salt);
        assert_ne!(a.digest, b.digest);
    }

    #[test]
    fn decoy_matches_nothing_tried() {
        let decoy = SecretHash::decoy();
        for candidate in [&b""[..], b"a", b"\0", &[0u8; 32]] {
            assert!(!decoy.verify(candidate));
        }
    }

    #[test]
    fn tokens_are_43_url_safe_chars() {
        let token = generate_token().expect("OS RNG");
        assert_eq!(token.len(), 43);
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
    }

    #[test]
    fn debug_is_redacted() {
        let hash = SecretHash::new(b"s").expect("OS RNG");
        assert_eq!(format!("{hash:?}"), "SecretHash(<redacted>)");
    }
}
