//! Password reset through the wire: `POST /v2/redis/reset-password/{id}` with Basic
//! credentials.

#[path = "wire_common/mod.rs"]
mod wire_common;

use flowvec::wire::Method;
use serde_json::Value;
use wire_common::{ANN, Cred, Harness, assert_error, t0};

fn reset(h: &Harness, path: &str, cred: Cred) -> (u16, Value) {
    let res = h.send(Method::Post, path, cred, "", t0());
    (res.status, res.body_json())
}

#[test]
fn reset_answers_the_record_with_a_new_password_that_alone_verifies() {
    let h = Harness::new();
    let registry = h.service.registry();
    let old = h.passwords[0].1.expose().to_owned();
    assert!(registry.verify_password(ANN, "db-ann", &old));

    let (status, record) = reset(&h, "/v2/redis/reset-password/db-ann", Cred::Ann);
    assert_eq!(status, 200, "{record}");
    assert_eq!(record["database_id"], "db-ann");
    assert_eq!(record["user_email"], ANN);
    let first = record["password"]
        .as_str()
        .expect("password in the answer")
        .to_owned();
    assert!(first.len() >= 22, "at least 128 bits");
    assert!(registry.verify_password(ANN, "db-ann", &first));
    assert!(
        !registry.verify_password(ANN, "db-ann", &old),
        "old password rejected at once"
    );

    let (status, record) = reset(&h, "/v2/redis/reset-password/db-ann", Cred::Ann);
    assert_eq!(status, 200);
    let second = record["password"].as_str().expect("password").to_owned();
    assert_ne!(first, second, "two resets give different passwords");
    assert!(registry.verify_password(ANN, "db-ann", &second));
    assert!(!registry.verify_password(ANN, "db-ann", &first));
}

#[test]
fn another_accounts_database_answers_like_a_missing_one() {
    let h = Harness::new();
    let (s_foreign, foreign) = reset(&h, "/v2/redis/reset-password/db-bob", Cred::Ann);
    let (s_missing, missing) = reset(&h, "/v2/redis/reset-password/db-404", Cred::Ann);
    assert_eq!((s_foreign, s_missing), (404, 404));
    let strip = |v: &Value, id: &str| v["error"].as_str().unwrap_or_default().replace(id, "ID");
    assert_eq!(strip(&foreign, "db-bob"), strip(&missing, "db-404"));
    // Bob's password is untouched.
    let bob_pw = h.passwords[1].1.expose().to_owned();
    assert!(
        h.service
            .registry()
            .verify_password("bob@example.com", "db-bob", &bob_pw)
    );
    // Bob can reset his own.
    assert_eq!(
        reset(&h, "/v2/redis/reset-password/db-bob", Cred::Bob).0,
        200
    );
}

#[test]
fn credentials_and_method_are_checked() {
    let h = Harness::new();
    let path = "/v2/redis/reset-password/db-ann";
    let old = h.passwords[0].1.expose().to_owned();
    for cred in [
        Cred::None,
        Cred::AnnWrongKey,
        Cred::Vector,
        Cred::Queue,
        Cred::Wrong,
    ] {
        let res = h.send(Method::Post, path, cred, "", t0());
        assert_error(&res, 401, &format!("{cred:?}"));
        assert!(
            res.header("www-authenticate")
                .is_some_and(|v| v.starts_with("Basic"))
        );
    }
    let res = h.send(Method::Get, path, Cred::Ann, "", t0());
    assert_error(&res, 405, "GET");
    assert!(
        h.service.registry().verify_password(ANN, "db-ann", &old),
        "no refused call reset the password"
    );
    // Percent-decoded id.
    let (s, _) = reset(&h, "/v2/redis/reset-password/db%2Dann", Cred::Ann);
    assert_eq!(s, 200);
}
