//! [`Database`]: the platform's Redis database record, field for field.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{
    DatabaseState, DatabaseType, ManagementError, Password, Plan, Region, ResourceSize,
    StorageEngine, StringBool, secret,
};

/// A REST token of a database (`rest_token`, `read_only_rest_token`): a bearer secret the record
/// must return in the clear, so it is stored as it is, but it stays out of `Debug` output.
///
/// # Examples
/// ```
/// use flowvec::management::RestToken;
/// let token = RestToken::new("AXW_secret");
/// assert_eq!(format!("{token:?}"), "RestToken(<redacted>)");
/// assert_eq!(token.expose(), "AXW_secret");
/// assert_eq!(serde_json::to_string(&token)?, r#""AXW_secret""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RestToken(String);

impl RestToken {
    /// Wraps a token.
    #[must_use]
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// A new token from the OS CSPRNG (256 bits of entropy, URL-safe base64 without padding).
    ///
    /// # Errors
    /// [`ManagementError::Randomness`] if the OS random number generator fails.
    pub fn generate() -> Result<Self, ManagementError> {
        secret::generate_token().map(Self)
    }

    /// The token in the clear.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for RestToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RestToken(<redacted>)")
    }
}

/// Security add-ons and whether each is enabled (wire field `securityAddons`, camelCase keys).
///
/// # Examples
/// ```
/// use flowvec::management::SecurityAddons;
/// let json = serde_json::to_string(&SecurityAddons { vpc_peering: true, ..Default::default() })?;
/// assert_eq!(json, r#"{"ipWhitelisting":false,"vpcPeering":true,"privateLink":false,"tlsMutualAuth":false,"encryptionAtRest":false}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityAddons {
    /// `ipWhitelisting`.
    pub ip_whitelisting: bool,
    /// `vpcPeering`.
    pub vpc_peering: bool,
    /// `privateLink`.
    pub private_link: bool,
    /// `tlsMutualAuth`.
    pub tls_mutual_auth: bool,
    /// `encryptionAtRest`.
    pub encryption_at_rest: bool,
}

