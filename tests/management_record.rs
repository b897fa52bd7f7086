//! The `Database` record against the reference's JSON: exact field names, string-booleans that
//! stay strings, camelCase `securityAddons`, closed enums that reject unknown values, the open
//! region set, and the password kept out of the record.

use flowvec::management::{
    Database, DatabaseState, DatabaseType, Password, Plan, Region, ResourceSize, SecurityAddons,
    StorageEngine, StringBool,
};
use serde_json::{Value, json};

/// A full record as the reference's Developer API returns it for `GET /v2/redis/database/{id}`:
/// the example values of its OpenAPI `Database` schema, plus the fields its endpoint pages
/// document (`database_type`, `password`, `user_email`, REST tokens,
/// `db_daily_bandwidth_limit`, `reserved_per_region_price`, `next_daily_backup_time`) and one
/// legacy field we do not model (`cluster_id`).
fn reference_record() -> Value {
    serde_json::from_str(
        r#"{
        "database_id": "96ad0856-03b1-4ee7-9666-e81abd0349e1",
        "cluster_id": "dea1f974",
        "database_name": "MyRedis",
        "database_type": "Pay as You Go",
        "region": "global",
        "type": "paid",
        "port": 6379,
        "creation_time": 1752649602,
        "budget": 360,
        "state": "active",
        "password": "038a8e27c45e43068d5f186085399884",
        "user_email": "example@upstash.com",
        "endpoint": "beloved-stallion-58500.upstash.io",
        "tls": true,
        "eviction": false,
        "auto_upgrade": false,
        "consistent": false,
        "modifying_state": "",
        "rest_token": "AXW_ASQgOTZhZDA4NTYtMDNiMS00ZWU3LTk2NjYtZTgxYWJkMDM0OWUx",
        "read_only_rest_token": "AnW_ASQgOTZhZDA4NTYtMDNiMS00ZWU3LTk2NjYtZTgxYWJkMDM0OWUx",
        "primary_region": "us-east-1",
        "read_regions": ["us-east-2"],
        "primary_members": ["us-east-1"],
        "all_members": ["us-east-1", "us-east-2"],
        "db_max_clients": 10000,
        "db_max_request_size": 10485760,
        "db_disk_threshold": 107374182400,
        "db_max_entry_size": 104857600,
        "db_memory_threshold": 3221225472,
        "db_daily_bandwidth_limit": 53687091200,
        "db_max_commands_per_second": 10000,
        "db_request_limit": 9223372036854775808,
        "db_resource_size": "L",
        "db_type": "pebble",
        "db_conn_idle_timeout": 21600000000000,
        "db_lua_timeout": 250000000,
        "db_lua_credits_per_min": 10000000000,
        "db_store_max_idle": 900000000000,
        "db_max_loads_per_sec": 1000000,
        "db_acl_enabled": "false",
        "db_acl_default_user_status": "true",
        "db_eviction": false,
        "last_plan_upgrade_time": 0,
        "replicas": 5,
        "customer_id": "example@upstash.com",
        "daily_backup_enabled": false,
        "securityAddons": {
            "ipWhitelisting": false,
            "vpcPeering": false,
            "privateLink": false,
            "tlsMutualAuth": false,
            "encryptionAtRest": true
        },
        "prometheus_enabled": "false",
        "prod_pack_enabled": false,
        "reserved_per_region_price": 0,
        "next_daily_backup_time": 1741120356
    }"#,
    )
    .expect("valid JSON")
}

/// The reference record minus what our record deliberately does not carry.
fn expected_output() -> Value {
    let mut value = reference_record();
    let object = value.as_object_mut().expect("object");
    object.remove("password");
    object.remove("cluster_id");
    // The reference's 2^63 does not fit int64: it is kept as "unlimited", i64::MAX.
    object.insert("db_request_limit".into(), json!(i64::MAX));
    value
}

fn parse(value: Value) -> Result<Database, serde_json::Error> {
    serde_json::from_value(value)
}

#[test]
fn reference_record_parses_into_typed_fields() {
    let db = parse(reference_record()).expect("reference record parses");
    assert_eq!(db.database_id, "96ad0856-03b1-4ee7-9666-e81abd0349e1");
    assert_eq!(db.database_type, DatabaseType::PayAsYouGo);
    assert_eq!(db.region, Region::Global);
    assert_eq!(db.plan, Plan::Paid);
    assert_eq!(db.state, DatabaseState::Active);
    assert_eq!(db.primary_region, Region::UsEast1);
    assert_eq!(db.read_regions, [Region::UsEast2]);
    assert_eq!(db.all_members, Some(vec![Region::UsEast1, Region::UsEast2]));
    assert_eq!(db.db_resource_size, ResourceSize::L);
    assert_eq!(db.db_type, StorageEngine::Pebble);
    assert_eq!(db.db_request_limit, i64::MAX);
    assert_eq!(db.db_disk_threshold, 107_374_182_400);
    assert_eq!(db.db_acl_enabled, StringBool::FALSE);
    assert_eq!(db.db_acl_default_user_status, StringBool::TRUE);
    assert_eq!(db.prometheus_enabled, StringBool::FALSE);
    assert_eq!(
        db.security_addons,
        SecurityAddons {
            encryption_at_rest: true,
            ..SecurityAddons::default()
        }
    );
    assert_eq!(
        db.rest_token.as_ref().map(|t| t.expose()),
        Some("AXW_ASQgOTZhZDA4NTYtMDNiMS00ZWU3LTk2NjYtZTgxYWJkMDM0OWUx")
    );
    assert_eq!(db.replicas, Some(5));
}

