//! Basic credentials of the management API: the header parsing table, that no error ever
//! carries the secret, that parsing never panics, and account verification in which an unknown
//! email is indistinguishable from a wrong key.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use flowvec::management::{
    Accounts, ApiKey, BasicCredentials, MAX_AUTHORIZATION_LEN, ManagementError,
};
use proptest::prelude::*;

fn b64(bytes: impl AsRef<[u8]>) -> String {
    STANDARD.encode(bytes)
}

fn basic(plain: impl AsRef<[u8]>) -> Vec<u8> {
    format!("Basic {}", b64(plain)).into_bytes()
}

#[test]
fn header_parsing_table() {
    use ManagementError as E;
    type Expected = Result<(&'static str, &'static str), ManagementError>;
    let no_pad = STANDARD.encode("ann:k3y").trim_end_matches('=').to_owned();
    let cases: Vec<(&str, Vec<u8>, Expected)> = vec![
        (
            "valid",
            basic("ann@example.com:k3y"),
            Ok(("ann@example.com", "k3y")),
        ),
        (
            "scheme is case-insensitive",
            format!("bAsIc {}", b64("ann:k3y")).into_bytes(),
            Ok(("ann", "k3y")),
        ),
        (
            "several spaces and a tab",
            format!("Basic  \t{}", b64("ann:k3y")).into_bytes(),
            Ok(("ann", "k3y")),
        ),
        (
            "surrounding blanks",
            format!(" Basic {} \t", b64("ann:k3y")).into_bytes(),
            Ok(("ann", "k3y")),
        ),
        (
            "padding optional",
            format!("Basic {no_pad}").into_bytes(),
            Ok(("ann", "k3y")),
        ),
        (
            "key may hold colons",
            basic("ann:k:3:y"),
            Ok(("ann", "k:3:y")),
        ),
        (
            "unicode email",
            basic("ännä@example.com:k3y"),
            Ok(("ännä@example.com", "k3y")),
        ),
        ("empty value", b"".to_vec(), Err(E::MissingCredentials)),
        ("blank value", b"  \t ".to_vec(), Err(E::MissingCredentials)),
        (
            "missing prefix",
            b64("ann:k3y").into_bytes(),
            Err(E::UnsupportedScheme {
                scheme: String::new(),
            }),
        ),
        (
            "bearer scheme",
            b"Bearer abc.def".to_vec(),
            Err(E::UnsupportedScheme {
                scheme: "Bearer".into(),
            }),
        ),
        (
            "prefix without space",
            format!("Basic{}", b64("ann:k3y")).into_bytes(),
            Err(E::UnsupportedScheme {
                scheme: String::new(),
            }),
        ),
        (
            "scheme only",
            b"Basic".to_vec(),
            Err(E::MalformedBase64 {
                problem: "nothing after the scheme `Basic`".into(),
            }),
        ),
        (
            "scheme and blanks only",
            b"Basic   ".to_vec(),
            Err(E::MalformedBase64 {
                problem: "nothing after the scheme `Basic`".into(),
            }),
        ),
        (
            "bad base64 character",
            b"Basic YW5u*mszeQ==".to_vec(),
            Err(E::MalformedBase64 {
                problem: "invalid character at offset 4".into(),
            }),
        ),
        (
            "base64 with inner space",
            b"Basic YW5u OmszeQ==".to_vec(),
            Err(E::MalformedBase64 {
                problem: "invalid character at offset 4".into(),
            }),
        ),
        (
            "bad base64 length",
            b"Basic YW5uO".to_vec(),
            Err(E::MalformedBase64 {
                problem: "invalid length of 5 symbols".into(),
            }),
        ),
        (
            "url-safe alphabet is not base64",
            b"Basic _-_-".to_vec(),
            Err(E::MalformedBase64 {
                problem: "invalid character at offset 0".into(),
            }),
        ),
        ("no colon", basic("ann@example.com"), Err(E::MissingColon)),
        (
            "non-UTF-8 payload",
            basic(b"ann:\xffk3y"),
            Err(E::CredentialsNotUtf8 { valid_up_to: 4 }),
        ),
        (
            "non-UTF-8 header",
            b"Basic \xff\xfe".to_vec(),
            Err(E::MalformedBase64 {
                problem: "invalid character at offset 0".into(),
            }),
        ),
        (
            "non-UTF-8 scheme",
            b"B\xe4sic YW5uOmszeQ==".to_vec(),
            Err(E::UnsupportedScheme {
                scheme: String::new(),
            }),
        ),
        (
            "empty email",
            basic(":k3y"),
            Err(E::EmptyCredential { part: "email" }),
        ),
        (
            "empty key",
            basic("ann:"),
            Err(E::EmptyCredential { part: "API key" }),
        ),
        (
            "only a colon",
            basic(":"),
            Err(E::EmptyCredential { part: "email" }),
        ),
        (
            "control char in email",
            basic("an\nn:k3y"),
            Err(E::ControlCharacter {
                part: "email",
                position: 2,
            }),
        ),
        (
            "control char in key",
            basic("ann:k3\u{7f}y"),
            Err(E::ControlCharacter {
                part: "API key",
                position: 2,
            }),
        ),
        (
            "too long",
            {
                let mut v = b"Basic ".to_vec();
                v.resize(MAX_AUTHORIZATION_LEN + 1, b'A');
                v
            },
            Err(E::CredentialsTooLong {
                len: MAX_AUTHORIZATION_LEN + 1,
                max: MAX_AUTHORIZATION_LEN,
            }),
        ),
    ];
    for (name, header, expected) in cases {
        let got = BasicCredentials::parse(&header);
        let got = got.as_ref().map(|c| (c.email(), c.api_key().expose()));
        let expected = expected.as_ref().map(|&(email, key)| (email, key));
        assert_eq!(got, expected, "case: {name}");
    }
}

