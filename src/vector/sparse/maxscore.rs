//! Exact top-k by MaxScore dynamic pruning (Turtle & Flood 1995, document-at-a-time as in
//! Lucene and PISA), made exact for negative values, ties and float rounding.
//!
//! Query terms are sorted by their score upper bound `ub_t = max(w_t * max_t, w_t * min_t)`
//! (clamped at 0, so terms with negative contributions never lower a bound). The shortest prefix
//! of that order whose summed bounds cannot reach the current k-th score is *non-essential*: a
//! document found only there cannot enter, so candidates come from the essential lists alone,
//! and non-essential lists are only probed (`seek`) for those candidates, highest bound first,
//! abandoning a candidate as soon as its partial score plus the remaining bounds falls short.
//!
//! Exactness:
//! - A bound prunes only when it is **strictly** below the k-th score after rounding to `f32`
//!   (a document scoring equal to the threshold may still win on the tie-break).
//! - Partial sums are formed in a different order than final scores, so bounds carry a slack
//!   of `1e-9 ×` the largest possible score magnitude, far above `f64` rounding error.
//! - The final score of every scored document is recomputed in query-term order (see
//!   [`SparseIndex::search`](super::SparseIndex::search)), so it does not depend on the path
//!   that found it.

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

pub(super) fn search_daat(
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

    let ub: Vec<f64> = terms
        .iter()
        .map(|t| {
            let hi = t.weight * f64::from(t.postings.max());
            let lo = t.weight * f64::from(t.postings.min());
            hi.max(lo).max(0.0)
        })
        .collect();
    let scale: f64 = terms
        .iter()
        .map(|t| {
            (t.weight * f64::from(t.postings.max()))
                .abs()
                .max((t.weight * f64::from(t.postings.min())).abs())
        })
        .sum();
    let slack = scale * 1e-9;
    // Terms by ascending bound (ties by query position: deterministic).
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| ub[a].total_cmp(&ub[b]).then(a.cmp(&b)));
    // cum[j]: bound on the summed contributions of order[0..=j].
    let cum: Vec<f64> = order
        .iter()
        .scan(0.0, |acc, &t| {
            *acc += ub[t];
            Some(*acc)
        })
        .collect();
    // Could a document whose score is at most `bound` still enter the top-k?
    let may_enter = |top: &TopK<'_>, bound: f64| match top.threshold() {
        None => true,
        Some(thr) => ((bound + slack) as f32) >= thr,
    };

    let mut cursors: Vec<Cursor<'_>> = terms.iter().map(|t| t.postings.cursor()).collect();
    let mut contrib = vec![0.0f64; n];
    let mut hit = vec![false; n];
    let mut non_essential = 0;

    while non_essential < n {
        let cur = order[non_essential..]
            .iter()
            .map(|&t| cursors[t].doc())
            .min()
            .unwrap_or(END);
        if cur == END {
            break;
        }
        let doc = cur as u32;
        stats.candidates += 1;
        if !allow.is_none_or(|f| f(doc)) {
            for &t in &order[non_essential..] {
                if cursors[t].doc() == cur {
                    cursors[t].advance();
                }
            }
            continue;
        }
        let mut partial = 0.0f64;
        for &t in &order[non_essential..] {
            let c = &mut cursors[t];
            if c.doc() == cur {
                let x = terms[t].weight * f64::from(c.val());
                contrib[t] = x;
                hit[t] = true;
                partial += x;
                c.advance();
            }
        }
        let mut complete = true;
        for j in (0..non_essential).rev() {
            if !may_enter(&top, partial + cum[j]) {
                complete = false;
                break;
            }
            let t = order[j];
            let c = &mut cursors[t];
            c.seek(doc);
            if c.doc() == cur {
                let x = terms[t].weight * f64::from(c.val());
                contrib[t] = x;
                hit[t] = true;
                partial += x;
            }
        }
        // The canonical score: contributions summed in query-term order.
        let mut score = 0.0f64;
        for t in 0..n {
            if hit[t] {
                score += contrib[t];
                hit[t] = false;
            }
        }
        if complete {
            stats.scored += 1;
            if top.push(doc, score as f32) {
                while non_essential < n && !may_enter(&top, cum[non_essential]) {
                    non_essential += 1;
                }
            }
        }
    }
    (top.into_sorted_vec(), stats)
}

