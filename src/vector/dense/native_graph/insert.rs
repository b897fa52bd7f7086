//! Insertion into the native graph, from one thread or from several at once.
//!
//! A batch first gets its levels, drawn from the graph's seeded generator in batch order, and
//! room in the link arrays; then its nodes go in, each as in the paper: a greedy descent to
//! its top level, a beam search of `ef_construction` on every level below, the heuristic's
//! choice of neighbours, and links back from them (pruned with the same heuristic when full).
//!
//! A node's own lists, on every level, are stored before any neighbour links back to it: until
//! then no other insertion can reach it, so none starts a search from a half-built node or
//! has its link to the node overwritten (measured before this order: a parallel build of
//! 3,000 8-d vectors left 1–3 nodes that no list pointed to).
//!
//! With more than one thread the nodes are handed out one at a time from a shared counter and
//! inserted concurrently, as hnswlib does: every writer of a node's lists holds that node's
//! lock (one byte per node, only for the batch), and the rare node whose level passes the
//! current top holds the entry-point lock for its whole insertion, so a second one waits and
//! starts from it. Readers take no lock: link words are atomics, a list's count is published
//! after its neighbours (see `NativeGraph::neighbours`), so a search racing a writer may see
//! an older or a half-rewritten list of valid neighbours, never an invalid slot. No node
//! holds two node locks at once, so there is no lock order to get wrong.
//!
//! After the batch, `relink_orphans` (see `orphans.rs`) links in any node that pruning left
//! on no base-layer list: racing inserts leave a few such nodes on small graphs, and short
//! lists on data without structure leave some on one thread too.
//!
//! One thread gives the same graph for the same inserts, bit for bit. Several threads give a
//! graph as good but not the same one: which node sees which depends on timing. Measured on
//! minilm-text (43k × 384-d, M=16, efC=200; `benches/peers/scaling.sh`, two threads against
//! one, alternated, idle 2-core AMD EPYC): 3,265 → 6,595 vectors/s (2.02×), recall@10 at ef 64
//! 0.994 for both builds; 1.98× on 500k generated vectors (`docs/peers/scaling.md`).

use super::{ExactScorer, NO_UPPER, NativeGraph, Near, Scratch};
use crate::vector::dense::store::{Store, grow_for};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Sorts and dedups `nodes` whenever it reaches `limit` (at least 4,096), then sets the limit
/// to twice the distinct count. A build prunes the same nodes many times: on minilm-text
/// (43k, two threads) 343,560 prunings (8 per insert, 32 MB at a million) of 35,552 distinct
/// nodes, a list that now ends at 74,073.
fn keep_distinct(nodes: &mut Vec<u32>, limit: &mut usize) {
    if nodes.len() >= (*limit).max(1 << 12) {
        nodes.sort_unstable();
        nodes.dedup();
        *limit = 2 * nodes.len();
    }
}

/// The entry point and the top level, shared by the inserting threads.
struct Top {
    entry: Option<u32>,
    max_level: u8,
}

/// What every inserting thread shares.
struct Insertion<'a> {
    graph: &'a NativeGraph,
    store: &'a Store,
    /// One lock per slot; empty on one thread, where nothing needs locking.
    locks: &'a [Mutex<()>],
    top: &'a Mutex<Top>,
}

impl NativeGraph {
    /// Inserts `slots` (already in `store`, not yet in the graph) on up to `threads` threads.
    pub(crate) fn insert_batch(&mut self, store: &Store, slots: &[u32], threads: usize) {
        for &slot in slots {
            self.make_room(slot);
        }
        let top = Mutex::new(Top {
            entry: self.entry,
            max_level: self.max_level,
        });
        // Several threads over a store with tombstones too. Until removals repaired every
        // link into a removed node (`NativeGraph::remove_node`), batches there stayed on one
        // thread: the churn proptest of `tests/dense_delete.rs` lost recall on two (0.84-0.88).
        let threads = threads.clamp(1, slots.len().max(1));
        // Nodes pruned from some base-layer list: with the batch's own nodes, the ones that
        // may have lost their last link in (see `relink_orphans`).
        let mut dropped = Vec::new();
        let graph = &*self;
        if threads == 1 {
            let insertion = Insertion {
                graph,
                store,
                locks: &[],
                top: &top,
            };
            let mut scratch = graph.take_scratch();
            let mut limit = 0;
            for &slot in slots {
                insertion.insert(slot, &mut scratch, &mut dropped);
                keep_distinct(&mut dropped, &mut limit);
            }
            graph.give_scratch(scratch);
        } else {
            let locks: Vec<Mutex<()>> = (0..graph.levels.len()).map(|_| Mutex::new(())).collect();
            let next = AtomicUsize::new(0);
            let insertion = Insertion {
                graph,
                store,
                locks: &locks,
                top: &top,
            };
            std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        scope.spawn(|| {
                            let mut scratch = graph.take_scratch();
                            let (mut dropped, mut limit) = (Vec::new(), 0);
                            while let Some(&slot) = slots.get(next.fetch_add(1, Ordering::Relaxed))
                            {
                                insertion.insert(slot, &mut scratch, &mut dropped);
                                keep_distinct(&mut dropped, &mut limit);
                            }
                            graph.give_scratch(scratch);
                            dropped
                        })
                    })
                    .collect();
                for worker in workers {
                    match worker.join() {
                        Ok(more) => dropped.extend(more),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
            });
        }
        let top = top.into_inner();
        self.entry = top.entry;
        self.max_level = top.max_level;
        dropped.extend_from_slice(slots);
        self.relink_orphans(store, dropped);
    }

    /// Draws `slot`'s level and makes room for its lists (all empty).
    fn make_room(&mut self, slot: u32) {
        let level = self.random_level();
        let s = slot as usize;
        if self.levels.len() <= s {
            let words = (s + 1) * (1 + self.m0);
            grow_for(&mut self.links0, words);
            self.links0.resize_with(words, AtomicU32::default);
            grow_for(&mut self.levels, s + 1);
            self.levels.resize(s + 1, 0);
            grow_for(&mut self.upper_offset, s + 1);
            self.upper_offset.resize(s + 1, NO_UPPER);
        }
        self.levels[s] = level;
        if level > 0 {
            let offset = u32::try_from(self.upper.len()).expect(
                "upper-layer words stay below 2^32: about n/M nodes of M+1 words per layer",
            );
            self.upper_offset[s] = offset;
            let words = self.upper.len() + level as usize * (1 + self.m);
            self.upper.resize_with(words, AtomicU32::default);
        }
        self.points += 1;
    }
}

