//! Secrets issued ahead of the change that installs them: [`DatabaseSecrets`] and
//! [`ApiKeyHash`].
//!
//! A host that logs every state change (`crate::state`) draws the randomness *before* the
//! command is written, so that replaying the command gives the same state: the command carries
//! only hashes and the REST tokens, and the password or key in the clear goes to the caller
//! alone, never into the log.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::secret::SecretHash;
use super::{ApiKey, Database, ManagementError, Password, RestToken};

/// A database's new credentials: the hash of a new password and new REST tokens, made by
/// [`DatabaseSecrets::generate`] and installed by
/// [`Registry::insert_with`](super::Registry::insert_with) or
/// [`Registry::reset_password_with`](super::Registry::reset_password_with).
///
/// It holds no password in the clear; `Debug` hides the tokens.
///
/// # Examples
/// ```
/// use flowvec::management::{Database, DatabaseSecrets, Region, Registry};
/// let registry = Registry::new();
/// let (secrets, password) = DatabaseSecrets::generate()?;
/// let json = serde_json::to_string(&secrets).expect("plain data");
/// assert!(!json.contains(password.expose()));
/// let db = Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 0);
/// registry.insert_with(db, serde_json::from_str(&json).expect("our own output"))?;
/// assert!(registry.verify_password("ann@example.com", "db-1", password.expose()));
/// # Ok::<(), flowvec::management::ManagementError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatabaseSecrets {
    pub(crate) password_hash: SecretHash,
    pub(crate) rest_token: RestToken,
    pub(crate) read_only_rest_token: RestToken,
}

impl DatabaseSecrets {
    /// A new password (returned in the clear, the only copy), its salted hash and two new REST
    /// tokens, all from the OS CSPRNG.
    ///
    /// # Errors
    /// [`ManagementError::Randomness`] if the OS random number generator fails.
    pub fn generate() -> Result<(Self, Password), ManagementError> {
        let password = Password::generate()?;
        let secrets = Self {
            password_hash: SecretHash::new(password.expose().as_bytes())?,
            rest_token: RestToken::generate()?,
            read_only_rest_token: RestToken::generate()?,
        };
        Ok((secrets, password))
    }

    /// Puts the tokens into `record` and returns the password hash.
    pub(crate) fn install(self, record: &mut Database) -> SecretHash {
        record.rest_token = Some(self.rest_token);
        record.read_only_rest_token = Some(self.read_only_rest_token);
        self.password_hash
    }
}

impl fmt::Debug for DatabaseSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DatabaseSecrets(<redacted>)")
    }
}

/// The salted hash of an account's API key, for
/// [`Accounts::insert_hash`](super::Accounts::insert_hash).
///
/// # Examples
/// ```
/// use flowvec::management::{Accounts, ApiKey, ApiKeyHash};
/// let key = ApiKey::generate()?;
/// let hash = ApiKeyHash::of(&key)?;
/// let accounts = Accounts::new();
/// accounts.insert_hash("ann@example.com", hash)?;
/// assert!(accounts.verify("ann@example.com", key.expose()));
/// # Ok::<(), flowvec::management::ManagementError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ApiKeyHash(pub(crate) SecretHash);

impl ApiKeyHash {
    /// Hashes `key` under a fresh random salt.
    ///
    /// # Errors
    /// [`ManagementError::InvalidField`] for an empty key, one longer than 1024 bytes or one
    /// with a control character; [`ManagementError::Randomness`] if the OS random number
    /// generator fails.
    pub fn of(key: &ApiKey) -> Result<Self, ManagementError> {
        super::accounts::validate_key(key)?;
        SecretHash::new(key.expose().as_bytes()).map(Self)
    }
}

impl fmt::Debug for ApiKeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKeyHash(<redacted>)")
    }
}
