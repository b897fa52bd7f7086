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
//! One thread leaves orphans too where lists are short and the data has no structure to
//! follow: 20,000 uniform random 128-d vectors inserted one by one with M = 6 left 778 (3.9%)
//! nodes on no list, and a search for a node's own vector found it 461 times in 1,000; after
//! this pass, none and 499, for 8% more build time. With M = 16 the same data left one; on
//! minilm-text (M = 16) no node even needs the search below.
//!
//! So after every batch, the nodes that were pruned from some list, and the batch's own
//! nodes, are checked. Most have a neighbour that links back to them and are fine. Each of
//! the rest is searched for as if inserted again (no pass over all lists: a first version
//! counted every node's links in, which on 20,000 uniform 128-d vectors inserted one by one
//! ran for 7% of the inserts, O(n) each). If the search finds it, it is reachable. If not,
//! its list is rechosen from its old neighbours and the search's, and the search's nearest
//! nodes link back to it; if the heuristic prunes it from all of those, it takes the place of
//! the farthest neighbour of one of them that some other node links to. Nodes this prunes
//! are checked the same way, within a bound. Only the base layer is checked: upper layers
//! only route the descent.
//!
//! Removals orphan nodes too: a removed node's neighbours lose its links once
//! [`NativeGraph::consolidate`] cuts every link into it, and repairs prune. So `remove_node`
//! and the repairs collect those nodes, and `consolidate` checks them last, when no live node
//! links to a removed one any more (a search then walks live nodes only). Measured before:
//! removing two thirds of 4,000 uniform 128-d vectors one by one (M = 6) left 105 of the
//! 1,333 survivors on no list (M = 16: 7), and a search for a survivor's own vector found 928
//! of them; after, none, and 1,054. On minilm-text (`ann_bench --churn 0.3`, two alternated
//! runs) a removal costs 5% more CPU (384 → 403 µs and 368 → 386 µs) and recall after the
//! churn is unchanged.

use super::{ExactScorer, NativeGraph, Near, load};
use crate::vector::dense::store::Store;

impl NativeGraph {
    /// Relinks every node of `suspects` (nodes that may have lost their last link in) that
    /// the entry point's search cannot reach on the base layer.
    pub(super) fn relink_orphans(&self, store: &Store, mut suspects: Vec<u32>) {
        suspects.sort_unstable();
        suspects.dedup();
        // Each relink may prune a few nodes, checked in turn (a look at their neighbours, and
        // a search only for those none links back to): the searches are bounded all the same.
        let mut searches = 2 * suspects.len() + 16;
        while let Some(o) = suspects.pop() {
            if self.could_be_orphan(store, o) && !self.has_link_in(store, o, None) {
                if searches == 0 {
                    break;
                }
                searches -= 1;
                self.relink_if_unreachable(store, o, &mut suspects);
            }
        }
    }

    /// Whether `s` is a live node of the graph other than the entry point.
    fn could_be_orphan(&self, store: &Store, s: u32) -> bool {
        (s as usize) < self.levels.len() && store.is_live(s) && self.entry != Some(s)
    }

    /// Whether one of `s`'s live base-layer neighbours other than `except` links back to it
    /// (the common case; a node may have links in from elsewhere too).
    pub(super) fn has_link_in(&self, store: &Store, s: u32, except: Option<u32>) -> bool {
        self.neighbours(s, 0).iter().map(load).any(|n| {
            Some(n) != except
                && store.is_live(n)
                && self.neighbours(n, 0).iter().any(|w| load(w) == s)
        })
    }

    /// Searches for `o` from the entry point; if it is not found, links it in (see the module
    /// docs), pushing the nodes that pruned onto `suspects`.
    fn relink_if_unreachable(&self, store: &Store, o: u32, suspects: &mut Vec<u32>) {
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
        let mut found = Vec::new();
        let reached = self.candidates(store, &scorer, cur, 0, o, &mut scratch, &mut found);
        self.give_scratch(scratch);
        // Found from elsewhere: reachable. (Found as the descent's landing point only: an
        // upper-layer node, still without a base-layer link in.)
        if reached && cur.slot != o {
            return;
        }
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
        suspects.extend(old.into_iter().filter(|n| !list.contains(n)));

        // Links back, as from an insertion.
        let mut kept = false;
        for &n in &chosen {
            kept |= self.add_link(store, n, o, 0, self.m0, suspects);
        }
        if !kept {
            // Pruned everywhere: take the place of a neighbour that another node links to.
            for &n in &chosen {
                if self.take_place(store, n, o) {
                    return;
                }
            }
        }
    }

    /// Puts `o` on `n`'s base-layer list in place of the neighbour farthest from `n` among
    /// those that some other node links to (see `has_link_in`); false if there is none.
    pub(super) fn take_place(&self, store: &Store, n: u32, o: u32) -> bool {
        let mut list = self.links(n, 0);
        let farthest = list
            .iter()
            .enumerate()
            .filter(|&(_, &s)| self.has_link_in(store, s, Some(n)))
            .map(|(i, &s)| (Self::dist_nodes(store, n, s), i))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let Some((_, i)) = farthest else {
            return false;
        };
        list[i] = o;
        self.set_links(n, 0, &list);
        true
    }
}
