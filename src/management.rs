//! Management: the platform's database record and its password reset (DESIGN §3).
//!
//! - [`Database`]: the reference's Redis database record, every field with its exact JSON name
//!   and type ([`Region`] is an open value set; [`DatabaseState`], [`Plan`], [`DatabaseType`],
//!   [`ResourceSize`], [`StorageEngine`] are closed; [`StringBool`] keeps the reference's
//!   `"true"`/`"false"` strings). The record has no `password` field.
//! - [`Registry`]: databases owned by accounts, with
//!   [`reset_password`](Registry::reset_password) returning the record and, separately, a new
//!   [`Password`] from the OS CSPRNG. Only salted hashes are stored, verification is
//!   constant-time, and another account's database answers exactly like a missing one.
//! - [`BasicCredentials`] and [`Accounts`]: the management API's
//!   `Authorization: Basic base64(email:api_key)`, parsed with typed errors and checked against
//!   hashed API keys, an unknown email answering like a wrong key.
//!
//! Nothing here reads a clock or does I/O; randomness comes from the OS CSPRNG (`getrandom`).
//! [`Registry`] and [`Accounts`] lock internally (`&self` methods), so a host shares them in an
//! `Arc`.
//!
//! # Examples
//! A host's `POST /v2/redis/reset-password/{id}`:
//! ```
//! use flowvec::management::{Accounts, ApiKey, BasicCredentials, Database, Region, Registry};
//!
//! let accounts = Accounts::new();
//! let key = accounts.create("ann@example.com")?;
//! let registry = Registry::new();
//! registry.insert(Database::new("db-1", "cache", "ann@example.com", Region::EuWest1, 0))?;
//!
//! let header = BasicCredentials::new("ann@example.com", key).to_header_value();
//! let account = accounts.authenticate_header(&header)?; // 401 on error
//! let (record, password) = registry.reset_password(&account, "db-1")?; // 404 on error
//! let body = serde_json::to_string(&record.with_password(&password)).expect("serialisable");
//! assert!(body.contains(password.expose()));
//! # Ok::<(), flowvec::management::ManagementError>(())
//! ```

mod accounts;
mod credentials;
mod database;
mod error;
mod issued;
mod password;
mod region;
mod registry;
mod secret;
mod string_bool;
mod value_sets;

pub use accounts::{Accounts, AccountsSnapshot};
pub use credentials::{ApiKey, BasicCredentials, MAX_AUTHORIZATION_LEN};
pub use database::{Database, DatabaseWithPassword, RestToken, SecurityAddons};
pub use error::ManagementError;
pub use issued::{ApiKeyHash, DatabaseSecrets};
pub use password::Password;
pub use region::Region;
pub use registry::{Registry, RegistrySnapshot};
pub use string_bool::StringBool;
pub use value_sets::{DatabaseState, DatabaseType, Plan, ResourceSize, StorageEngine};
