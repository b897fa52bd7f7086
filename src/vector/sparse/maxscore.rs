//! Exact top-k by MaxScore dynamic pruning (Turtle & Flood 1995; window-at-a-time like Lucene's
//! `MaxScoreBulkScorer`), made exact for negative values, ties and float rounding.
//!
//! Query terms are sorted by their score upper bound `ub_t = max(w_t * max_t, w_t * min_t)`
//! (clamped at 0, so terms with negative contributions never lower a bound). The shortest prefix
//! of that order whose summed bounds cannot reach the current k-th score is *non-essential*: a
//! document found only there cannot enter, so candidates come from the essential lists alone,
//! and non-essential lists are only consulted for those candidates, highest bound first,
//! dropping a candidate as soon as its partial score plus the remaining bounds falls short.
//!
//! The work is done a window of ids at a time (see [`search`]), and the split is only taken
//! when the lists it skips hold at least half the query's postings (a cost gate; measurements
//! in the [parent module](super)).
//!
//! Exactness:
//! - A bound prunes only when it is **strictly** below the k-th score after rounding to `f32`
//!   (a document scoring equal to the threshold may still win on the tie-break).
//! - Partial sums are formed in a different order than final scores, so bounds carry a slack
//!   of `1e-9 ×` the largest possible score magnitude, far above `f64` rounding error.
//! - Final scores are sums in query-term order (see
//!   [`SparseIndex::search`](super::SparseIndex::search)), whatever path found the document:
//!   in a window where every list is essential the accumulator is filled in that order; in
//!   other windows a document about to enter the top-k is rescored by seeking every list.

use super::postings::{Cursor, END, PostingList};
use crate::vector::{TieBreak, TopK};

/// One query term present in the index.
pub(super) struct QueryTerm<'a> {
    /// Query value times its weighting, in `f64`.
    pub(super) weight: f64,
    pub(super) postings: &'a PostingList,
}

/// Work done by one search, for benchmarks and tests of the pruning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Query terms present in the index.
    pub terms: usize,
    /// Total length of their posting lists (what a term-at-a-time scan would touch).
    pub postings: u64,
    /// Distinct documents holding at least one query term that were reached at all.
    pub candidates: u64,
    /// Candidates whose bound passed and that were looked up in the non-essential lists.
    pub probed: u64,
    /// Documents whose full score was bounded tightly enough to be offered to the top-k.
    pub scored: u64,
}

/// Documents per window of [`search`]: the accumulator (`f64`) is 32 KiB, about L1 size.
const WINDOW: usize = 4096;

/// Window-at-a-time MaxScore (after Lucene's `MaxScoreBulkScorer`). Per window of ids:
/// 1. the essential lists are walked term-at-a-time into a dense accumulator;
/// 2. each touched id is kept only if its partial score plus the non-essential bounds may enter;
/// 3. the non-essential lists, highest bound first, add their contributions to the survivors,
///    each either by seeking per survivor or by walking its window segment, whichever touches
///    less; survivors are re-bounded after each list;
/// 4. the remaining survivors get their canonical score and are offered to the top-k.
///
/// The essential / non-essential split is revised between windows.
pub(super) fn search(
    terms: &[QueryTerm<'_>],
    k: usize,
    allow: Option<&dyn Fn(u32) -> bool>,
    tie: Option<TieBreak<'_>>,
) -> (Vec<(u32, f32)>, SearchStats) {
    let n = terms.len();
    let mut stats = SearchStats {
        terms: n,
        postings: terms.iter().map(|t| t.postings.len() as u64).sum(),
        ..SearchStats::default()
    };
    let mut top = TopK::new(k, tie);
    if k == 0 || n == 0 {
        return (top.into_sorted_vec(), stats);
    }
    let bounds = Bounds::new(terms);
    let order = &bounds.order;
    let may_enter = |top: &TopK<'_>, bound: f64| match top.threshold() {
        None => true,
        Some(thr) => ((bound + bounds.slack) as f32) >= thr,
    };

    let cursors = || -> Vec<Cursor<'_>> { terms.iter().map(|t| t.postings.cursor()).collect() };
    let (mut walk, mut probe, mut exact) = (cursors(), cursors(), cursors());
    let mut acc = vec![0.0f64; WINDOW];
    let mut live = vec![0u64; WINDOW / 64];
    // The longest prefix of `order` the threshold allows to skip, and the one skipped.
    let (mut prunable, mut non_essential) = (0, 0);

    while non_essential < n {
        let base = order[non_essential..]
            .iter()
            .map(|&t| walk[t].doc())
            .min()
            .unwrap_or(END);
        if base == END {
            break;
        }
        let end = base + WINDOW as u64;
        let id = |i: usize| (base + i as u64) as u32;

        // 1. Essential lists into the accumulator, in query-term order: when every list is
        //    essential the accumulator already holds the canonical score.
        for t in 0..n {
            if bounds.rank[t] < non_essential {
                continue;
            }
            let w = terms[t].weight;
            let c = &mut walk[t];
            while c.doc() < end {
                let i = (c.doc() - base) as usize;
                acc[i] += w * f64::from(c.val());
                live[i / 64] |= 1 << (i % 64);
                c.advance();
            }
        }

        // 2. Bound every touched id with all non-essential bounds. No push happens in steps
        //    2 and 3, so the threshold is read once.
        let thr = top.threshold();
        let passes = |bound: f64| thr.is_none_or(|thr| ((bound + bounds.slack) as f32) >= thr);
        let rest = if non_essential > 0 {
            bounds.cum[non_essential - 1]
        } else {
            0.0
        };
        let mut survivors = 0usize;
        for_each_set(&mut live, |i| {
            stats.candidates += 1;
            let keep = passes(acc[i] + rest) && allow.is_none_or(|f| f(id(i)));
            if keep {
                survivors += 1;
            } else {
                acc[i] = 0.0;
            }
            keep
        });
        stats.probed += survivors as u64;

        // 3. Non-essential lists, highest bound first: seek per survivor while survivors are
        //    few (re-bounding them after each list), else walk the rest of the lists' segments.
        let mut j = non_essential;
        while j > 0 && survivors > 0 {
            j -= 1;
            let t = order[j];
            let w = terms[t].weight;
            let c = &mut probe[t];
            c.seek(base as u32);
            if survivors * SEEK_COST >= c.count_below(end) {
                for &t in &order[..=j] {
                    let w = terms[t].weight;
                    let c = &mut probe[t];
                    c.seek(base as u32);
                    while c.doc() < end {
                        let i = (c.doc() - base) as usize;
                        // Branch-free (the live test is unpredictable): dropped ids hold 0 and
                        // add ±0, which leaves them 0; live ids add their contribution exactly.
                        let is_live = ((live[i / 64] >> (i % 64)) & 1) as f64;
                        acc[i] += is_live * (w * f64::from(c.val()));
                        c.advance();
                    }
                }
                break;
            }
            for_each_set(&mut live, |i| {
                c.seek(id(i));
                if c.doc() == u64::from(id(i)) {
                    acc[i] += w * f64::from(c.val());
                }
                true
            });
            let rest = if j > 0 { bounds.cum[j - 1] } else { 0.0 };
            for_each_set(&mut live, |i| {
                let keep = passes(acc[i] + rest);
                if !keep {
                    survivors -= 1;
                    acc[i] = 0.0;
                }
                keep
            });
        }

        // 4. Canonical scores of the survivors.
        for_each_set(&mut live, |i| {
            let partial = std::mem::take(&mut acc[i]);
            stats.scored += 1;
            if may_enter(&top, partial) {
                let doc = id(i);
                let score = if non_essential == 0 {
                    partial
                } else {
                    // Contributions summed in query-term order.
                    let mut score = 0.0f64;
                    for (t, c) in exact.iter_mut().enumerate() {
                        c.seek(doc);
                        if c.doc() == u64::from(doc) {
                            score += terms[t].weight * f64::from(c.val());
                        }
                    }
                    score
                };
                top.push(doc, score as f32);
            }
            false
        });
        while prunable < n && !may_enter(&top, bounds.cum[prunable]) {
            prunable += 1;
        }
        // Cost gate: skipping lists pays only when they hold a large share of the postings;
        // otherwise the bounding and probing cost more than walking them. `prunable` only
        // grows, and so does its share, so the split never moves back (walk cursors of
        // non-essential lists stay behind and must not be walked again).
        if 2 * bounds.skippable[prunable] >= bounds.skippable[n] {
            non_essential = prunable;
        }
    }
    (top.into_sorted_vec(), stats)
}

