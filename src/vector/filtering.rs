//! The one place where a query's or delete's `filter` text becomes the engines' `allow`
//! predicate, and where the filtered-search strategy of DESIGN §2.3–2.4 is chosen.
//!
//! 1. [`compile`] parses the text once per query.
//! 2. [`select`] estimates the filter's selectivity from the namespace's
//!    [`ValueIndex`](crate::vector::ValueIndex) (through [`Filter::constraints`]: `=`, `IN`,
//!    numeric ranges, `CONTAINS`, `GLOB` prefixes). When the narrowest constraint names at most
//!    [`COLLECT_SHARE_PER_1024`]/1024 of the live records (at least [`COLLECT_FLOOR`]), the
//!    candidates are collected and each verified with [`Filter::matches`]: the result is the
//!    exact set of matching slots as a bitmap ([`Selection::Matches`]), so the engines' `allow`
//!    is a bit test and the number of matches is known. Otherwise ([`Selection::Predicate`])
//!    the filter itself is the `allow`, evaluated only on the records an engine visits.
//! 3. Dense, in [`Namespace::search`](super::namespace::Namespace): a predicate filter whose
//!    sampled share ([`SAMPLE`] slots) makes [`post_filter_k`] small enough post-filters an
//!    unfiltered graph search (one 8x wider retry); known matches above the engine's exact
//!    threshold are scanned exactly ([`exact_dense`]); everything else goes to the engine with
//!    `allow` (it scans exactly when its sample says the matches are few, and falls back to
//!    that scan when the graph comes back short). A result shorter than `min(topK, matches)`
//!    is replaced by [`exact_dense`] over the matches. Sparse is exact with `allow`.
//!
//! Delete by filter uses the same candidates (all of them, no limit), verified the same way.

use crate::vector::dense::DenseIndex;
use crate::vector::filter::Filter;
use crate::vector::{TieBreak, ValueIndex, VectorError};
use serde_json::Value;

/// `Value::Null`, the metadata a filter sees for a record without metadata.
pub(crate) static NO_METADATA: Value = Value::Null;

/// Parses a filter; blank text means no filter.
///
/// # Errors
/// [`VectorError::InvalidFilter`] carrying the parser's error.
pub(crate) fn compile(source: &str) -> Result<Option<Filter>, VectorError> {
    if source.trim().is_empty() {
        return Ok(None);
    }
    Filter::parse(source)
        .map(Some)
        .map_err(|error| VectorError::InvalidFilter {
            filter: source.to_owned(),
            error,
        })
}

/// Largest share of the live records, in 1/1024ths, whose candidates the value index collects
/// and verifies before the search (the rest run the filter inside the engine's `allow`).
/// Collecting costs one filter evaluation per candidate (~60 ns for a 2-clause filter on
/// minilm-text metadata) but makes `allow` a bit test and lets the dense engine see the
/// selectivity exactly.
///
/// Measured with `examples/filter_bench.rs --predicate` (minilm-text, 43,000 × 384-d, 500
/// queries, single thread, native graph, unfiltered 1394 QPS), collected vs predicate-only
/// QPS: 0.1% 5971 vs 49; 1% 3368 vs 35; 2.8% 593 vs 43; 9.7% 101 vs 99; 50% 308 vs 769.
/// Collecting wins by 10-100x up to a few percent, is even at 10% and loses at 50%;
/// 160/1024 (15.6%) sits between.
pub(crate) const COLLECT_SHARE_PER_1024: usize = 160;

/// Fewest candidates always collected, whatever the namespace size.
pub(crate) const COLLECT_FLOOR: usize = 2048;

/// Slots sampled to estimate the share a filter matches when the value index cannot say.
pub(crate) const SAMPLE: usize = 256;

/// Widened `k` of the second post-filtered graph search, when the first came back short.
pub(crate) const POST_FILTER_RETRY_K: usize = 1024;

/// Largest widened `k` of a post-filtered graph search (see [`post_filter_k`]).
pub(crate) const POST_FILTER_MAX_K: usize = 256;