/// Documents per window of [`search`]: the accumulator (`f64`) is 32 KiB, about L1 size.
const WINDOW: usize = 4096;

/// Window-at-a-time MaxScore (as Lucene's `MaxScoreBulkScorer`): within a window of ids the
/// essential lists are walked term-at-a-time into a dense accumulator, then the touched ids are
/// visited in ascending order, bounded, probed in the non-essential lists, and the survivors get
/// their canonical score. The essential / non-essential split is revised between windows.
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
    let may_enter = |top: &TopK<'_>, bound: f64| match top.threshold() {
        None => true,
        Some(thr) => ((bound + bounds.slack) as f32) >= thr,
    };

    let mut walk: Vec<Cursor<'_>> = terms.iter().map(|t| t.postings.cursor()).collect();
    let mut probe: Vec<Cursor<'_>> = walk.clone();
    let mut acc = vec![0.0f64; WINDOW];
    let mut touched = vec![0u64; WINDOW / 64];
    let mut non_essential = 0;

    while non_essential < n {
        let order = &bounds.order;
        let base = order[non_essential..]
            .iter()
            .map(|&t| walk[t].doc())
            .min()
            .unwrap_or(END);
        if base == END {
            break;
        }
        let end = base + WINDOW as u64;
        for &t in &order[non_essential..] {
            let w = terms[t].weight;
            let c = &mut walk[t];
            loop {
                let d = c.doc();
                if d >= end {
                    break;
                }
                let i = (d - base) as usize;
                acc[i] += w * f64::from(c.val());
                touched[i / 64] |= 1 << (i % 64);
                c.advance();
            }
        }
        // Bound on the non-essential lists together.
        let rest = if non_essential > 0 { bounds.cum[non_essential - 1] } else { 0.0 };
        for word in 0..touched.len() {
            let mut bits = std::mem::take(&mut touched[word]);
            while bits != 0 {
                let i = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let mut partial = std::mem::take(&mut acc[i]);
                let doc = (base + i as u64) as u32;
                stats.candidates += 1;
                if !may_enter(&top, partial + rest) || !allow.is_none_or(|f| f(doc)) {
                    continue;
                }
                stats.probed += 1;
                let mut complete = true;
                for j in (0..non_essential).rev() {
                    if !may_enter(&top, partial + bounds.cum[j]) {
                        complete = false;
                        break;
                    }
                    let t = order[j];
                    let c = &mut probe[t];
                    c.seek(doc);
                    if c.doc() == u64::from(doc) {
                        partial += terms[t].weight * f64::from(c.val());
                    }
                }
                if !complete {
                    continue;
                }
                stats.scored += 1;
                if !may_enter(&top, partial) {
                    continue;
                }
                // The canonical score: contributions summed in query-term order.
                let mut score = 0.0f64;
                for (t, c) in probe.iter_mut().enumerate() {
                    c.seek(doc);
                    if c.doc() == u64::from(doc) {
                        score += terms[t].weight * f64::from(c.val());
                    }
                }
                top.push(doc, score as f32);
            }
        }
        while non_essential < n && !may_enter(&top, bounds.cum[non_essential]) {
            non_essential += 1;
        }
    }
    (top.into_sorted_vec(), stats)
}

/// Per-term score bounds of a query, ordered for MaxScore.
struct Bounds {
    /// Term positions by ascending bound (ties by position: deterministic).
    order: Vec<usize>,
    /// `cum[j]`: bound on the summed contributions of `order[0..=j]`.
    cum: Vec<f64>,
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
        order.sort_by(|&a, &b| ub[a].total_cmp(&ub[b]).then(a.cmp(&b)));
        let cum = order
            .iter()
            .scan(0.0, |acc, &t| {
                *acc += ub[t];
                Some(*acc)
            })
            .collect();
        Bounds { order, cum, slack: scale * 1e-9 }
    }
}
