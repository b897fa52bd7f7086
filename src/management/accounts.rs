//! [`Accounts`]: the management API's accounts and the hashes of their API keys.

use std::collections::HashMap;
use std::fmt;

use parking_lot::RwLock;

use super::secret::SecretHash;
use serde::{Deserialize, Serialize};

use super::{ApiKey, ApiKeyHash, BasicCredentials, ManagementError};

/// Longest accepted email, in bytes.
const MAX_EMAIL_BYTES: usize = 256;

/// Longest accepted host-chosen API key, in bytes.
const MAX_KEY_BYTES: usize = 1024;

/// The management API's accounts: email → hash of the API key.
///
/// Emails are compared exactly (no case folding), as the reference treats them as identifiers.
///
/// Verification has the same care as database passwords: only a salted SHA-256 hash of each key
/// is stored, digests are compared in constant time, and an unknown email does the same hash
/// work and gives the same answer ([`ManagementError::InvalidCredentials`]) as a wrong key, so
/// which emails have accounts cannot be learned by guessing.
///
/// Keys made by [`Accounts::create`] are 256-bit random values, for which a fast hash is enough
/// (see [`Registry`](super::Registry)). [`Accounts::insert`] accepts a host-chosen key for
/// configuration and tests; a human-chosen key has less entropy, and its SHA-256 hash would
/// resist an offline guessing attack less well than a slow KDF would. The store lives in memory only, so that
/// attack needs the host's memory; still, prefer generated keys.
///
/// Thread safety as in [`Registry`](super::Registry): `&self` methods behind one
/// `parking_lot::RwLock`; share it as `Arc<Accounts>`.
///
/// # Examples
/// ```
/// use flowvec::management::{Accounts, ApiKey, BasicCredentials, ManagementError};
///
/// let accounts = Accounts::new();
/// let key = accounts.create("ann@example.com")?;
///
/// let header = BasicCredentials::new("ann@example.com", key).to_header_value();
/// assert_eq!(accounts.authenticate_header(&header)?, "ann@example.com");
///
/// let wrong_key = BasicCredentials::new("ann@example.com", ApiKey::new("nope"));
/// let unknown_email = BasicCredentials::new("bob@example.com", ApiKey::new("nope"));
/// assert_eq!(accounts.authenticate(&wrong_key), Err(ManagementError::InvalidCredentials));
/// assert_eq!(accounts.authenticate(&unknown_email), Err(ManagementError::InvalidCredentials));
/// # Ok::<(), ManagementError>(())
/// ```
#[derive(Default)]
pub struct Accounts {
    keys: RwLock<HashMap<String, SecretHash>>,
}

impl Accounts {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates an account with a new API key from the OS CSPRNG and returns the key (the only
    /// time it is seen in the clear).
    ///
    /// # Errors
    /// [`ManagementError::InvalidField`] for an unusable email (see [`insert`](Self::insert)),
    /// [`ManagementError::AccountExists`] if the email has an account,
    /// [`ManagementError::Randomness`] if the OS random number generator fails.
    pub fn create(&self, email: &str) -> Result<ApiKey, ManagementError> {
        let key = ApiKey::generate()?;
        self.insert(email, &key)?;
        Ok(key)
    }

    /// Creates an account with a host-chosen API key (from configuration, or a test). Prefer
    /// [`create`](Self::create); see the module documentation.
    ///
    /// # Errors
    /// - [`ManagementError::InvalidField`] if the email is empty, longer than 256 bytes, or holds
    ///   `:` (Basic credentials cannot carry it) or a control character; or the key is empty,
    ///   longer than 1024 bytes, or holds a control character (the message never quotes the key).
    /// - [`ManagementError::AccountExists`] if the email has an account.
    /// - [`ManagementError::Randomness`] if the OS random number generator fails (salt).
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Accounts, ApiKey};
    /// let accounts = Accounts::new();
    /// accounts.insert("ann@example.com", &ApiKey::new("from-config"))?;
    /// assert!(accounts.verify("ann@example.com", "from-config"));
    /// assert!(accounts.insert("ann@example.com", &ApiKey::new("again")).is_err());
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    pub fn insert(&self, email: &str, api_key: &ApiKey) -> Result<(), ManagementError> {
        validate_email(email)?;
        self.insert_hash(email, ApiKeyHash::of(api_key)?)
    }

