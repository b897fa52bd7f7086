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
//! when the lists it skips hold at least three quarters of the query's postings (a cost gate;
//! measurements in the [parent module](super)).
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

/// Documents per window of [`search`]: the accumulator (`f64`) is 128 KiB, in L2. Measured on
/// minilm-text: 4,096 (L1 size) spends more on window and segment boundaries than it saves,
/// 65,536 makes the bitmap-marked first window of a query with zero or negative values long.
/// Crossing ids are `u16` offsets, so it must stay at most 65,536.
const WINDOW: usize = 16384;
const WORDS: usize = WINDOW / 64;

/// Reusable buffers of [`search`], so that a warm search allocates only its result: a window's
/// accumulator, its crossing list and bitmap, per-term positions and the query's bounds.
/// Between searches the accumulator and the bitmap are all zero.
pub(super) struct Scratch {
    acc: Box<[f64; WINDOW]>,
    crossed: Box<[u16; 2 * WINDOW]>,
    live: Box<[u64; WORDS]>,
    /// Per term: position of the next posting the essential walk takes.
    walk: Vec<usize>,
    /// Per term: position of its first posting in the current window.
    seg: Vec<usize>,
    bounds: Bounds,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            acc: Box::new([0.0; WINDOW]),
            crossed: Box::new([0; 2 * WINDOW]),
            live: Box::new([0; WORDS]),
            walk: Vec::new(),
            seg: Vec::new(),
            bounds: Bounds::default(),
        }
    }
}

