//! Fuzzes the `Upstash-Retry-Delay` expression parser (text from any publisher): it never
//! panics or overflows the stack, and every expression it accepts evaluates, for any
//! `retried`, to a delay within the one-day cap.
#![no_main]

use flowvec::wire::{MAX_RETRY_DELAY_MS, RetryDelay};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(expression) = RetryDelay::parse(text) {
        for retried in [0, 1, 7, 20, u32::MAX] {
            assert!(expression.delay_ms(retried) <= MAX_RETRY_DELAY_MS, "{text:?}");
        }
    }
});