    /// Creates an account from the hash of its key ([`ApiKeyHash::of`]): the command-log form
    /// of [`insert`](Self::insert) and [`create`](Self::create), which draws no randomness.
    ///
    /// # Errors
    /// [`ManagementError::InvalidField`] for an unusable email,
    /// [`ManagementError::AccountExists`] if the email has an account.
    pub fn insert_hash(&self, email: &str, hash: ApiKeyHash) -> Result<(), ManagementError> {
        validate_email(email)?;
        let hash = hash.0;
        let mut keys = self.keys.write();
        if keys.contains_key(email) {
            return Err(ManagementError::AccountExists {
                email: ManagementError::quote(email),
            });
        }
        keys.insert(email.to_owned(), hash);
        Ok(())
    }

    /// Replaces an account's API key with a new one from the OS CSPRNG; the old key stops
    /// verifying at once.
    ///
    /// # Errors
    /// [`ManagementError::InvalidCredentials`] if there is no such account (the same answer as
    /// for any failed authentication), [`ManagementError::Randomness`] if the OS random number
    /// generator fails.
    pub fn rotate(&self, email: &str) -> Result<ApiKey, ManagementError> {
        let key = ApiKey::generate()?;
        let hash = SecretHash::new(key.expose().as_bytes())?;
        let mut keys = self.keys.write();
        let slot = keys
            .get_mut(email)
            .ok_or(ManagementError::InvalidCredentials)?;
        *slot = hash;
        Ok(key)
    }

    /// A serializable image: every account's email and key hash (no key), ordered by email.
    #[must_use]
    pub fn snapshot(&self) -> AccountsSnapshot {
        let mut accounts: Vec<(String, ApiKeyHash)> = self
            .keys
            .read()
            .iter()
            .map(|(email, hash)| (email.clone(), ApiKeyHash(hash.clone())))
            .collect();
        accounts.sort_by(|a, b| a.0.cmp(&b.0));
        AccountsSnapshot { accounts }
    }

    /// The accounts of a [`snapshot`](Self::snapshot).
    ///
    /// # Errors
    /// As [`insert_hash`](Self::insert_hash) for each account (a repeated email is
    /// [`ManagementError::AccountExists`]).
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::Accounts;
    /// let accounts = Accounts::new();
    /// let key = accounts.create("ann@example.com")?;
    /// let json = serde_json::to_string(&accounts.snapshot()).expect("plain data");
    /// assert!(!json.contains(key.expose()));
    /// let restored = Accounts::restore(serde_json::from_str(&json).expect("our own output"))?;
    /// assert!(restored.verify("ann@example.com", key.expose()));
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    pub fn restore(snapshot: AccountsSnapshot) -> Result<Self, ManagementError> {
        let accounts = Self::new();
        for (email, hash) in snapshot.accounts {
            accounts.insert_hash(&email, hash)?;
        }
        Ok(accounts)
    }

    /// Whether `email` has an account.
    #[must_use]
    pub fn contains(&self, email: &str) -> bool {
        self.keys.read().contains_key(email)
    }

    /// Removes an account; returns whether it existed.
    pub fn remove(&self, email: &str) -> bool {
        self.keys.write().remove(email).is_some()
    }

    /// Whether `api_key` is the key of the account `email`. An unknown email does the same hash
    /// work as a known one and answers `false` like a wrong key; the digest comparison is
    /// constant-time.
    #[must_use]
    pub fn verify(&self, email: &str, api_key: &str) -> bool {
        let keys = self.keys.read();
        match keys.get(email) {
            Some(hash) => hash.verify(api_key.as_bytes()),
            None => {
                let _ = SecretHash::decoy().verify(api_key.as_bytes());
                false
            }
        }
    }

