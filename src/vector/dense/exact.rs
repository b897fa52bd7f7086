//! The exact scan: every live (and allowed) vector scored against the query.
//!
//! Without a filter the rows are scored a block at a time by the row kernels (one call per
//! block, so the AVX2 loop stays inside one `#[target_feature]` function); with a filter the
//! predicate runs first and only allowed rows are scored.

use super::store::{PreparedQuery, Store};
use crate::vector::{Metric, TieBreak, TopK};

/// Rows scored per row-kernel call (384-d: 96 KiB of vectors, 1 KiB of results).
const BLOCK: usize = 64;

/// The best `k` live vectors `allow` accepts (by caller id), best first.
pub(crate) fn scan(
    store: &Store,
    query: &PreparedQuery,
    k: usize,
    allow: Option<&dyn Fn(u32) -> bool>,
    tie: Option<TieBreak<'_>>,
) -> Vec<(u32, f32)> {
    let mut top = TopK::new(k, tie);
    if k == 0 {
        return Vec::new();
    }
    match allow {
        Some(allow) => {
            for slot in 0..store.slots() as u32 {
                if store.is_live(slot) && allow(store.id(slot)) {
                    top.push(store.id(slot), store.score(query, slot));
                }
            }
        }
        None => {
            let kernels = store.kernels();
            let rows_kernel = match store.metric() {
                Metric::Euclidean => kernels.l2sq_rows,
                _ => kernels.dot_rows,
            };
            let dim = store.dim();
            let mut raw = [0.0f32; BLOCK];
            let slots = store.slots();
            let mut start = 0;
            while start < slots {
                let n = BLOCK.min(slots - start);
                let rows = &store.data()[start * dim..(start + n) * dim];
                rows_kernel(&query.values, rows, &mut raw[..n]);
                for (i, r) in raw[..n].iter().enumerate() {
                    let slot = (start + i) as u32;
                    if store.is_live(slot) {
                        top.push(store.id(slot), store.score_from_raw(*r, slot));
                    }
                }
                start += n;
            }
        }
    }
    top.into_sorted_vec()
}