/// Window-at-a-time MaxScore (after Lucene's `MaxScoreBulkScorer`). Per window of ids:
/// 1. the essential lists are walked term-at-a-time into a dense accumulator;
/// 2. each touched id is kept only if its partial score plus the non-essential bounds may enter;
/// 3. the non-essential lists, highest bound first, add their contributions to the survivors,
///    each either by seeking per survivor or by walking its window segment, whichever touches
///    less; survivors are re-bounded after each list;
/// 4. the remaining survivors get their canonical score and are offered to the top-k.
///
/// The essential / non-essential split is revised between windows.
///
/// How step 1 finds the touched ids: when every contribution of the query is `>= 0` and the
/// top-k's threshold leaves a positive cut (see [`entry_cut`]), partial sums only grow, so an
/// id can pass the cut only by crossing it once, at one posting; the scatter notes the crossing
/// ids as it adds, the others are never visited again, and the window's postings are walked a
/// second time to put their accumulator entries back to 0. When every contribution is even
/// `> 0`, the first window (no threshold yet) works the same way with a cut at the smallest
/// positive `f64`: every touched id crosses it. Otherwise (zero or negative contributions,
/// thresholds near zero, and with `STATS`, which counts every touched id) touched ids are
/// marked in a bitmap as they are added and visited one by one.
pub(super) fn search<const STATS: bool>(
    terms: &[QueryTerm<'_>],
    k: usize,
    allow: Option<&dyn Fn(u32) -> bool>,
    tie: Option<TieBreak<'_>>,
    scratch: &mut Scratch,
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
    let Scratch {
        acc,
        crossed,
        live,
        walk,
        seg,
        bounds,
    } = scratch;
    bounds.fill(terms);
    let bounds = &*bounds;
    let order = &bounds.order;
    let may_enter = |top: &TopK<'_>, bound: f64| match top.threshold() {
        None => true,
        Some(thr) => ((bound + bounds.slack) as f32) >= thr,
    };
    // Partial sums never decrease: every weight times every value of its list is >= 0. When
    // every product is even > 0, every touched id has a positive sum and crosses any cut at
    // or below the smallest positive `f64`, so even the first window needs no bitmap.
    let sign = |t: &QueryTerm<'_>, strict: bool| {
        let (lo, hi) = (f64::from(t.postings.min()), f64::from(t.postings.max()));
        let (w, z) = (t.weight, 0.0);
        if strict {
            (w > z && lo > z) || (w < z && hi < z)
        } else {
            (w >= z && lo >= z) || (w <= z && hi <= z)
        }
    };
    let monotone = !STATS && terms.iter().all(|t| sign(t, false));
    let positive = monotone && terms.iter().all(|t| sign(t, true));

    let cursors = || -> Vec<Cursor<'_>> { terms.iter().map(|t| t.postings.cursor()).collect() };
    let (mut probe, mut exact) = (cursors(), cursors());
    walk.clear();
    walk.resize(n, 0);
    seg.clear();
    seg.resize(n, 0);
    // The longest prefix of `order` the threshold allows to skip, and the one skipped.
    let (mut prunable, mut non_essential) = (0, 0);

    while non_essential < n {
        let base = order[non_essential..]
            .iter()
            .map(|&t| {
                terms[t]
                    .postings
                    .docs()
                    .get(walk[t])
                    .map_or(END, |&d| u64::from(d))
            })
            .min()
            .unwrap_or(END);
        if base == END {
            break;
        }
        let end = base + WINDOW as u64;
        let id = |i: usize| (base + i as u64) as u32;
        let rest = if non_essential > 0 {
            bounds.cum[non_essential - 1]
        } else {
            0.0
        };
        // No push happens in steps 1 to 3, so the threshold is read once.
        let thr = top.threshold();
        let passes = |bound: f64| thr.is_none_or(|thr| ((bound + bounds.slack) as f32) >= thr);
        let cut = match thr {
            Some(thr) if monotone => Some(entry_cut(thr, rest, bounds.slack)).filter(|&c| c > 0.0),
            None if positive => Some(f64::from_bits(1)),
            _ => None,
        };

        // 1. Essential lists into the accumulator, in query-term order: when every list is
        //    essential the accumulator already holds the canonical score.
        let mut n_crossed = 0usize;
        for t in 0..n {
            if bounds.rank[t] < non_essential {
                continue;
            }
            let list = terms[t].postings;
            let (docs, vals) = (list.docs(), list.vals());
            let w = terms[t].weight;
            let from = walk[t];
            let to = match cut {
                Some(cut) => scatter_crossing(
                    docs,
                    vals,
                    from,
                    base as u32,
                    w,
                    cut,
                    acc,
                    crossed,
                    &mut n_crossed,
                ),
                None => scatter_marking(docs, vals, from, base as u32, w, acc, live),
            };
            seg[t] = from;
            walk[t] = to;
        }

        // 2. Keep the touched ids whose partial score plus every non-essential bound may
        //    enter (with every list essential, offer them to the top-k right away).
        let mut survivors = 0usize;
        match cut {
            Some(mut cut) if non_essential == 0 => {
                for &i in &crossed[..n_crossed] {
                    let (i, x) = (usize::from(i), acc[usize::from(i)]);
                    stats.scored += 1;
                    if x >= cut
                        && allow.is_none_or(|f| f(id(i)))
                        && top.push(id(i), x as f32)
                        && let Some(thr) = top.threshold()
                    {
                        cut = cut.max(entry_cut(thr, 0.0, bounds.slack));
                    }
                }
            }
            Some(_) => {
                for &i in &crossed[..n_crossed] {
                    let i = usize::from(i);
                    if passes(acc[i] + rest) && allow.is_none_or(|f| f(id(i))) {
                        live[i / 64] |= 1 << (i % 64);
                        survivors += 1;
                    }
                }
            }
            None => {
                for_each_set(&mut live[..], |i| {
                    stats.candidates += 1;
                    let keep = passes(acc[i] + rest) && allow.is_none_or(|f| f(id(i)));
                    if keep {
                        survivors += 1;
                    } else {
                        acc[i] = 0.0;
                    }
                    keep
                });
            }
        }
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
                        // Branch-free (the live test is unpredictable): other ids add ±0,
                        // which leaves them as they are; live ids add their contribution.
                        let is_live = ((live[i / 64] >> (i % 64)) & 1) as f64;
                        acc[i] += is_live * (w * f64::from(c.val()));
                        c.advance();
                    }
                }
                break;
            }
            for_each_set(&mut live[..], |i| {
                c.seek(id(i));
                if c.doc() == u64::from(id(i)) {
                    acc[i] += w * f64::from(c.val());
                }
                true
            });
            let rest = if j > 0 { bounds.cum[j - 1] } else { 0.0 };
            for_each_set(&mut live[..], |i| {
                let keep = passes(acc[i] + rest);
                if !keep {
                    survivors -= 1;
                    acc[i] = 0.0;
                }
                keep
            });
        }

        // 4. Canonical scores of the survivors.
        for_each_set(&mut live[..], |i| {
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

        // 5. After a crossing scatter, the entries the essential lists touched back to 0 by
        //    walking their window segments again (cheaper than clearing the window: it is
        //    about a quarter full at best on minilm-text, and `memset` measured slower).
        if cut.is_some() {
            for t in 0..n {
                if bounds.rank[t] >= non_essential {
                    for &d in &terms[t].postings.docs()[seg[t]..walk[t]] {
                        acc[(d - base as u32) as usize % WINDOW] = 0.0;
                    }
                }
            }
        }
        while prunable < n && !may_enter(&top, bounds.cum[prunable]) {
            prunable += 1;
        }
        // Cost gate: skipping lists pays only when they hold a large share of the postings
        // (three quarters: at half, IDF queries on minilm-text ran 44 µs pruned against 34 µs
        // walking everything); otherwise the bounding and probing cost more than walking
        // them. `prunable` only
        // grows, and so does its share, so the split never moves back (walk cursors of
        // non-essential lists stay behind and must not be walked again).
        if 4 * bounds.skippable[prunable] >= 3 * bounds.skippable[n] {
            non_essential = prunable;
        }
    }
    debug_assert!(acc.iter().all(|&x| x == 0.0) && live.iter().all(|&w| w == 0));
    (top.into_sorted_vec(), stats)
}