/// The platform's Redis database record, with the reference's exact JSON names and types.
///
/// # Source
/// The record follows the reference's *Developer API* (`https://api.upstash.com/v2`), the object
/// returned by `GET /redis/database/{id}`, `GET /redis/databases`, `POST /redis/rename/{id}` and
/// `POST /redis/reset-password/{id}`:
/// - the `Database` schema of the reference's OpenAPI document
///   (`upstash/docs`, `devops/developer-api/openapi.yml`, `components.schemas.Database`): names,
///   `format: int64` integers, the enumerations and the string-booleans;
/// - plus the fields its endpoint pages (`devops/developer-api/redis/get_database.mdx`,
///   `reset_password.mdx`, `rename_database.mdx`) and the reference's own clients
///   (`upstash/terraform-provider-upstash` `upstash/redis/database/types.go`,
///   `upstash/mcp-server` `src/tools/redis/types.ts`) still document: `database_type`,
///   `user_email`, `rest_token`, `read_only_rest_token`, `db_daily_bandwidth_limit`,
///   `reserved_per_region_price`, `next_daily_backup_time`.
///
/// Left out: `password` (see below), and `cluster_id` / `pool_id` / `multizone`, which appear
/// only in single legacy examples and describe the reference's internal placement.
///
/// # Decisions
/// - **No `password` field** (DESIGN §3). The registry stores only a hash, so a record cannot
///   carry the password; [`Registry::reset_password`](super::Registry::reset_password) returns
///   the new [`Password`] beside the record. To answer the way the reference does (the record
///   *with* `"password"`), serialise [`Database::with_password`]. A `"password"` in input JSON is
///   ignored, so a record read from the reference never brings its password along.
/// - **Unknown input fields are ignored**, not rejected: the reference adds fields over time
///   (`cluster_id`, `pool_id` above), and a record from a newer reference must still load.
/// - **Required vs optional.** Every field in the reference's current full record is required
///   and always written. Optional (`Option`, omitted when `None`): `rest_token` and
///   `read_only_rest_token` (the reference drops them for `?credentials=hide`, see
///   [`Database::without_credentials`]), `all_members`, and the newer fields older responses lack
///   (`db_eviction`, `last_plan_upgrade_time`, `replicas`, `customer_id`,
///   `daily_backup_enabled`, `prod_pack_enabled`, `reserved_per_region_price`,
///   `next_daily_backup_time`).
/// - **Integer widths.** `int64` fields are `i64`; `port` is `u16` (a TCP port). Every integer
///   written fits the reference schema's `int64`. `db_request_limit` "unlimited" is
///   `i64::MAX`: the reference's own examples send `9223372036854775808` (2^63, one past
///   `i64::MAX`), which int64 clients fail to parse, so such input is read and kept as
///   `i64::MAX` (negative values are rejected).
/// - **Value sets.** `state`, `type`, `database_type`, `db_resource_size`, `db_type` are closed
///   enums (unknown strings are errors); regions are an open set ([`Region`]). The string-booleans
///   `db_acl_enabled`, `db_acl_default_user_status`, `prometheus_enabled` are [`StringBool`]:
///   `"true"`/`"false"` strings on the wire. `securityAddons` is camelCase, as the reference
///   spells it.
///
/// Field docs give the wire name where it differs from the Rust name.
///
/// `Debug` shows every field except the REST tokens' values ([`RestToken`] is redacted).
///
/// # Examples
/// ```
/// use flowvec::management::{Database, Region};
/// let db = Database::new("db-1", "cache", "ann@example.com", Region::EuWest1, 1_700_000_000);
/// let json = serde_json::to_value(&db)?;
/// assert_eq!(json["primary_region"], "eu-west-1");
/// assert_eq!(json["db_acl_enabled"], "false"); // a string, not a boolean
/// assert!(json.get("password").is_none());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Database {
    /// ID of the database.
    pub database_id: String,
    /// Name of the database.
    pub database_name: String,
    /// Type of the database in terms of pricing model.
    pub database_type: DatabaseType,
    /// Where the database is hosted (`global` for current databases).
    pub region: Region,
    /// Payment plan (wire name `type`).
    #[serde(rename = "type")]
    pub plan: Plan,
    /// Port for clients to connect.
    pub port: u16,
    /// Creation time, Unix seconds.
    pub creation_time: i64,
    /// Allocated monthly budget.
    pub budget: i64,
    /// Lifecycle state.
    pub state: DatabaseState,
    /// Email or team id of the owner; the [`Registry`](super::Registry) treats it as the owning
    /// account.
    pub user_email: String,
    /// Endpoint host name (or slug) of the database.
    pub endpoint: String,
    /// TLS enabled.
    pub tls: bool,
    /// Entry eviction enabled.
    pub eviction: bool,
    /// Automatic plan upgrade enabled.
    pub auto_upgrade: bool,
    /// Strong consistency mode enabled.
    pub consistent: bool,
    /// Current modifying state (`""` when none).
    pub modifying_state: String,
    /// Token for REST access; `None` when credentials are hidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest_token: Option<RestToken>,
    /// Read-only token for REST access; `None` when credentials are hidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_rest_token: Option<RestToken>,
    /// Primary region of the database cluster.
    pub primary_region: Region,
    /// Read regions.
    pub read_regions: Vec<Region>,
    /// Primary regions in the cluster.
    pub primary_members: Vec<Region>,
    /// All regions in the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_members: Option<Vec<Region>>,
    /// Max concurrent clients.
    pub db_max_clients: i64,
    /// Max request size, bytes.
    pub db_max_request_size: i64,
    /// Disk size limit, bytes.
    pub db_disk_threshold: i64,
    /// Max entry size, bytes.
    pub db_max_entry_size: i64,
    /// Memory limit, bytes.
    pub db_memory_threshold: i64,
    /// Max daily bandwidth, bytes.
    pub db_daily_bandwidth_limit: i64,
    /// Max commands per second.
    pub db_max_commands_per_second: i64,
    /// Total commands allowed, `i64::MAX` for "unlimited" (input above it, such as the
    /// reference's 2^63, is read as `i64::MAX`; negative input is an error).
    #[serde(deserialize_with = "saturating_request_limit")]
    pub db_request_limit: i64,
    /// Resource allocation tier.
    pub db_resource_size: ResourceSize,
    /// Storage engine.
    pub db_type: StorageEngine,
    /// Connection idle timeout, nanoseconds.
    pub db_conn_idle_timeout: i64,
    /// Lua script timeout, nanoseconds.
    pub db_lua_timeout: i64,
    /// Lua script credits per minute.
    pub db_lua_credits_per_min: i64,
    /// Store connection idle timeout, nanoseconds.
    pub db_store_max_idle: i64,
    /// Max load operations per second.
    pub db_max_loads_per_sec: i64,
    /// ACL enabled (`"true"`/`"false"` on the wire).
    pub db_acl_enabled: StringBool,
    /// Default ACL user status (`"true"`/`"false"` on the wire).
    pub db_acl_default_user_status: StringBool,
    /// Prometheus integration enabled (`"true"`/`"false"` on the wire).
    pub prometheus_enabled: StringBool,
    /// Security add-ons (wire name `securityAddons`).
    #[serde(rename = "securityAddons")]
    pub security_addons: SecurityAddons,
    /// Database-level eviction policy status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_eviction: Option<bool>,
    /// Last plan upgrade, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_plan_upgrade_time: Option<i64>,
    /// Replica factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// Owner identifier (email, or marketplace-scoped email).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_id: Option<String>,
    /// Daily backup enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_backup_enabled: Option<bool>,
    /// Production pack enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prod_pack_enabled: Option<bool>,
    /// Reserved price per region (enterprise plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_per_region_price: Option<i64>,
    /// Next scheduled daily backup, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_daily_backup_time: Option<i64>,
}

