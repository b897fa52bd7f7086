//! [`Registry`]: the databases of all accounts, their password hashes, and password reset.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use parking_lot::RwLock;

use super::secret::SecretHash;
use super::{Database, DatabaseSecrets, ManagementError, Password};
use serde::{Deserialize, Serialize};

/// Longest accepted `database_id`, in bytes.
const MAX_ID_BYTES: usize = 256;

/// The databases of all accounts, each with the hash of its current password.
///
/// A database belongs to the account named by its record's `user_email` (the reference's
/// "email or team id of the owner"); every lookup takes the asking account and answers only for
/// databases it owns.
///
/// # Security properties (DESIGN §3)
/// - New passwords come from the OS CSPRNG: 32 bytes, 256 bits of entropy ([`Password`]).
/// - Only a salted SHA-256 hash of each password is stored. A fast hash is adequate for a
///   256-bit random secret: an offline attacker faces 2^255 guesses on average whatever the
///   hash's speed, so no slow KDF (argon2, bcrypt) is needed; the random per-database salt
///   defeats precomputation.
/// - Verification compares digests in constant time; a missing database costs the same hash
///   work as a present one.
/// - A reset replaces the hash under the write lock: once `reset_password` returns, the old
///   password no longer verifies, for any thread. The REST tokens are rotated with it (in the
///   reference, resetting the password is how REST tokens are revoked).
/// - An account asking for another account's database gets exactly the answer for a missing id:
///   the same [`ManagementError::DatabaseNotFound`] with the same message, so ids of other
///   accounts cannot be probed.
///
/// # Thread safety
/// Interior locking: every method takes `&self` and the registry is `Send + Sync`, so a server
/// shares it as `Arc<Registry>`. One `parking_lot::RwLock` guards the map: reads (`get`, `list`,
/// `verify_password`) run in parallel, `insert` and `reset_password` take the write lock only to
/// swap values in (random generation and hashing happen before it is taken). Management traffic
/// is light, so one lock is simpler than sharding and costs nothing measurable.
///
/// # Examples
/// ```
/// use flowvec::management::{Database, ManagementError, Region, Registry};
///
/// let registry = Registry::new();
/// let db = Database::new("db-1", "cache", "ann@example.com", Region::EuWest1, 1_700_000_000);
/// let (_, first) = registry.insert(db)?;
///
/// let (record, second) = registry.reset_password("ann@example.com", "db-1")?;
/// assert_eq!(record.database_id, "db-1");
/// assert!(registry.verify_password("ann@example.com", "db-1", second.expose()));
/// assert!(!registry.verify_password("ann@example.com", "db-1", first.expose()));
///
/// // Another account cannot tell this database from a missing one.
/// let foreign = registry.reset_password("bob@example.com", "db-1").unwrap_err();
/// let missing = registry.reset_password("bob@example.com", "db-404").unwrap_err();
/// assert!(matches!(foreign, ManagementError::DatabaseNotFound { .. }));
/// assert!(matches!(missing, ManagementError::DatabaseNotFound { .. }));
/// # Ok::<(), ManagementError>(())
/// ```
#[derive(Default)]
pub struct Registry {
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Database id → entry.
    databases: HashMap<String, Entry>,
    /// Owner → ids of its databases, ordered, so `list` neither scans all accounts nor sorts.
    by_owner: HashMap<String, BTreeSet<String>>,
}

struct Entry {
    record: Database,
    password: SecretHash,
}

impl Inner {
    /// The entry for `id` if `account` owns it. `None` for missing and foreign alike.
    fn visible(&self, account: &str, id: &str) -> Option<&Entry> {
        self.databases
            .get(id)
            .filter(|entry| entry.record.user_email == account)
    }

    fn visible_mut(&mut self, account: &str, id: &str) -> Option<&mut Entry> {
        self.databases
            .get_mut(id)
            .filter(|entry| entry.record.user_email == account)
    }

    /// Files a validated `record` under its id and its owner; `DatabaseExists` if the id is
    /// taken. The one way in for `insert_with` and `restore`, so both keep the two maps alike.
    fn add(&mut self, record: Database, password: SecretHash) -> Result<(), ManagementError> {
        if self.databases.contains_key(&record.database_id) {
            return Err(ManagementError::DatabaseExists {
                id: ManagementError::quote(&record.database_id),
            });
        }
        self.by_owner
            .entry(record.user_email.clone())
            .or_default()
            .insert(record.database_id.clone());
        self.databases
            .insert(record.database_id.clone(), Entry { record, password });
        Ok(())
    }
}

