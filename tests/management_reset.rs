//! Password reset (DESIGN §3): new password verifies, old does not, other accounts see a missing
//! database, passwords are distinct and well-formed, and the registry matches a simple model
//! under random operation sequences.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use flowvec::management::{Database, ManagementError, Password, Region, Registry};
use proptest::prelude::*;

const ANN: &str = "ann@example.com";
const BOB: &str = "bob@example.com";

fn registry_with(dbs: &[(&str, &str)]) -> (Registry, Vec<Password>) {
    let registry = Registry::new();
    let passwords = dbs
        .iter()
        .map(|(id, owner)| {
            let record = Database::new(*id, "cache", *owner, Region::EuWest1, 1_700_000_000);
            registry.insert(record).expect("insert").1
        })
        .collect();
    (registry, passwords)
}

#[test]
fn new_password_verifies_and_old_one_stops_at_once() {
    let (registry, initial) = registry_with(&[("db-1", ANN)]);
    assert!(registry.verify_password(ANN, "db-1", initial[0].expose()));

    let (record, new) = registry.reset_password(ANN, "db-1").expect("reset");
    assert_eq!(record.database_id, "db-1");
    assert_eq!(record.user_email, ANN);
    assert!(registry.verify_password(ANN, "db-1", new.expose()));
    assert!(!registry.verify_password(ANN, "db-1", initial[0].expose()));
}

#[test]
fn reset_returns_the_stored_record_without_a_password_and_rotates_rest_tokens() {
    let (registry, _) = registry_with(&[("db-1", ANN)]);
    let before = registry.get(ANN, "db-1").expect("get");
    let (after, password) = registry.reset_password(ANN, "db-1").expect("reset");

    assert_eq!(registry.get(ANN, "db-1").expect("get"), after);
    assert_ne!(before.rest_token, after.rest_token);
    assert_ne!(before.read_only_rest_token, after.read_only_rest_token);
    assert!(after.rest_token.is_some() && after.read_only_rest_token.is_some());
    // Everything but the tokens is unchanged.
    assert_eq!(before.without_credentials(), after.without_credentials());

    let json = serde_json::to_string(&after).expect("serialises");
    assert!(!json.contains("\"password\""), "{json}");
    assert!(!json.contains(password.expose()));
}

#[test]
fn another_accounts_database_answers_exactly_like_a_missing_one() {
    let (registry, passwords) = registry_with(&[("db-ann", ANN), ("db-bob", BOB)]);

    // Same id probed by an outsider: present-but-foreign vs. absent.
    let foreign = registry.reset_password(BOB, "db-ann").unwrap_err();
    let missing = registry.reset_password(BOB, "db-none").unwrap_err();
    assert_eq!(
        foreign,
        ManagementError::DatabaseNotFound {
            id: "db-ann".to_owned()
        }
    );
    assert_eq!(
        missing,
        ManagementError::DatabaseNotFound {
            id: "db-none".to_owned()
        }
    );
    assert_eq!(
        foreign.to_string().replace("db-ann", "ID"),
        missing.to_string().replace("db-none", "ID"),
    );
    let foreign_get = registry.get(BOB, "db-ann").unwrap_err();
    assert_eq!(foreign_get, foreign);

    // The failed attempt changed nothing for the owner.
    assert!(registry.verify_password(ANN, "db-ann", passwords[0].expose()));
    // The right password under the wrong account does not verify either.
    assert!(!registry.verify_password(BOB, "db-ann", passwords[0].expose()));
    // And listing shows each account only its own.
    let ids = |account| -> Vec<String> {
        registry
            .list(account)
            .into_iter()
            .map(|d| d.database_id)
            .collect()
    };
    assert_eq!(ids(ANN), ["db-ann"]);
    assert_eq!(ids(BOB), ["db-bob"]);
}

#[test]
fn two_resets_give_different_passwords_and_only_the_last_verifies() {
    let (registry, initial) = registry_with(&[("db-1", ANN)]);
    let (_, first) = registry.reset_password(ANN, "db-1").expect("reset");
    let (_, second) = registry.reset_password(ANN, "db-1").expect("reset");
    assert_ne!(first, second);
    assert_ne!(first, initial[0]);
    assert!(registry.verify_password(ANN, "db-1", second.expose()));
    assert!(!registry.verify_password(ANN, "db-1", first.expose()));
    assert!(!registry.verify_password(ANN, "db-1", initial[0].expose()));
}

#[test]
fn near_misses_of_the_password_do_not_verify() {
    let (registry, _) = registry_with(&[("db-1", ANN)]);
    let (_, password) = registry.reset_password(ANN, "db-1").expect("reset");
    let p = password.expose();
    let mut flipped = p.as_bytes().to_vec();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).expect("ASCII");
    for candidate in [
        &p[..p.len() - 1],
        &format!("{p}x"),
        &flipped,
        "",
        &p.to_uppercase(),
    ] {
        if candidate != p {
            assert!(
                !registry.verify_password(ANN, "db-1", candidate),
                "{candidate}"
            );
        }
    }
}

