//! The flow-control header value (DESIGN §1.2): every rule and every error case.

use std::num::NonZeroU32;

use flowvec::flow::{FlowError, Limits, Period, Rate};
use proptest::prelude::*;

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap()
}

fn limits(parallelism: Option<u32>, rate: Option<(u32, u32)>) -> Limits {
    Limits {
        parallelism: parallelism.map(nz),
        rate: rate.map(|(max, secs)| Rate {
            max: nz(max),
            period: Period::from_secs(secs).unwrap(),
        }),
    }
}

fn parse(s: &str) -> Result<Limits, FlowError> {
    s.parse()
}

#[test]
fn every_combination_and_order_parses() {
    let cases = [
        ("parallelism=5", limits(Some(5), None)),
        ("rate=10", limits(None, Some((10, 1)))),
        ("rate=10,period=1m", limits(None, Some((10, 60)))),
        ("period=1m,rate=10", limits(None, Some((10, 60)))),
        (
            "parallelism=5,rate=10,period=1m",
            limits(Some(5), Some((10, 60))),
        ),
        (
            "period=1m,parallelism=5,rate=10",
            limits(Some(5), Some((10, 60))),
        ),
        ("rate=10,parallelism=5", limits(Some(5), Some((10, 1)))),
    ];
    for (text, want) in cases {
        assert_eq!(parse(text).unwrap(), want, "{text}");
    }
}

#[test]
fn spaces_around_separators_and_any_name_case_are_accepted() {
    let want = limits(Some(5), Some((10, 60)));
    for text in [
        "parallelism=5, rate=10, period=1m",
        "parallelism = 5 , rate= 10 ,period =1m",
        "  Parallelism=5,RATE=10,Period=1m  ",
        "PARALLELISM=5,rAtE=10,pErIoD=60",
    ] {
        assert_eq!(parse(text).unwrap(), want, "{text:?}");
    }
}

#[test]
fn period_units_bare_seconds_default_and_range() {
    for (text, secs) in [
        ("1s", 1),
        ("45", 45),
        ("2m", 120),
        ("3h", 10_800),
        ("7d", 604_800),
        ("604800s", 604_800),
        ("10080m", 604_800),
        ("168h", 604_800),
    ] {
        let l = parse(&format!("rate=1,period={text}")).unwrap();
        assert_eq!(l.rate.unwrap().period.as_secs(), secs, "{text}");
    }
    assert_eq!(
        parse("rate=1").unwrap().rate.unwrap().period,
        Period::ONE_SECOND,
        "default 1 s"
    );
    for text in [
        "0",
        "0s",
        "8d",
        "604801",
        "169h",
        "10081m",
        "99999999999999999999d",
    ] {
        let err = parse(&format!("rate=1,period={text}")).unwrap_err();
        assert!(
            matches!(err, FlowError::InvalidPeriod { ref value, .. } if value == text),
            "{text}: {err:?}"
        );
        assert!(
            err.to_string().contains(&format!("`period={text}`")),
            "{err}"
        );
    }
}

#[test]
fn parallelism_and_rate_cover_one_to_u32_max() {
    assert_eq!(
        parse("parallelism=1,rate=4294967295").unwrap(),
        limits(Some(1), Some((u32::MAX, 1)))
    );
    assert_eq!(
        parse("parallelism=4294967295").unwrap(),
        limits(Some(u32::MAX), None)
    );
}

fn expect_value_error(text: &str, name: &str, value: &str, reason: &str) {
    let err = parse(text).unwrap_err();
    match &err {
        FlowError::InvalidLimitValue {
            name: n,
            value: v,
            reason: r,
        } => {
            assert_eq!((n.as_str(), v.as_str()), (name, value), "{text}");
            assert!(r.contains(reason), "{text}: {r}");
        }
        other => panic!("{text}: unexpected {other:?}"),
    }
    assert!(
        err.to_string().contains(&format!("`{name}={value}`")),
        "{err}"
    );
}

#[test]
fn zero_negative_overflow_and_non_integers_are_errors_quoting_the_part() {
    expect_value_error("parallelism=0", "parallelism", "0", "zero");
    expect_value_error("rate=0", "rate", "0", "zero");
    expect_value_error("parallelism=-1", "parallelism", "-1", "negative");
    expect_value_error("rate=-10", "rate", "-10", "negative");
    expect_value_error(
        "parallelism=4294967296",
        "parallelism",
        "4294967296",
        "too large",
    );
    expect_value_error(
        "rate=18446744073709551616",
        "rate",
        "18446744073709551616",
        "too large",
    );
    expect_value_error("rate=ten", "rate", "ten", "not an integer");
    expect_value_error("rate=1.5", "rate", "1.5", "not an integer");
    expect_value_error("parallelism=", "parallelism", "", "not an integer");
    let err = parse("rate=1,period=-5").unwrap_err();
    assert!(
        matches!(err, FlowError::InvalidPeriod { reason, .. } if reason.contains("negative")),
        "{err:?}"
    );
}

