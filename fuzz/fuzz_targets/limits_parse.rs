//! Fuzzes the flow-control header-value parser: it never panics, and the canonical `Display`
//! of anything it accepts parses back to the same value (and is a fixed point).
#![no_main]

use flowvec::flow::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(limits) = text.parse::<Limits>() {
        let canonical = limits.to_string();
        let back: Limits = canonical.parse().expect("Display output parses");
        assert_eq!(back, limits, "round trip of {text:?} via {canonical:?}");
        assert_eq!(back.to_string(), canonical, "canonical form is a fixed point");
    }
});