impl Registry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a database owned by `record.user_email`, with a fresh password and fresh REST
    /// tokens (any tokens in `record` are replaced). Returns the stored record and the initial
    /// password (the only time it is seen in the clear, as with every reset).
    ///
    /// # Errors
    /// - [`ManagementError::InvalidField`] if `database_id` is empty, longer than 256 bytes, or
    ///   holds a control character or `/` (it is a URL path segment), or `user_email` is empty.
    /// - [`ManagementError::DatabaseExists`] if the id is taken (by any account).
    /// - [`ManagementError::Randomness`] if the OS random number generator fails.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, Region, Registry};
    /// let registry = Registry::new();
    /// let (stored, password) =
    ///     registry.insert(Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 0))?;
    /// assert!(stored.rest_token.is_some());
    /// assert!(registry.verify_password("ann@example.com", "db-1", password.expose()));
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    pub fn insert(&self, record: Database) -> Result<(Database, Password), ManagementError> {
        validate_record(&record)?;
        let (secrets, password) = DatabaseSecrets::generate()?;
        Ok((self.insert_with(record, secrets)?, password))
    }

    /// [`insert`](Self::insert) with credentials made beforehand by
    /// [`DatabaseSecrets::generate`] (deterministic: the command-log form of `insert`).
    ///
    /// # Errors
    /// As [`insert`](Self::insert), except that no randomness is drawn.
    pub fn insert_with(
        &self,
        mut record: Database,
        secrets: DatabaseSecrets,
    ) -> Result<Database, ManagementError> {
        validate_record(&record)?;
        let hash = secrets.install(&mut record);
        self.inner.write().add(record.clone(), hash)?;
        Ok(record)
    }

    /// The record of database `id`, if `account` owns it.
    ///
    /// # Errors
    /// [`ManagementError::DatabaseNotFound`] if there is no such database *or* another account
    /// owns it (the same error either way).
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, Region, Registry};
    /// let registry = Registry::new();
    /// registry.insert(Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 0))?;
    /// assert_eq!(registry.get("ann@example.com", "db-1")?.database_name, "cache");
    /// assert!(registry.get("bob@example.com", "db-1").is_err());
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    pub fn get(&self, account: &str, id: &str) -> Result<Database, ManagementError> {
        self.inner
            .read()
            .visible(account, id)
            .map(|entry| entry.record.clone())
            .ok_or_else(|| ManagementError::not_found(id))
    }

    /// The records of all databases `account` owns, ordered by id. Empty for an unknown account.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, Region, Registry};
    /// let registry = Registry::new();
    /// for id in ["b", "a"] {
    ///     registry.insert(Database::new(id, "x", "ann@example.com", Region::UsEast1, 0))?;
    /// }
    /// let ids: Vec<_> = registry.list("ann@example.com").into_iter().map(|d| d.database_id).collect();
    /// assert_eq!(ids, ["a", "b"]);
    /// assert!(registry.list("bob@example.com").is_empty());
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    #[must_use]
    pub fn list(&self, account: &str) -> Vec<Database> {
        let inner = self.inner.read();
        let Some(ids) = inner.by_owner.get(account) else {
            return Vec::new();
        };
        ids.iter()
            .filter_map(|id| inner.databases.get(id))
            .map(|entry| entry.record.clone())
            .collect()
    }

    /// Replaces the password of database `id` (owned by `account`) with a new one from the OS
    /// CSPRNG and rotates its REST tokens. Returns the updated record and, separately, the new
    /// password; from the moment this returns, only the new password verifies.
    ///
    /// # Errors
    /// - [`ManagementError::DatabaseNotFound`] if there is no such database or another account
    ///   owns it (the same error either way); nothing changes.
    /// - [`ManagementError::Randomness`] if the OS random number generator fails; nothing changes.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, Region, Registry};
    /// let registry = Registry::new();
    /// let (before, old) =
    ///     registry.insert(Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 0))?;
    /// let (after, new) = registry.reset_password("ann@example.com", "db-1")?;
    /// assert_ne!(old, new);
    /// assert_ne!(before.rest_token, after.rest_token);
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    pub fn reset_password(
        &self,
        account: &str,
        id: &str,
    ) -> Result<(Database, Password), ManagementError> {
        // Generated before the lookup: keeps the write lock short, and a missing id costs the
        // same work as a present one.
        let (secrets, password) = DatabaseSecrets::generate()?;
        Ok((self.reset_password_with(account, id, secrets)?, password))
    }

    /// [`reset_password`](Self::reset_password) with credentials made beforehand by
    /// [`DatabaseSecrets::generate`] (deterministic: the command-log form of the reset).
    ///
    /// # Errors
    /// [`ManagementError::DatabaseNotFound`] as for [`reset_password`](Self::reset_password).
    pub fn reset_password_with(
        &self,
        account: &str,
        id: &str,
        secrets: DatabaseSecrets,
    ) -> Result<Database, ManagementError> {
        let mut inner = self.inner.write();
        let entry = inner
            .visible_mut(account, id)
            .ok_or_else(|| ManagementError::not_found(id))?;
        entry.password = secrets.install(&mut entry.record);
        Ok(entry.record.clone())
    }

    /// A serializable image of every database and its password hash (no password in the
    /// clear), ordered by id.
    #[must_use]
    pub fn snapshot(&self) -> RegistrySnapshot {
        let inner = self.inner.read();
        let mut databases: Vec<StoredDatabase> = inner
            .databases
            .values()
            .map(|e| StoredDatabase {
                record: e.record.clone(),
                password_hash: e.password.clone(),
            })
            .collect();
        databases.sort_by(|a, b| a.record.database_id.cmp(&b.record.database_id));
        RegistrySnapshot { databases }
    }

    /// The registry of a [`snapshot`](Self::snapshot).
    ///
    /// # Errors
    /// [`ManagementError::InvalidField`] or [`ManagementError::DatabaseExists`] for a record
    /// [`insert`](Self::insert) would refuse.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, Region, Registry};
    /// let registry = Registry::new();
    /// let (_, password) =
    ///     registry.insert(Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 0))?;
    /// let json = serde_json::to_string(&registry.snapshot()).expect("plain data");
    /// let restored = Registry::restore(serde_json::from_str(&json).expect("our own output"))?;
    /// assert!(restored.verify_password("ann@example.com", "db-1", password.expose()));
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    pub fn restore(snapshot: RegistrySnapshot) -> Result<Self, ManagementError> {
        let registry = Self::new();
        {
            let mut inner = registry.inner.write();
            for StoredDatabase {
                record,
                password_hash,
            } in snapshot.databases
            {
                validate_record(&record)?;
                inner.add(record, password_hash)?;
            }
        }
        Ok(registry)
    }

    /// Whether `candidate` is the current password of database `id` owned by `account`.
    /// `false` for a missing or foreign database, after the same hash work as for a present one;
    /// the digest comparison is constant-time.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, Region, Registry};
    /// let registry = Registry::new();
    /// let (_, password) =
    ///     registry.insert(Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 0))?;
    /// assert!(registry.verify_password("ann@example.com", "db-1", password.expose()));
    /// assert!(!registry.verify_password("ann@example.com", "db-1", "guess"));
    /// assert!(!registry.verify_password("bob@example.com", "db-1", password.expose()));
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    #[must_use]
    pub fn verify_password(&self, account: &str, id: &str, candidate: &str) -> bool {
        let inner = self.inner.read();
        match inner.visible(account, id) {
            Some(entry) => entry.password.verify(candidate.as_bytes()),
            None => {
                let _ = SecretHash::decoy().verify(candidate.as_bytes());
                false
            }
        }
    }

    /// Number of databases of all accounts.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.read().databases.len()
    }

    /// Whether no database is registered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A serializable image of a [`Registry`]: records and password hashes, never a password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistrySnapshot {
    databases: Vec<StoredDatabase>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StoredDatabase {
    record: Database,
    password_hash: SecretHash,
}