#[test]
fn empty_value_and_empty_parts_are_errors() {
    for text in ["", "   "] {
        assert_eq!(parse(text).unwrap_err(), FlowError::EmptyLimits);
    }
    for text in [
        "rate=1,,parallelism=2",
        "rate=1,",
        ",rate=1",
        "rate=1, ,parallelism=2",
    ] {
        let err = parse(text).unwrap_err();
        assert_eq!(
            err,
            FlowError::EmptyLimitPart {
                value: text.to_owned()
            }
        );
        assert!(err.to_string().contains(text), "{err}");
    }
}

#[test]
fn unknown_and_repeated_names_are_errors() {
    let err = parse("rate=1,burst=5").unwrap_err();
    assert_eq!(
        err,
        FlowError::UnknownLimit {
            name: "burst".to_owned()
        }
    );
    assert!(err.to_string().contains("`burst`"));
    for (text, name) in [
        ("rate=1,rate=2", "rate"),
        ("parallelism=1,Parallelism=1", "Parallelism"),
        ("rate=1,period=1s,period=2s", "period"),
    ] {
        let err = parse(text).unwrap_err();
        assert_eq!(
            err,
            FlowError::RepeatedLimit {
                name: name.to_owned()
            },
            "{text}"
        );
        assert!(err.to_string().contains(&format!("`{name}`")));
    }
}

#[test]
fn missing_equals_is_an_error() {
    for (text, part) in [
        ("parallelism", "parallelism"),
        ("rate=1,period 5s", "period 5s"),
        ("rate:5", "rate:5"),
    ] {
        let err = parse(text).unwrap_err();
        assert_eq!(
            err,
            FlowError::MissingEquals {
                part: part.to_owned()
            },
            "{text}"
        );
        assert!(err.to_string().contains(&format!("`{part}`")));
    }
}

#[test]
fn bad_period_unit_is_an_error() {
    for text in ["5w", "5ms", "5M", "5 s", "s", "1.5h", "5y"] {
        let err = parse(&format!("rate=1,period={text}")).unwrap_err();
        assert!(
            matches!(err, FlowError::InvalidPeriod { ref value, .. } if value == text),
            "{text}: {err:?}"
        );
        assert!(
            err.to_string().contains(&format!("`period={text}`")),
            "{err}"
        );
    }
}

#[test]
fn period_without_rate_is_an_error() {
    for text in ["period=1m", "parallelism=3,period=10s"] {
        let err = parse(text).unwrap_err();
        assert!(
            matches!(err, FlowError::PeriodWithoutRate { .. }),
            "{text}: {err:?}"
        );
    }
    assert!(
        parse("period=1m")
            .unwrap_err()
            .to_string()
            .contains("`period=1m`")
    );
}

#[test]
fn display_is_canonical() {
    assert_eq!(
        parse(" RATE = 10 , period = 60 , parallelism = 05 ")
            .unwrap()
            .to_string(),
        "parallelism=5,rate=10,period=1m"
    );
    assert_eq!(parse("rate=3").unwrap().to_string(), "rate=3,period=1s");
    assert_eq!(parse("parallelism=2").unwrap().to_string(), "parallelism=2");
    assert_eq!(
        parse("rate=1,period=86400").unwrap().to_string(),
        "rate=1,period=1d"
    );
    assert_eq!(Limits::UNLIMITED.to_string(), "");
}

fn arb_limits() -> impl Strategy<Value = Limits> {
    (
        proptest::option::of(1..=u32::MAX),
        proptest::option::of((1..=u32::MAX, 1..=604_800u32)),
    )
        .prop_map(|(p, r)| limits(p, r))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn display_round_trips(l in arb_limits()) {
        prop_assume!(l != Limits::UNLIMITED);
        prop_assert_eq!(parse(&l.to_string()).unwrap(), l);
    }

    #[test]
    fn arbitrary_text_never_panics_and_what_parses_round_trips(
        s in "[ ,=0-9a-zA-Z-]{0,40}|((parallelism|rate|period|PERIOD|Rate)=[-0-9]{0,12}[smhdx]?,?){0,4}"
    ) {
        if let Ok(l) = parse(&s) {
            prop_assert_eq!(parse(&l.to_string()).unwrap(), l);
        }
    }
}
