//! Arbitrary bytes into `Filter::parse`: no panic, and whatever parses prints to a string
//! that parses back to the same filter, and evaluating it on a fixed document does not panic.

#![no_main]

use flowvec::vector::filter::Filter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(filter) = Filter::parse(source) else {
        return;
    };
    let printed = filter.to_string();
    let reparsed = Filter::parse(&printed)
        .unwrap_or_else(|e| panic!("{source:?} printed as {printed:?}, which fails: {e}"));
    assert_eq!(reparsed, filter, "{source:?} printed as {printed:?}");
    assert_eq!(
        reparsed.to_string(),
        printed,
        "printing is not a fixed point"
    );
    let metadata = serde_json::json!({
        "a": 1, "b": "x", "c": [1, "x", true, null], "d": {"e": [1.5, {"f": "g"}]}, "n": null
    });
    let _ = filter.matches(&metadata);
    let _ = filter.matches(&serde_json::Value::Null);
});