/// A seek costs about this many sequential posting steps.
const SEEK_COST: usize = 16;

/// Calls `f` on the index of every set bit, ascending; clears the bits for which it returns
/// `false`.
#[inline]
fn for_each_set(bits: &mut [u64], mut f: impl FnMut(usize) -> bool) {
    for (w, word) in bits.iter_mut().enumerate() {
        let mut rest = *word;
        while rest != 0 {
            let b = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if !f(w * 64 + b) {
                *word &= !(1u64 << b);
            }
        }
    }
}

/// Per-term score bounds of a query, ordered for MaxScore.
struct Bounds {
    /// Term positions by ascending bound, then descending list length, then position.
    order: Vec<usize>,
    /// `rank[t]`: position of term `t` in `order`.
    rank: Vec<usize>,
    /// `cum[j]`: bound on the summed contributions of `order[0..=j]`.
    cum: Vec<f64>,
    /// `skippable[j]`: postings in `order[0..j]` (`n + 1` entries).
    skippable: Vec<usize>,
    /// Added to every bound before comparing: covers `f64` rounding of sums formed in another
    /// order than the canonical one.
    slack: f64,
}

impl Bounds {
    fn new(terms: &[QueryTerm<'_>]) -> Self {
        let mut scale = 0.0f64;
        let ub: Vec<f64> = terms
            .iter()
            .map(|t| {
                let hi = t.weight * f64::from(t.postings.max());
                let lo = t.weight * f64::from(t.postings.min());
                scale += hi.abs().max(lo.abs());
                hi.max(lo).max(0.0)
            })
            .collect();
        let mut order: Vec<usize> = (0..terms.len()).collect();
        // Equal bounds: the longest lists first, so they turn non-essential (skipped) first.
        order.sort_by(|&a, &b| {
            ub[a]
                .total_cmp(&ub[b])
                .then(terms[b].postings.len().cmp(&terms[a].postings.len()))
                .then(a.cmp(&b))
        });
        let cum = order
            .iter()
            .scan(0.0, |acc, &t| {
                *acc += ub[t];
                Some(*acc)
            })
            .collect();
        let skippable = std::iter::once(0)
            .chain(order.iter().scan(0, |acc, &t| {
                *acc += terms[t].postings.len();
                Some(*acc)
            }))
            .collect();
        let mut rank = vec![0; terms.len()];
        for (r, &t) in order.iter().enumerate() {
            rank[t] = r;
        }
        Bounds {
            order,
            rank,
            cum,
            skippable,
            slack: scale * 1e-9,
        }
    }
}