impl Database {
    /// A new active pay-as-you-go global database with the limits of the reference's documented
    /// example record (10 000 clients, 10 MiB requests, 100 GiB disk, 3 GiB memory, size `L`,
    /// engine `pebble`, ACL off, no add-ons, unlimited requests).
    ///
    /// `endpoint` is left empty and the REST tokens `None`: set the endpoint to what the host
    /// serves, and [`Registry::insert`](super::Registry::insert) assigns tokens and a password.
    /// `creation_time` is Unix seconds, passed in (nothing here reads a clock).
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, DatabaseState, Region};
    /// let db = Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 1_700_000_000);
    /// assert_eq!(db.state, DatabaseState::Active);
    /// assert_eq!(db.primary_members, vec![Region::UsEast1]);
    /// ```
    #[must_use]
    pub fn new(
        database_id: impl Into<String>,
        database_name: impl Into<String>,
        owner_email: impl Into<String>,
        primary_region: Region,
        creation_time: i64,
    ) -> Self {
        let owner_email: String = owner_email.into();
        Self {
            database_id: database_id.into(),
            database_name: database_name.into(),
            database_type: DatabaseType::PayAsYouGo,
            region: Region::Global,
            plan: Plan::Payg,
            port: 6379,
            creation_time,
            budget: 0,
            state: DatabaseState::Active,
            user_email: owner_email.clone(),
            endpoint: String::new(),
            tls: true,
            eviction: false,
            auto_upgrade: false,
            consistent: false,
            modifying_state: String::new(),
            rest_token: None,
            read_only_rest_token: None,
            primary_members: vec![primary_region.clone()],
            all_members: Some(vec![primary_region.clone()]),
            primary_region,
            read_regions: Vec::new(),
            db_max_clients: 10_000,
            db_max_request_size: 10_485_760,
            db_disk_threshold: 107_374_182_400,
            db_max_entry_size: 104_857_600,
            db_memory_threshold: 3_221_225_472,
            db_daily_bandwidth_limit: 53_687_091_200,
            db_max_commands_per_second: 10_000,
            db_request_limit: i64::MAX,
            db_resource_size: ResourceSize::L,
            db_type: StorageEngine::Pebble,
            db_conn_idle_timeout: 21_600_000_000_000,
            db_lua_timeout: 250_000_000,
            db_lua_credits_per_min: 10_000_000_000,
            db_store_max_idle: 900_000_000_000,
            db_max_loads_per_sec: 1_000_000,
            db_acl_enabled: StringBool::FALSE,
            db_acl_default_user_status: StringBool::TRUE,
            prometheus_enabled: StringBool::FALSE,
            security_addons: SecurityAddons::default(),
            db_eviction: Some(false),
            last_plan_upgrade_time: Some(0),
            replicas: Some(1),
            customer_id: Some(owner_email),
            daily_backup_enabled: Some(false),
            prod_pack_enabled: Some(false),
            reserved_per_region_price: Some(0),
            next_daily_backup_time: None,
        }
    }

    /// A copy without the REST tokens, as the reference answers `?credentials=hide`.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, Region, RestToken};
    /// let mut db = Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 0);
    /// db.rest_token = Some(RestToken::new("secret"));
    /// let json = serde_json::to_value(db.without_credentials())?;
    /// assert!(json.get("rest_token").is_none());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn without_credentials(&self) -> Self {
        Self {
            rest_token: None,
            read_only_rest_token: None,
            ..self.clone()
        }
    }

    /// A view that serialises as this record plus `"password"`, the shape in which the
    /// reference answers `POST /redis/reset-password/{id}`. The caller decides to expose the
    /// password by calling this; the record alone never carries it.
    ///
    /// # Examples
    /// ```
    /// use flowvec::management::{Database, Password, Region};
    /// let db = Database::new("db-1", "cache", "ann@example.com", Region::UsEast1, 0);
    /// let password = Password::generate()?;
    /// let json = serde_json::to_value(db.with_password(&password)).expect("serialises");
    /// assert_eq!(json["password"], password.expose());
    /// assert_eq!(json["database_id"], "db-1");
    /// # Ok::<(), flowvec::management::ManagementError>(())
    /// ```
    #[must_use]
    pub fn with_password<'a>(&'a self, password: &'a Password) -> DatabaseWithPassword<'a> {
        DatabaseWithPassword {
            database: self,
            password: password.expose(),
        }
    }
}