/// The checks of [`Registry::insert`] on a record.
fn validate_record(record: &Database) -> Result<(), ManagementError> {
    validate_id(&record.database_id)?;
    if record.user_email.is_empty() {
        return Err(ManagementError::InvalidField {
            field: "user_email",
            value: String::new(),
            expected: "the owning account's email or team id, non-empty",
        });
    }
    Ok(())
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Registry")
            .field("databases", &inner.databases.len())
            .field("accounts", &inner.by_owner.len())
            .finish_non_exhaustive()
    }
}

fn validate_id(id: &str) -> Result<(), ManagementError> {
    const EXPECTED: &str = "a non-empty id of at most 256 bytes without control characters or '/'";
    if id.is_empty() || id.len() > MAX_ID_BYTES || id.chars().any(|c| c.is_control() || c == '/') {
        return Err(ManagementError::InvalidField {
            field: "database_id",
            value: ManagementError::quote(id),
            expected: EXPECTED,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::management::Region;
    use crate::management::RestToken;

    fn db(id: &str, owner: &str) -> Database {
        Database::new(id, "name", owner, Region::UsEast1, 0)
    }

    #[test]
    fn insert_rejects_bad_ids_and_duplicates() {
        let registry = Registry::new();
        for bad in ["", "a/b", "a\nb", &"x".repeat(MAX_ID_BYTES + 1)] {
            let err = registry.insert(db(bad, "ann")).unwrap_err();
            assert!(matches!(
                err,
                ManagementError::InvalidField {
                    field: "database_id",
                    ..
                }
            ));
        }
        registry.insert(db("a", "ann")).expect("first insert");
        let err = registry.insert(db("a", "bob")).unwrap_err();
        assert_eq!(err, ManagementError::DatabaseExists { id: "a".to_owned() });
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn insert_rejects_empty_owner() {
        let err = Registry::new().insert(db("a", "")).unwrap_err();
        assert!(matches!(
            err,
            ManagementError::InvalidField {
                field: "user_email",
                ..
            }
        ));
    }

    #[test]
    fn insert_replaces_caller_supplied_tokens() {
        let mut record = db("a", "ann");
        record.rest_token = Some(RestToken::new("chosen-by-caller"));
        let (stored, _) = Registry::new().insert(record).expect("insert");
        assert_ne!(stored.rest_token, Some(RestToken::new("chosen-by-caller")));
    }

    #[test]
    fn registry_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Registry>();
    }

    #[test]
    fn debug_shows_counts_only() {
        let registry = Registry::new();
        registry.insert(db("secret-id", "ann")).expect("insert");
        let debug = format!("{registry:?}");
        assert!(
            !debug.contains("secret-id") && !debug.contains("ann"),
            "{debug}"
        );
    }
}
