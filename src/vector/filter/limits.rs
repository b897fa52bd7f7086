//! Caps that keep a hostile filter from costing unbounded time or stack (DESIGN §2.4).
//!
//! The reference service documents no numbers; these are ours. They are generous for real
//! filters (a typical one is under 200 bytes with two or three conditions) and small enough
//! that parsing and per-record evaluation stay cheap and the recursive-descent parser cannot
//! overflow the stack.

/// Longest filter accepted, in bytes of UTF-8.
pub const MAX_FILTER_LEN: usize = 64 * 1024;

/// Deepest nesting of parentheses accepted. The parser checks it on every `(` before
/// recursing, so deep nesting is an error, never a stack overflow.
pub const MAX_DEPTH: usize = 64;

/// Most values accepted in one `IN (…)` / `NOT IN (…)` list.
pub const MAX_IN_VALUES: usize = 1024;