impl Insertion<'_> {
    fn lock(&self, slot: u32) -> Option<parking_lot::MutexGuard<'_, ()>> {
        self.locks.get(slot as usize).map(Mutex::lock)
    }

    /// Inserts one node whose level and room `make_room` prepared.
    fn insert(&self, slot: u32, scratch: &mut Scratch, dropped: &mut Vec<u32>) {
        let (graph, store) = (self.graph, self.store);
        let level = graph.levels[slot as usize];
        let top = self.top.lock();
        let (entry, max_level) = (top.entry, top.max_level);
        // A node about to become the entry point keeps the lock until it is linked in.
        let mut top = (entry.is_none() || level > max_level).then_some(top);
        let Some(entry) = entry else {
            if let Some(top) = &mut top {
                top.entry = Some(slot);
                top.max_level = level;
            }
            return;
        };
        let query = store.graph_vector(slot);
        let scorer = ExactScorer {
            store,
            query: &query,
        };
        let mut cur = graph.descend(&scorer, entry, max_level, level);
        let mut sorted = Vec::new();
        // The node's lists, top level first. They are all chosen and stored before any node
        // links back to it, so no one reaches the node while a level of it is still empty
        // (a search entering there would see nothing else, and its own links back would be
        // overwritten). On one thread this is the paper's order too: a level's links back
        // touch only that level, which the searches of the levels below never read.
        let mut lists: Vec<(u8, Vec<u32>)> = Vec::new();
        for l in (0..=level.min(max_level)).rev() {
            graph.candidates(store, &scorer, cur, l, slot, scratch, &mut sorted);
            if let Some(best) = sorted.first() {
                cur = *best;
            }
            let mut chosen = Vec::new();
            NativeGraph::select(store, &sorted, graph.m, &mut chosen);
            lists.push((l, chosen));
        }
        {
            let _guard = self.lock(slot);
            for (l, chosen) in &lists {
                graph.set_links(slot, *l, chosen);
            }
        }
        for (l, chosen) in &lists {
            let cap = if *l == 0 { graph.m0 } else { graph.m };
            for &n in chosen {
                let _guard = self.lock(n);
                graph.add_link(store, n, slot, *l, cap, dropped);
            }
        }
        if let Some(top) = &mut top {
            top.entry = Some(slot);
            top.max_level = level;
        }
    }
}

impl NativeGraph {
    /// The nodes a beam search of `ef_construction` from `from` finds on `level` for `slot`'s
    /// vector, nearest first, into `out`, without `slot` itself and the tombstoned slots
    /// (walkable, never chosen as new neighbours); returns whether `slot` was among them.
    #[allow(clippy::too_many_arguments)] // the search's inputs and its two buffers
    pub(super) fn candidates(
        &self,
        store: &Store,
        scorer: &ExactScorer<'_>,
        from: Near,
        level: u8,
        slot: u32,
        scratch: &mut Scratch,
        out: &mut Vec<Near>,
    ) -> bool {
        self.search_layer(
            store,
            scorer,
            from,
            self.ef_construction,
            level,
            None,
            scratch,
        );
        out.clear();
        out.extend(scratch.results.drain());
        let found = out.iter().any(|n| n.slot == slot);
        out.retain(|n| n.slot != slot && store.is_live(n.slot));
        out.sort_unstable();
        found
    }

    /// Adds `new` to `node`'s list at `level`, pruning with the heuristic when full; returns
    /// whether `new` is on the list afterwards. Nodes pruned from a base-layer list are pushed
    /// onto `dropped`. During a parallel build the caller holds `node`'s lock.
    pub(super) fn add_link(
        &self,
        store: &Store,
        node: u32,
        new: u32,
        level: u8,
        cap: usize,
        dropped: &mut Vec<u32>,
    ) -> bool {
        let mut list = self.links(node, level);
        if list.contains(&new) {
            return true;
        }
        if list.len() < cap {
            list.push(new);
            self.set_links(node, level, &list);
            return true;
        }
        let mut candidates: Vec<Near> = list
            .iter()
            .chain(std::iter::once(&new))
            .map(|&s| Near {
                dist: NativeGraph::dist_nodes(store, node, s),
                slot: s,
            })
            .collect();
        candidates.sort_unstable();
        NativeGraph::select(store, &candidates, cap, &mut list);
        self.set_links(node, level, &list);
        if level == 0 {
            dropped.extend(
                candidates
                    .iter()
                    .map(|c| c.slot)
                    .filter(|&s| s != new && !list.contains(&s)),
            );
        }
        list.contains(&new)
    }
}