#[test]
fn round_trip_keeps_every_field_name_and_value_except_the_password() {
    let db = parse(reference_record()).expect("parses");
    let out = serde_json::to_value(&db).expect("serialises");
    assert_eq!(out, expected_output());

    // And the exact set of names, spelled out, so a rename anywhere shows up here.
    let mut names: Vec<&str> = out
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    let mut expected = vec![
        "database_id",
        "database_name",
        "database_type",
        "region",
        "type",
        "port",
        "creation_time",
        "budget",
        "state",
        "user_email",
        "endpoint",
        "tls",
        "eviction",
        "auto_upgrade",
        "consistent",
        "modifying_state",
        "rest_token",
        "read_only_rest_token",
        "primary_region",
        "read_regions",
        "primary_members",
        "all_members",
        "db_max_clients",
        "db_max_request_size",
        "db_disk_threshold",
        "db_max_entry_size",
        "db_memory_threshold",
        "db_daily_bandwidth_limit",
        "db_max_commands_per_second",
        "db_request_limit",
        "db_resource_size",
        "db_type",
        "db_conn_idle_timeout",
        "db_lua_timeout",
        "db_lua_credits_per_min",
        "db_store_max_idle",
        "db_max_loads_per_sec",
        "db_acl_enabled",
        "db_acl_default_user_status",
        "db_eviction",
        "last_plan_upgrade_time",
        "replicas",
        "customer_id",
        "daily_backup_enabled",
        "securityAddons",
        "prometheus_enabled",
        "prod_pack_enabled",
        "reserved_per_region_price",
        "next_daily_backup_time",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected);
}

#[test]
fn string_booleans_stay_strings_on_the_wire() {
    let mut db = parse(reference_record()).expect("parses");
    db.db_acl_enabled = true.into();
    db.prometheus_enabled = StringBool(true);
    let out = serde_json::to_value(&db).expect("serialises");
    assert_eq!(out["db_acl_enabled"], Value::String("true".into()));
    assert_eq!(
        out["db_acl_default_user_status"],
        Value::String("true".into())
    );
    assert_eq!(out["prometheus_enabled"], Value::String("true".into()));
    assert_eq!(out["tls"], Value::Bool(true), "real booleans stay booleans");
}

#[test]
fn string_boolean_fields_reject_json_booleans_and_other_strings() {
    for field in [
        "db_acl_enabled",
        "db_acl_default_user_status",
        "prometheus_enabled",
    ] {
        for bad in [json!(true), json!("TRUE"), json!("1"), json!(0)] {
            let mut value = reference_record();
            value[field] = bad.clone();
            let err = parse(value).unwrap_err().to_string();
            assert!(
                err.contains(r#"the string "true" or "false""#),
                "{field}={bad}: {err}"
            );
        }
    }
}

#[test]
fn security_addons_is_camel_case_inside_and_out() {
    let out = serde_json::to_value(parse(reference_record()).expect("parses")).expect("ser");
    assert!(out.get("security_addons").is_none());
    let addons = out["securityAddons"].as_object().expect("object");
    let mut keys: Vec<&str> = addons.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "encryptionAtRest",
            "ipWhitelisting",
            "privateLink",
            "tlsMutualAuth",
            "vpcPeering"
        ]
    );
}

#[test]
fn closed_value_sets_reject_unknown_values_naming_value_and_choices() {
    let cases = [
        (
            "state",
            "frozen",
            "`active`, `suspended`, `passive`, `deleted`",
        ),
        ("type", "enterprise", "`free`, `payg`, `pro`, `paid`"),
        (
            "database_type",
            "pay as you go",
            "`Free`, `Pay as You Go`, `Enterprise`",
        ),
        (
            "db_resource_size",
            "XXXL",
            "`S`, `M`, `L`, `XL`, `XXL`, `3XL`",
        ),
        ("db_type", "rocksdb", "`bolt`, `badger`, `pebble`"),
    ];
    for (field, bad, choices) in cases {
        let mut value = reference_record();
        value[field] = json!(bad);
        let err = parse(value).unwrap_err().to_string();
        assert!(
            err.contains(&format!("unknown variant `{bad}`")),
            "{field}: {err}"
        );
        assert!(err.contains(choices), "{field}: {err}");
    }
}