/// A [`Database`] record plus its password, for serialising a reset-password answer in the
/// reference's shape. Made by [`Database::with_password`]. `Debug` redacts the password.
#[derive(Clone, Copy, Serialize)]
pub struct DatabaseWithPassword<'a> {
    #[serde(flatten)]
    database: &'a Database,
    password: &'a str,
}

impl DatabaseWithPassword<'_> {
    /// The record.
    #[must_use]
    pub fn database(&self) -> &Database {
        self.database
    }
}

impl fmt::Debug for DatabaseWithPassword<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseWithPassword")
            .field("database", self.database)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// `db_request_limit` from a non-negative integer, saturating at `i64::MAX`.
fn saturating_request_limit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    struct Limit;
    impl serde::de::Visitor<'_> for Limit {
        type Value = i64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a non-negative integer")
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<i64, E> {
            if v < 0 {
                return Err(E::invalid_value(serde::de::Unexpected::Signed(v), &self));
            }
            Ok(v)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<i64, E> {
            Ok(i64::try_from(v).unwrap_or(i64::MAX))
        }
    }
    d.deserialize_i64(Limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_record_round_trips_through_json() {
        let db = Database::new("id", "name", "a@b.c", Region::EuWest1, 5);
        let json = serde_json::to_string(&db).expect("serialises");
        let back: Database = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back, db);
    }

    #[test]
    fn debug_hides_rest_tokens() {
        let mut db = Database::new("id", "name", "a@b.c", Region::EuWest1, 5);
        db.rest_token = Some(RestToken::new("tok-rw-123"));
        db.read_only_rest_token = Some(RestToken::new("tok-ro-456"));
        let debug = format!("{db:?}");
        assert!(
            !debug.contains("tok-rw-123") && !debug.contains("tok-ro-456"),
            "{debug}"
        );
        assert!(debug.contains("RestToken(<redacted>)"));
    }

    #[test]
    fn with_password_debug_hides_the_password() {
        let db = Database::new("id", "name", "a@b.c", Region::EuWest1, 5);
        let password = Password::generate().expect("OS RNG");
        let debug = format!("{:?}", db.with_password(&password));
        assert!(!debug.contains(password.expose()));
    }
}