#[test]
fn errors_never_carry_the_secret() {
    for secret in ["s3cr3t-API-key-that-must-not-leak", "s3cr3t", "YW5uOmszeQ"] {
        assert_no_leak(secret);
    }
}

fn assert_no_leak(secret: &str) {
    let headers: Vec<Vec<u8>> = vec![
        secret.as_bytes().to_vec(),              // bare secret, no scheme
        format!("{secret} more").into_bytes(),   // secret where the scheme goes
        format!("Basic {secret}!").into_bytes(), // not base64
        basic(secret),                           // no colon: the payload is the secret
        basic(format!("ann:{secret}\u{1}")),     // control char in the key
        basic(format!("{secret}:")),             // the key typed into the email slot
    ];
    let encoded = b64(secret);
    for header in headers {
        let err = BasicCredentials::parse(&header).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(
            !shown.contains(secret) && !shown.contains(&encoded),
            "leaked in: {shown}"
        );
    }
}

#[test]
fn to_header_value_is_what_clients_send() {
    // `curl -u ann@example.com:k3y` sends exactly this.
    let creds = BasicCredentials::new("ann@example.com", ApiKey::new("k3y"));
    assert_eq!(
        creds.to_header_value(),
        "Basic YW5uQGV4YW1wbGUuY29tOmszeQ=="
    );
}

#[test]
fn accounts_verify_only_the_right_pair() {
    let accounts = Accounts::new();
    let ann = accounts.create("ann@example.com").expect("create");
    let bob = accounts.create("bob@example.com").expect("create");

    assert!(accounts.verify("ann@example.com", ann.expose()));
    assert!(accounts.verify("bob@example.com", bob.expose()));
    assert!(
        !accounts.verify("ann@example.com", bob.expose()),
        "someone else's key"
    );
    assert!(!accounts.verify("bob@example.com", ann.expose()));
    assert!(
        !accounts.verify("ANN@example.com", ann.expose()),
        "emails are exact"
    );
    assert!(
        !accounts.verify("ann@example.com", &ann.expose()[1..]),
        "truncated key"
    );
    assert!(!accounts.verify("ann@example.com", ""));
    assert!(
        !accounts.verify("eve@example.com", ann.expose()),
        "unknown email"
    );

    let header = BasicCredentials::new("ann@example.com", ann.clone()).to_header_value();
    assert_eq!(
        accounts.authenticate_header(&header).expect("valid"),
        "ann@example.com"
    );
}

