//! The base-layer walk of [`Traversal::Bits`](crate::vector::dense::Traversal::Bits), after
//! SymphonyQG (Gou et al., SIGMOD 2025): the frontier is a bounded pool of the `ef` best
//! *estimated* distances, each node is scored exactly once, when the walk expands it, and the
//! results are ranked by those exact scores. So a visit costs one cache line (the neighbour's
//! 1-bit code) instead of a whole row, and only the ~`ef` expanded nodes read theirs.
//!
//! The walk ends when every node in the pool has been expanded. A node is estimated once (it
//! is marked visited when first seen), so a neighbour whose estimate missed the pool is not
//! offered again; the exact walk behaves the same way with exact distances.

use super::{BitScorer, NativeGraph, Near, Scorer, Scratch, load};
use crate::vector::dense::store::Store;

/// The frontier: up to `cap` entries sorted by estimate, each expanded at most once.
#[derive(Default)]
pub(super) struct Pool {
    entries: Vec<(Near, bool)>,
    cap: usize,
    /// No entry before this index is unexpanded.
    next: usize,
}

impl Pool {
    fn reset(&mut self, cap: usize) {
        self.entries.clear();
        self.cap = cap.max(1);
        self.next = 0;
    }

    /// Offers `near`; it is kept (and `true` returned) if the pool is not full or it beats
    /// the worst entry. Insertion shifts entries one by one from the end: the pool is short
    /// (`ef`) and a new entry usually lands near the end, so this beats a binary search and a
    /// `memmove` call (measured: offers and their `memmove` were 15% of a search).
    #[inline(always)]
    fn offer(&mut self, near: Near) -> bool {
        let full = self.entries.len() >= self.cap;
        match self.entries.last() {
            Some((worst, _)) if full && !before(near, *worst) => return false,
            _ => {}
        }
        if full {
            self.entries.pop();
        }
        let mut at = self.entries.len();
        self.entries.push((near, false));
        while at > 0 && before(near, self.entries[at - 1].0) {
            self.entries[at] = self.entries[at - 1];
            at -= 1;
        }
        self.entries[at] = (near, false);
        self.next = self.next.min(at);
        true
    }

    /// The distance an offer must not exceed to be kept: the worst entry's when full.
    #[inline(always)]
    fn worst(&self) -> f32 {
        match self.entries.last() {
            Some((worst, _)) if self.entries.len() >= self.cap => worst.dist,
            _ => f32::INFINITY,
        }
    }

    /// The entry `pop` would return next, if nothing better arrives first.
    #[inline]
    fn peek(&self) -> Option<u32> {
        self.entries[self.next.min(self.entries.len())..]
            .iter()
            .find(|(_, expanded)| !expanded)
            .map(|(near, _)| near.slot)
    }

    /// The best unexpanded entry, now marked expanded.
    #[inline]
    fn pop(&mut self) -> Option<Near> {
        while let Some((near, expanded)) = self.entries.get_mut(self.next) {
            self.next += 1;
            if !*expanded {
                *expanded = true;
                return Some(*near);
            }
        }
        None
    }
}

/// `a` sorts before `b`: nearer, or as near with a lower slot (`Near`'s order, with plain
/// float comparisons: estimates are never NaN).
#[inline(always)]
fn before(a: Near, b: Near) -> bool {
    a.dist < b.dist || (a.dist == b.dist && a.slot < b.slot)
}