/// A cut below which no partial score `x` can pass `((x + rest + slack) as f32) >= thr`.
///
/// The `f32` rounding moves a value by at most `|thr| · 2^-24` (or `2^-150` near zero) and the
/// two `f64` additions by far less, so a margin of `|thr| · 2^-22 + 2^-140` and a second
/// `slack` keep the cut below every passing `x`. Only a positive cut is used: it also keeps out
/// every id the window did not touch (they hold 0).
fn entry_cut(thr: f32, rest: f64, slack: f64) -> f64 {
    let t = f64::from(thr);
    t - t.abs() * 2f64.powi(-22) - 2f64.powi(-140) - rest - 2.0 * slack
}

/// Adds `w · v` of each posting from position `from` with an id in the window starting at
/// `base` into `acc[id - base]`, marking the id in `live`; returns the position of the first
/// posting left. Every id from `from` on is at least `base`.
#[inline(always)]
fn scatter_marking(
    docs: &[u32],
    vals: &[f32],
    from: usize,
    base: u32,
    w: f64,
    acc: &mut [f64; WINDOW],
    live: &mut [u64; WORDS],
) -> usize {
    in_window(docs, vals, from, base, |i, v| {
        acc[i] += w * f64::from(v);
        live[i / 64] |= 1 << (i % 64);
    })
}

/// Calls `add(offset in the window, value)` for the postings from `from` on whose ids fall in
/// the window starting at `base`, four at a time where it can; the position after them.
#[inline(always)]
fn in_window(
    docs: &[u32],
    vals: &[f32],
    from: usize,
    base: u32,
    mut add: impl FnMut(usize, f32),
) -> usize {
    let len = docs.len().min(vals.len());
    let inside = |d: u32| ((d - base) as usize) < WINDOW;
    let at = |d: u32| (d - base) as usize % WINDOW;
    let mut p = from;
    // Ids ascend, so when the fourth is in the window all four are.
    while p + 4 <= len && inside(docs[p + 3]) {
        let (d, v) = (&docs[p..p + 4], &vals[p..p + 4]);
        add(at(d[0]), v[0]);
        add(at(d[1]), v[1]);
        add(at(d[2]), v[2]);
        add(at(d[3]), v[3]);
        p += 4;
    }
    while p < len && inside(docs[p]) {
        add(at(docs[p]), vals[p]);
        p += 1;
    }
    p
}

/// [`scatter_marking`] for monotone partial sums: instead of marking every touched id, notes
/// in `crossed` (from `*n_crossed` on) the ids whose sum reaches `cut` at this posting.
/// Each id crosses at most once, so `crossed` never holds more than `WINDOW` ids.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scatter_crossing(
    docs: &[u32],
    vals: &[f32],
    from: usize,
    base: u32,
    w: f64,
    cut: f64,
    acc: &mut [f64; WINDOW],
    crossed: &mut [u16; 2 * WINDOW],
    n_crossed: &mut usize,
) -> usize {
    let mut n = *n_crossed;
    let p = in_window(docs, vals, from, base, |i, v| {
        let before = acc[i];
        let after = before + w * f64::from(v);
        acc[i] = after;
        // Branch-free: always write, keep the entry only when the sum crossed.
        crossed[n % (2 * WINDOW)] = i as u16;
        n += usize::from((before < cut) & (after >= cut));
    });
    *n_crossed = n;
    p
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

/// Per-term score bounds of a query, ordered for MaxScore (filled per query into reused
/// vectors).
#[derive(Default)]
struct Bounds {
    /// `ub[t]`: bound on the contribution of term `t`, at least 0.
    ub: Vec<f64>,
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
    fn fill(&mut self, terms: &[QueryTerm<'_>]) {
        let mut scale = 0.0f64;
        self.ub.clear();
        self.ub.extend(terms.iter().map(|t| {
            let hi = t.weight * f64::from(t.postings.max());
            let lo = t.weight * f64::from(t.postings.min());
            scale += hi.abs().max(lo.abs());
            hi.max(lo).max(0.0)
        }));
        let ub = &self.ub;
        self.order.clear();
        self.order.extend(0..terms.len());
        // Equal bounds: the longest lists first, so they turn non-essential (skipped) first.
        self.order.sort_unstable_by(|&a, &b| {
            ub[a]
                .total_cmp(&ub[b])
                .then(terms[b].postings.len().cmp(&terms[a].postings.len()))
                .then(a.cmp(&b))
        });
        self.cum.clear();
        self.cum.extend(self.order.iter().scan(0.0, |acc, &t| {
            *acc += ub[t];
            Some(*acc)
        }));
        self.skippable.clear();
        self.skippable.push(0);
        self.skippable.extend(self.order.iter().scan(0, |acc, &t| {
            *acc += terms[t].postings.len();
            Some(*acc)
        }));
        self.rank.clear();
        self.rank.resize(terms.len(), 0);
        for (r, &t) in self.order.iter().enumerate() {
            self.rank[t] = r;
        }
        self.slack = scale * 1e-9;
    }
}
