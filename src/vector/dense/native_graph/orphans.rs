//! Relinking nodes that no base-layer list points to.
//!
//! A node no list points to is never reached by a search, so no search returns it and no
//! later insertion links to it. Inserting can leave such orphans: when a full list is pruned
//! with the heuristic, a neighbour is dropped because a nearer kept node "covers" it, which
//! assumes the covering node links to it. On one thread that nearly always holds. With
//! several, the covering node may have searched before the dropped one was reachable, and
//! not know it. Measured before this pass: a parallel build of 3,000 8-d vectors on 8
//! threads left one node of the first 1,000 unlinked in about 1 of 60 builds (node 88, once
//! linked only from node 4, was pruned from 4's list by node 106, which had not seen it).
//!
//! So after every batch, the nodes that were pruned from some list, and the batch's own
//! nodes, are checked. Most have a neighbour that links back to them and are fine. For the
//! rest, one pass over all lists counts the links into every node; each with none is
//! searched for as if inserted again, its list is rechosen from its old neighbours and the
//! search's, and the search's nearest nodes link back to it. If the heuristic prunes it from
//! all of those, it replaces the farthest neighbour of its nearest node that has another
//! link in. Only the base layer is checked: upper layers only route the descent.

use super::{ExactScorer, NativeGraph, Near, load};
use crate::vector::dense::store::Store;

impl NativeGraph {
    /// Relinks every node of `suspects` (nodes that may have lost their last link in) that
    /// no live node's base-layer list points to, except the entry point.
    pub(super) fn relink_orphans(&self, store: &Store, mut suspects: Vec<u32>) {
        suspects.sort_unstable();
        suspects.dedup();
        suspects.retain(|&s| self.could_be_orphan(store, s) && !self.has_mutual_link(store, s));
        if suspects.is_empty() {
            return;
        }
        let mut links_in = vec![0u32; self.levels.len()];
        for p in 0..self.levels.len() as u32 {
            if store.is_live(p) {
                for n in self.neighbours(p, 0).iter().map(load) {
                    links_in[n as usize] += 1;
                }
            }
        }
        let mut orphans: Vec<u32> = suspects
            .into_iter()
            .filter(|&s| links_in[s as usize] == 0)
            .collect();

        // Each relink gives its node a link in; pruning may orphan another, rarely. Bounded
        // all the same.
        let mut budget = 4 * orphans.len() + 16;
        while let Some(o) = orphans.pop() {
            if budget == 0 {
                break;
            }
            budget -= 1;
            if links_in[o as usize] == 0 && self.could_be_orphan(store, o) {
                self.relink(store, o, &mut links_in, &mut orphans);
            }
        }
    }

    /// Whether `s` is a live node of the graph other than the entry point.
    fn could_be_orphan(&self, store: &Store, s: u32) -> bool {
        (s as usize) < self.levels.len() && store.is_live(s) && self.entry != Some(s)
    }

    /// Whether one of `s`'s base-layer neighbours links back to it (the common case).
    fn has_mutual_link(&self, store: &Store, s: u32) -> bool {
        self.neighbours(s, 0)
            .iter()
            .map(load)
            .any(|n| store.is_live(n) && self.neighbours(n, 0).iter().any(|w| load(w) == s))
    }

    /// Links orphan `o` in (see the module docs), keeping `links_in` current and pushing
    /// any node left with no link in onto `orphans`.
    fn relink(&self, store: &Store, o: u32, links_in: &mut [u32], orphans: &mut Vec<u32>) {
        let Some(entry) = self.entry else {
            return;
        };
        let query = store.graph_vector(o);
        let scorer = ExactScorer {
            store,
            query: &query,
        };
        let cur = self.descend(&scorer, entry, self.max_level, 0);
        let mut scratch = self.take_scratch();
        self.search_layer(
            store,
            &scorer,
            cur,
            self.ef_construction,
            0,
            None,
            &mut scratch,
        );
        let mut found: Vec<Near> = scratch.results.drain().collect();
        self.give_scratch(scratch);
        found.retain(|n| n.slot != o && store.is_live(n.slot));
        found.sort_unstable();
        let mut chosen = Vec::new();
        Self::select(store, &found, self.m, &mut chosen);

        // Its own list: rechosen from the old one and the search's nodes.
        let old = self.links(o, 0);
        let mut candidates: Vec<Near> = found;
        for &n in &old {
            if store.is_live(n) && !candidates.iter().any(|c| c.slot == n) {
                candidates.push(Near {
                    dist: Self::dist_nodes(store, o, n),
                    slot: n,
                });
            }
        }
        candidates.sort_unstable();
        let mut list = Vec::new();
        Self::select(store, &candidates, self.m0, &mut list);
        self.set_links(o, 0, &list);
        for &n in &list {
            links_in[n as usize] += 1;
        }
        for n in old {
            links_in[n as usize] -= 1;
            if links_in[n as usize] == 0 {
                orphans.push(n);
            }
        }

        // Links back, as from an insertion.
        let mut dropped = Vec::new();
        for &n in &chosen {
            dropped.clear();
            if self.add_link(store, n, o, 0, self.m0, &mut dropped) {
                links_in[o as usize] += 1;
            }
            for &d in &dropped {
                links_in[d as usize] -= 1;
                if links_in[d as usize] == 0 {
                    orphans.push(d);
                }
            }
        }
        if links_in[o as usize] > 0 {
            return;
        }
        // Pruned everywhere: take the place of a neighbour that another node links to.
        for &n in &chosen {
            if self.take_place(store, n, o, links_in) {
                return;
            }
        }
    }

    /// Puts `o` on `n`'s base-layer list in place of the neighbour farthest from `n` among
    /// those with another link in (`links_in` above 1); false if there is none.
    pub(super) fn take_place(&self, store: &Store, n: u32, o: u32, links_in: &mut [u32]) -> bool {
        let mut list = self.links(n, 0);
        let farthest = list
            .iter()
            .enumerate()
            .filter(|&(_, &s)| links_in[s as usize] > 1)
            .map(|(i, &s)| (Self::dist_nodes(store, n, s), i))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let Some((_, i)) = farthest else {
            return false;
        };
        links_in[list[i] as usize] -= 1;
        list[i] = o;
        self.set_links(n, 0, &list);
        links_in[o as usize] += 1;
        true
    }
}