impl NativeGraph {
    /// Walks the base layer from `entry` on estimates; leaves the best `k` accepted expanded
    /// nodes, by exact distance, in `scratch.results`.
    #[allow(clippy::too_many_arguments)] // the hot loop's inputs, kept as plain arguments
    pub(super) fn search_estimated(
        &self,
        store: &Store,
        estimates: &BitScorer<'_>,
        query: &[f32],
        entry: u32,
        ef: usize,
        k: usize,
        accept: Option<&dyn Fn(u32) -> bool>,
        scratch: &mut Scratch,
    ) {
        let scorer = super::ExactScorer { store, query };
        scratch.begin(store.slots().max(self.levels.len()));
        let mut pool = std::mem::take(&mut scratch.pool);
        pool.reset(ef);
        scratch.visit(entry);
        pool.offer(Near {
            dist: estimates.dist(entry),
            slot: entry,
        });
        let mut fresh = std::mem::take(&mut scratch.fresh);
        let mut kept = std::mem::take(&mut scratch.kept);
        let mut dists = std::mem::take(&mut scratch.estimates);
        // Software-pipelined: expanded nodes are scored exactly four at a time (`dist4`: the
        // four rows stream side by side), one to four expansions after their own, so their rows
        // (prefetched when they were expanded) have time to arrive, and the codes of the current
        // node's neighbours arrive while they are scored. Lists are prefetched when a node
        // enters the pool.
        let mut pending = [0u32; 4];
        let mut waiting = 0;
        while let Some(c) = pool.pop() {
            fresh.clear();
            for n in self.neighbours(c.slot, 0).iter().map(load) {
                if scratch.visit(n) {
                    fresh.push(n);
                    estimates.prefetch(n);
                }
            }
            super::prefetch_row(store.data(), c.slot as usize * store.dim(), store.dim());
            store.prefetch_inv_norm(c.slot);
            // The likely next expansion: its neighbours' codes start arriving now (its list
            // was prefetched when it entered the pool).
            if let Some(next) = pool.peek() {
                for n in self.neighbours(next, 0).iter().map(load) {
                    estimates.prefetch(n);
                }
            }
            pending[waiting] = c.slot;
            waiting += 1;
            if waiting == 4 {
                waiting = 0;
                let dists = scorer.dist4(pending);
                for (slot, dist) in pending.into_iter().zip(dists) {
                    Self::keep_exact(Near { dist, slot }, k, accept, scratch);
                }
            }
            // Estimates first, kept without a branch when they beat the pool's worst entry as
            // of now (admission is a coin flip the predictor cannot learn: measured, its
            // mispredictions were 8% of a search); then the few kept are offered.
            dists.resize(fresh.len(), 0.0);
            estimates.dists(&fresh, &mut dists);
            let worst = pool.worst();
            kept.clear();
            kept.resize(fresh.len(), Near { dist: 0.0, slot: 0 });
            let mut m = 0;
            for (&n, &dist) in fresh.iter().zip(&dists) {
                kept[m] = Near { dist, slot: n };
                m += usize::from(dist <= worst);
            }
            for &near in &kept[..m] {
                if pool.offer(near) {
                    self.prefetch_links(near.slot, 0);
                }
            }
        }
        for &slot in &pending[..waiting] {
            let dist = scorer.dist(slot);
            Self::keep_exact(Near { dist, slot }, k, accept, scratch);
        }
        scratch.fresh = fresh;
        scratch.kept = kept;
        scratch.estimates = dists;
        scratch.pool = pool;
    }

    /// Offers an expanded node, scored exactly, to the `k` results if accepted.
    #[inline(always)]
    fn keep_exact(
        near: Near,
        k: usize,
        accept: Option<&dyn Fn(u32) -> bool>,
        scratch: &mut Scratch,
    ) {
        if !accept.is_none_or(|f| f(near.slot)) {
            return;
        }
        if scratch.results.len() < k {
            scratch.results.push(near);
        } else if scratch.results.peek().is_some_and(|worst| near < *worst) {
            scratch.results.pop();
            scratch.results.push(near);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(dist: f32, slot: u32) -> Near {
        Near { dist, slot }
    }

    #[test]
    fn the_pool_keeps_the_best_and_expands_each_once_in_order() {
        let mut pool = Pool::default();
        pool.reset(3);
        for (d, s) in [(5.0, 5), (1.0, 1), (3.0, 3), (4.0, 4)] {
            assert!(pool.offer(near(d, s)));
        }
        // Full at 3: 4 pushed 5 out; 6 is not taken.
        assert!(!pool.offer(near(6.0, 6)));
        assert_eq!(pool.pop(), Some(near(1.0, 1)));
        // A better entry arriving after a pop is expanded next.
        assert!(pool.offer(near(0.5, 0)));
        assert_eq!(pool.pop(), Some(near(0.5, 0)));
        assert_eq!(pool.pop(), Some(near(3.0, 3)));
        // 4 fell out when 0 arrived (cap 3: 0, 1, 3).
        assert_eq!(pool.pop(), None);
    }
}