/// For a filter matching `share` of the records: the number of unfiltered graph results to
/// ask for so that about 1.5 × `top_k` of them match, or `None` when that is more than
/// [`POST_FILTER_MAX_K`] (a narrower filter goes to the engine's filtered search, which scans
/// exactly when the matches are few). With `top_k` 10 that is filters matching 6.3% or more.
///
/// Measured (`examples/filter_bench.rs`, minilm-text, 43,000 × 384-d, native graph, 500
/// queries, unfiltered 1394 QPS), QPS and recall@10 of the engine's filtered graph search
/// before post-filtering: 55% 267 QPS / 0.977, 50% 308 / 0.998, 9.7% 101 / 0.987.
pub(crate) fn post_filter_k(top_k: usize, share: f64) -> Option<usize> {
    if share <= 0.0 {
        return None;
    }
    let wide = (1.5 * top_k as f64 / share).ceil() + 8.0;
    (wide <= POST_FILTER_MAX_K as f64).then_some(wide as usize)
}

/// How a query's filter restricts what the engines may return.
pub(crate) enum Selection<'f> {
    /// No filter: everything.
    All,
    /// The filter's matching slots, found through the value index and each verified with
    /// [`Filter::matches`]: a bit per slot, and how many are set.
    Matches {
        /// Bit `slot % 64` of word `slot / 64`.
        bits: Vec<u64>,
        /// Number of bits set (the exact number of matching records).
        count: usize,
    },
    /// Too many candidates to collect up front (or none the index can name): the filter runs
    /// on each record an engine visits.
    Predicate(&'f Filter),
}

/// Chooses how to apply `filter` to a namespace with `live` records and `slots` slot numbers
/// (all below `slots`), whose values `index` holds and whose metadata `metadata_of` gives.
pub(crate) fn select<'f, 'm>(
    filter: Option<&'f Filter>,
    index: &ValueIndex,
    live: usize,
    slots: usize,
    metadata_of: impl Fn(u32) -> Option<&'m Value>,
) -> Selection<'f> {
    let Some(filter) = filter else {
        return Selection::All;
    };
    let limit = (live * COLLECT_SHARE_PER_1024 / 1024).max(COLLECT_FLOOR);
    let Some(candidates) = index.candidates_within(filter, limit) else {
        return Selection::Predicate(filter);
    };
    let mut bits = vec![0u64; slots.div_ceil(64)];
    let mut count = 0;
    for slot in candidates {
        let Some(metadata) = metadata_of(slot) else {
            continue;
        };
        if filter.matches(metadata)
            && let Some(word) = bits.get_mut(slot as usize / 64)
        {
            *word |= 1 << (slot % 64);
            count += 1;
        }
    }
    Selection::Matches { bits, count }
}

/// Whether bit `slot` is set.
#[inline]
pub(crate) fn bit(bits: &[u64], slot: u32) -> bool {
    bits.get(slot as usize / 64)
        .is_some_and(|w| w >> (slot % 64) & 1 == 1)
}

/// The exact filtered top-`k` for a dense query: every one of `slots` the engine holds, scored
/// in place by the engine's own kernels (the same scores its scan and graph give). The record
/// layer's path for known matches, and its last resort when an engine returns fewer than
/// `min(k, matches)`.
pub(crate) fn exact_dense(
    engine: &DenseIndex,
    query: &[f32],
    k: usize,
    slots: impl Iterator<Item = u32>,
    tie: TieBreak<'_>,
) -> Vec<(u32, f32)> {
    engine.exact_among(query, k, slots, Some(tie))
}

/// The set bits, ascending.
pub(crate) fn set_bits(bits: &[u64]) -> impl Iterator<Item = u32> + '_ {
    bits.iter().enumerate().flat_map(|(w, &word)| {
        let mut rest = word;
        std::iter::from_fn(move || {
            (rest != 0).then(|| {
                let b = rest.trailing_zeros();
                rest &= rest - 1;
                (w * 64) as u32 + b
            })
        })
    })
}