    /// Checks parsed credentials; returns the account (the email) on success.
    ///
    /// # Errors
    /// [`ManagementError::InvalidCredentials`] for an unknown email or a wrong key alike.
    pub fn authenticate<'c>(
        &self,
        credentials: &'c BasicCredentials,
    ) -> Result<&'c str, ManagementError> {
        if self.verify(credentials.email(), credentials.api_key().expose()) {
            Ok(credentials.email())
        } else {
            Err(ManagementError::InvalidCredentials)
        }
    }

    /// Parses an `Authorization` header value ([`BasicCredentials::parse`]) and checks it;
    /// returns the account (the email) on success.
    ///
    /// # Errors
    /// The parse errors of [`BasicCredentials::parse`], then
    /// [`ManagementError::InvalidCredentials`] for an unknown email or a wrong key alike.
    pub fn authenticate_header(&self, value: impl AsRef<[u8]>) -> Result<String, ManagementError> {
        let credentials = BasicCredentials::parse(value)?;
        self.authenticate(&credentials).map(str::to_owned)
    }

    /// Number of accounts.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.read().len()
    }

    /// Whether there are no accounts.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for Accounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Accounts")
            .field("accounts", &self.len())
            .finish_non_exhaustive()
    }
}

fn validate_email(email: &str) -> Result<(), ManagementError> {
    if email.is_empty()
        || email.len() > MAX_EMAIL_BYTES
        || email.chars().any(|c| c == ':' || c.is_control())
    {
        return Err(ManagementError::InvalidField {
            field: "email",
            value: ManagementError::quote(email),
            expected: "a non-empty email of at most 256 bytes without ':' or control characters",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_validates_email_and_key_without_quoting_the_key() {
        let accounts = Accounts::new();
        for bad in ["", "a:b", "a\nb"] {
            let err = accounts.insert(bad, &ApiKey::new("k")).unwrap_err();
            assert!(
                matches!(err, ManagementError::InvalidField { field: "email", .. }),
                "{bad}"
            );
        }
        for bad in ["", "sec\u{7f}ret"] {
            let err = accounts.insert("ann", &ApiKey::new(bad)).unwrap_err();
            assert!(matches!(
                err,
                ManagementError::InvalidField {
                    field: "api_key",
                    ..
                }
            ));
            assert!(bad.is_empty() || !err.to_string().contains(bad));
        }
        assert!(accounts.is_empty());
    }

    #[test]
    fn rotate_invalidates_the_old_key() {
        let accounts = Accounts::new();
        let old = accounts.create("ann").expect("create");
        let new = accounts.rotate("ann").expect("rotate");
        assert!(!accounts.verify("ann", old.expose()));
        assert!(accounts.verify("ann", new.expose()));
        assert_eq!(
            accounts.rotate("bob").unwrap_err(),
            ManagementError::InvalidCredentials
        );
    }

    #[test]
    fn remove_revokes_the_account() {
        let accounts = Accounts::new();
        let key = accounts.create("ann").expect("create");
        assert!(accounts.remove("ann"));
        assert!(!accounts.remove("ann"));
        assert!(!accounts.verify("ann", key.expose()));
    }
}

/// A serializable image of [`Accounts`]: emails and key hashes, never a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccountsSnapshot {
    accounts: Vec<(String, ApiKeyHash)>,
}

/// The checks of [`Accounts::insert`] on a host-chosen key (the message never quotes it).
pub(super) fn validate_key(api_key: &ApiKey) -> Result<(), ManagementError> {
    let key = api_key.expose();
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(char::is_control) {
        return Err(ManagementError::InvalidField {
            field: "api_key",
            value: "<redacted>".to_owned(),
            expected: "a non-empty key of at most 1024 bytes without control characters",
        });
    }
    Ok(())
}