#[test]
fn generated_passwords_have_256_bits_of_entropy_in_a_url_safe_alphabet() {
    const N: usize = 2000;
    let passwords: Vec<Password> = (0..N)
        .map(|_| Password::generate().expect("OS RNG"))
        .collect();

    let distinct: HashSet<&str> = passwords.iter().map(Password::expose).collect();
    assert_eq!(distinct.len(), N, "duplicates among {N} passwords");

    let mut ones = [0usize; 256];
    for password in &passwords {
        let text = password.expose();
        assert_eq!(text.len(), Password::LEN);
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{text}"
        );
        let bytes = URL_SAFE_NO_PAD
            .decode(text)
            .expect("URL-safe base64 without padding");
        assert_eq!(bytes.len(), 32, "32 random bytes = 256 bits");
        for (bit, count) in ones.iter_mut().enumerate() {
            *count += usize::from(bytes[bit / 8] >> (bit % 8) & 1 == 1);
        }
    }
    // Every one of the 256 bit positions is set about half the time: binomial(2000, 1/2) has
    // standard deviation ~22.4, so ±150 (6.7σ) fails by chance with probability < 1e-9.
    for (bit, &count) in ones.iter().enumerate() {
        assert!(
            count.abs_diff(N / 2) < 150,
            "bit {bit} set {count} times of {N}"
        );
    }
}

#[test]
fn a_reset_is_atomic_for_concurrent_verifiers() {
    let (registry, initial) = registry_with(&[("db-1", ANN)]);
    let registry = Arc::new(registry);
    let old = initial[0].expose().to_owned();
    let reset_done = Arc::new(AtomicBool::new(false));

    let verifiers: Vec<_> = (0..2)
        .map(|_| {
            let registry = Arc::clone(&registry);
            let old = old.clone();
            let reset_done = Arc::clone(&reset_done);
            std::thread::spawn(move || {
                let mut seen_after_reset = 0;
                while seen_after_reset < 200 {
                    // Read the flag *before* verifying: if the reset had returned by then, the
                    // old password must already fail.
                    let done = reset_done.load(Ordering::SeqCst);
                    let ok = registry.verify_password(ANN, "db-1", &old);
                    if done {
                        assert!(!ok, "old password verified after the reset returned");
                        seen_after_reset += 1;
                    }
                }
            })
        })
        .collect();

    let (_, new) = registry.reset_password(ANN, "db-1").expect("reset");
    reset_done.store(true, Ordering::SeqCst);
    for verifier in verifiers {
        verifier.join().expect("verifier thread");
    }
    assert!(registry.verify_password(ANN, "db-1", new.expose()));
}

/// One step of a random session against the registry.
#[derive(Debug, Clone)]
enum Op {
    Reset {
        account: usize,
        db: usize,
    },
    Verify {
        account: usize,
        db: usize,
        which: Which,
    },
    Get {
        account: usize,
        db: usize,
    },
}

/// Which known password to try.
#[derive(Debug, Clone, Copy)]
enum Which {
    Current,
    Previous,
}

const ACCOUNTS: [&str; 3] = [ANN, BOB, "eve@example.com"];
const DBS: [&str; 4] = ["db-0", "db-1", "db-2", "db-missing"];

fn op() -> impl Strategy<Value = Op> {
    let account = 0..ACCOUNTS.len();
    let db = 0..DBS.len();
    prop_oneof![
        (account.clone(), db.clone()).prop_map(|(account, db)| Op::Reset { account, db }),
        (account.clone(), db.clone(), any::<bool>()).prop_map(|(account, db, current)| {
            let which = if current {
                Which::Current
            } else {
                Which::Previous
            };
            Op::Verify { account, db, which }
        }),
        (account, db).prop_map(|(account, db)| Op::Get { account, db }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        ..ProptestConfig::default()
    })]

    /// Model: each database has an owner, a current password and the passwords it had before.
    /// Only the owner sees it; only the current password verifies; resets by others and of
    /// missing ids change nothing and fail with `DatabaseNotFound`.
    #[test]
    fn registry_matches_model(ops in proptest::collection::vec(op(), 1..40)) {
        let owners = [ANN, BOB, ANN]; // db-0, db-1, db-2; db-missing is never inserted
        let registry = Registry::new();
        let mut current: BTreeMap<usize, Password> = BTreeMap::new();
        let mut previous: BTreeMap<usize, Vec<Password>> = BTreeMap::new();
        for (db, owner) in owners.iter().enumerate() {
            let record = Database::new(DBS[db], "x", *owner, Region::UsEast1, 0);
            current.insert(db, registry.insert(record).expect("insert").1);
        }
        let visible = |account: usize, db: usize| owners.get(db) == Some(&ACCOUNTS[account]);

        for op in ops {
            match op {
                Op::Reset { account, db } => {
                    let result = registry.reset_password(ACCOUNTS[account], DBS[db]);
                    if visible(account, db) {
                        let (record, password) = result.expect("owner resets");
                        prop_assert_eq!(record.database_id.as_str(), DBS[db]);
                        let old = current.insert(db, password).expect("had a password");
                        prop_assert!(old != current[&db]);
                        previous.entry(db).or_default().push(old);
                    } else {
                        prop_assert_eq!(
                            result.unwrap_err(),
                            ManagementError::DatabaseNotFound { id: DBS[db].to_owned() }
                        );
                    }
                }
                Op::Verify { account, db, which } => {
                    let candidates: Vec<&Password> = match which {
                        Which::Current => current.get(&db).into_iter().collect(),
                        Which::Previous => previous.get(&db).into_iter().flatten().collect(),
                    };
                    for candidate in candidates {
                        let expected = visible(account, db) && matches!(which, Which::Current);
                        prop_assert_eq!(
                            registry.verify_password(ACCOUNTS[account], DBS[db], candidate.expose()),
                            expected
                        );
                    }
                }
                Op::Get { account, db } => {
                    let result = registry.get(ACCOUNTS[account], DBS[db]);
                    prop_assert_eq!(result.is_ok(), visible(account, db));
                }
            }
        }
        // Every current password still verifies for its owner at the end.
        for (db, password) in &current {
            prop_assert!(registry.verify_password(owners[*db], DBS[*db], password.expose()));
        }
    }
}