#[test]
fn unknown_email_and_wrong_key_are_indistinguishable() {
    let accounts = Accounts::new();
    let key = accounts.create("ann@example.com").expect("create");

    let wrong_key =
        BasicCredentials::new("ann@example.com", ApiKey::new("guess")).to_header_value();
    let unknown = BasicCredentials::new("eve@example.com", key).to_header_value();
    let a = accounts.authenticate_header(&wrong_key).unwrap_err();
    let b = accounts.authenticate_header(&unknown).unwrap_err();
    assert_eq!(a, ManagementError::InvalidCredentials);
    assert_eq!(a, b);
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn malformed_header_fails_before_any_account_lookup() {
    let accounts = Accounts::new();
    accounts.create("ann@example.com").expect("create");
    assert_eq!(
        accounts.authenticate_header(b""),
        Err(ManagementError::MissingCredentials)
    );
    assert_eq!(
        accounts.authenticate_header(basic("ann@example.com")),
        Err(ManagementError::MissingColon)
    );
}

#[test]
fn host_chosen_keys_verify_and_are_hashed() {
    let accounts = Accounts::new();
    accounts
        .insert("ann@example.com", &ApiKey::new("from-config"))
        .expect("insert");
    assert!(accounts.verify("ann@example.com", "from-config"));
    assert!(!accounts.verify("ann@example.com", "from-confiG"));
    let debug = format!("{accounts:?}");
    assert!(
        !debug.contains("from-config") && !debug.contains("ann"),
        "{debug}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        ..ProptestConfig::default()
    })]

    /// Whatever bytes arrive, parsing returns (never panics).
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = BasicCredentials::parse(&bytes);
        let mut prefixed = b"Basic ".to_vec();
        prefixed.extend_from_slice(&bytes);
        let _ = BasicCredentials::parse(&prefixed);
    }

    /// Arbitrary base64 payloads after `Basic ` never panic either, and succeed exactly when
    /// the payload is UTF-8 `email:key` with both parts non-empty and free of control chars.
    #[test]
    fn parse_agrees_with_a_plain_rule_on_any_payload(payload in proptest::collection::vec(any::<u8>(), 0..64)) {
        let result = BasicCredentials::parse(basic(&payload));
        let expected = std::str::from_utf8(&payload).ok().and_then(|s| s.split_once(':')).filter(|(e, k)| {
            !e.is_empty() && !k.is_empty() && !e.chars().chain(k.chars()).any(char::is_control)
        });
        match (result, expected) {
            (Ok(creds), Some((email, key))) => {
                prop_assert_eq!(creds.email(), email);
                prop_assert_eq!(creds.api_key().expose(), key);
            }
            (Err(_), None) => {}
            (got, want) => prop_assert!(false, "got {:?}, want {:?}", got, want),
        }
    }

    /// Every valid (email, key) pair survives the client encoding and the server parsing.
    #[test]
    fn header_round_trips(
        email in "[^:\\p{Cc}]{1,40}",
        key in "[^\\p{Cc}]{1,60}",
    ) {
        let creds = BasicCredentials::new(email.clone(), ApiKey::new(key.clone()));
        let parsed = BasicCredentials::parse(creds.to_header_value()).expect("round trip");
        prop_assert_eq!(parsed.email(), email.as_str());
        prop_assert_eq!(parsed.api_key().expose(), key.as_str());
    }
}