#[test]
fn from_str_errors_name_the_field_too() {
    let err = "frozen".parse::<DatabaseState>().unwrap_err().to_string();
    assert_eq!(
        err,
        r#"unknown state: "frozen", expected one of "active", "suspended", "passive", "deleted""#
    );
}

#[test]
fn regions_are_an_open_set() {
    let mut value = reference_record();
    value["primary_region"] = json!("me-central-1");
    value["read_regions"] = json!(["us-east-2", "me-central-1"]);
    let db = parse(value).expect("unknown regions load");
    assert_eq!(db.primary_region, Region::Other("me-central-1".into()));
    assert_eq!(
        db.read_regions,
        [Region::UsEast2, Region::Other("me-central-1".into())]
    );
    let out = serde_json::to_value(&db).expect("ser");
    assert_eq!(out["primary_region"], "me-central-1");
    assert_eq!(out["read_regions"], json!(["us-east-2", "me-central-1"]));
}

#[test]
fn legacy_regional_record_keeps_its_aws_region() {
    let mut value = reference_record();
    value["region"] = json!("eu-central-1");
    assert_eq!(parse(value).expect("parses").region, Region::EuCentral1);
}

#[test]
fn missing_required_field_is_named() {
    let mut value = reference_record();
    value.as_object_mut().expect("object").remove("db_type");
    let err = parse(value).unwrap_err().to_string();
    assert!(err.contains("missing field `db_type`"), "{err}");
}

#[test]
fn optional_fields_may_be_absent_and_are_then_omitted() {
    let mut value = reference_record();
    let object = value.as_object_mut().expect("object");
    for field in [
        "rest_token",
        "read_only_rest_token",
        "all_members",
        "db_eviction",
        "last_plan_upgrade_time",
        "replicas",
        "customer_id",
        "daily_backup_enabled",
        "prod_pack_enabled",
        "reserved_per_region_price",
        "next_daily_backup_time",
    ] {
        object.remove(field);
    }
    let trimmed = value.clone();
    let db = parse(value).expect("parses without optional fields");
    assert_eq!(db.rest_token, None);
    let mut expected = trimmed;
    let object = expected.as_object_mut().expect("object");
    object.remove("password");
    object.remove("cluster_id");
    object.insert("db_request_limit".into(), json!(i64::MAX));
    assert_eq!(serde_json::to_value(&db).expect("ser"), expected);
}

#[test]
fn out_of_range_numbers_are_rejected() {
    for (field, bad) in [
        ("port", json!(70000)),
        ("db_max_clients", json!(1.5)),
        ("db_request_limit", json!(-1)),
    ] {
        let mut value = reference_record();
        value[field] = bad;
        assert!(parse(value).is_err(), "{field}");
    }
}

#[test]
fn with_password_answers_in_the_references_reset_password_shape() {
    let db = parse(reference_record()).expect("parses");
    let password = Password::generate().expect("OS RNG");
    let out = serde_json::to_value(db.with_password(&password)).expect("ser");
    let mut expected = expected_output();
    expected["password"] = json!(password.expose());
    assert_eq!(out, expected);
}

#[test]
fn without_credentials_drops_only_the_rest_tokens() {
    let db = parse(reference_record()).expect("parses");
    let out = serde_json::to_value(db.without_credentials()).expect("ser");
    let mut expected = expected_output();
    let object = expected.as_object_mut().expect("object");
    object.remove("rest_token");
    object.remove("read_only_rest_token");
    assert_eq!(out, expected);
}

/// The password-reset answer for a database made by `Database::new` (the server's seeded
/// `demo-db`) carries every field of the reference record (less `cluster_id`, not modelled, and
/// `next_daily_backup_time`, which has no value while daily backups are off), each with the
/// reference's JSON type, and every integer fits the schema's int64.
#[test]
fn seeded_records_reset_answer_has_every_reference_field_and_int64_integers() {
    use flowvec::management::Registry;
    let registry = Registry::new();
    let record = Database::new(
        "demo-db",
        "demo",
        "ann@example.com",
        Region::UsEast1,
        1_700_000_000,
    );
    registry.insert(record).expect("insert");
    let (db, password) = registry
        .reset_password("ann@example.com", "demo-db")
        .expect("reset");
    let out = serde_json::to_value(db.with_password(&password)).expect("serialises");
    let out = out.as_object().expect("object");

    let reference = reference_record();
    let mut want: Vec<&String> = reference
        .as_object()
        .expect("object")
        .keys()
        .filter(|k| !["cluster_id", "next_daily_backup_time"].contains(&k.as_str()))
        .collect();
    want.sort_unstable();
    let mut got: Vec<&String> = out.keys().collect();
    got.sort_unstable();
    assert_eq!(got, want);

    fn kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    for (name, value) in out {
        assert_eq!(kind(value), kind(&reference[name]), "{name}: {value}");
        if let Value::Number(n) = value {
            assert!(n.is_i64(), "{name} = {n} does not fit int64");
        }
    }
    assert_eq!(out["db_request_limit"], json!(i64::MAX));
    assert_eq!(out["customer_id"], "ann@example.com");
}
