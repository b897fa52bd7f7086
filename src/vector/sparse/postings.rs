//! One term's posting list: the ids holding the term, ascending, with their values, and the
//! value bounds that MaxScore prunes on.

use std::mem::size_of;

/// The documents holding one term, sorted by id, structure-of-arrays (`docs` is what cursors
/// scan and seek in, `vals` is only read for documents that are scored).
///
/// `max` / `min` bound every value in the list. They are kept exact on insert and recomputed
/// when a removal takes out the value that set them, so bounds never go stale.
#[derive(Debug, Clone)]
pub(super) struct PostingList {
    docs: Vec<u32>,
    vals: Vec<f32>,
    max: f32,
    min: f32,
}

impl PostingList {
    pub(super) fn new() -> Self {
        PostingList {
            docs: Vec::new(),
            vals: Vec::new(),
            max: f32::NEG_INFINITY,
            min: f32::INFINITY,
        }
    }

    /// Adds `doc` with `val`, overwriting its value if it is already present.
    ///
    /// Appending (ids growing, the usual case) is O(1); an id below the last one is placed by
    /// binary search and a shift of the tail.
    pub(super) fn insert(&mut self, doc: u32, val: f32) {
        match self.docs.last() {
            None => self.push(doc, val),
            Some(&last) if last < doc => self.push(doc, val),
            Some(_) => match self.docs.binary_search(&doc) {
                Ok(i) => {
                    let old = std::mem::replace(&mut self.vals[i], val);
                    if old == self.max || old == self.min {
                        self.recompute_bounds();
                    } else {
                        self.widen(val);
                    }
                }
                Err(i) => {
                    self.docs.insert(i, doc);
                    self.vals.insert(i, val);
                    self.widen(val);
                }
            },
        }
    }

    fn push(&mut self, doc: u32, val: f32) {
        self.docs.push(doc);
        self.vals.push(val);
        self.widen(val);
    }

    fn widen(&mut self, val: f32) {
        self.max = self.max.max(val);
        self.min = self.min.min(val);
    }

    /// Removes `doc`; returns its value if it was present.
    pub(super) fn remove(&mut self, doc: u32) -> Option<f32> {
        let i = self.docs.binary_search(&doc).ok()?;
        self.docs.remove(i);
        let val = self.vals.remove(i);
        if val == self.max || val == self.min {
            self.recompute_bounds();
        }
        Some(val)
    }

    fn recompute_bounds(&mut self) {
        self.max = f32::NEG_INFINITY;
        self.min = f32::INFINITY;
        for i in 0..self.vals.len() {
            self.widen(self.vals[i]);
        }
    }

    /// `doc`'s value, if it holds the term.
    pub(super) fn get(&self, doc: u32) -> Option<f32> {
        self.docs.binary_search(&doc).ok().map(|i| self.vals[i])
    }

    pub(super) fn len(&self) -> usize {
        self.docs.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The largest value in the list (`-inf` when empty).
    pub(super) fn max(&self) -> f32 {
        self.max
    }

    /// The smallest value in the list (`+inf` when empty).
    pub(super) fn min(&self) -> f32 {
        self.min
    }

    /// The ids, ascending.
    pub(super) fn docs(&self) -> &[u32] {
        &self.docs
    }

    /// The values, beside [`PostingList::docs`].
    pub(super) fn vals(&self) -> &[f32] {
        &self.vals
    }

    pub(super) fn cursor(&self) -> Cursor<'_> {
        Cursor {
            docs: &self.docs,
            vals: &self.vals,
            pos: 0,
        }
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.docs.shrink_to_fit();
        self.vals.shrink_to_fit();
    }

    /// Heap bytes of the two arrays (capacity, not length).
    pub(super) fn heap_bytes(&self) -> usize {
        self.docs.capacity() * size_of::<u32>() + self.vals.capacity() * size_of::<f32>()
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        assert_eq!(self.docs.len(), self.vals.len());
        assert!(self.docs.windows(2).all(|w| w[0] < w[1]), "ids ascending");
        let max = self.vals.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let min = self.vals.iter().copied().fold(f32::INFINITY, f32::min);
        assert_eq!((self.max, self.min), (max, min), "bounds exact");
    }
}

/// Past the last posting. Real ids are `u32`, so a `u64` sentinel cannot collide with one.
pub(super) const END: u64 = u64::MAX;

/// A forward-only position in a posting list.
#[derive(Debug, Clone)]
pub(super) struct Cursor<'a> {
    docs: &'a [u32],
    vals: &'a [f32],
    pos: usize,
}

impl Cursor<'_> {
    /// The current id, or [`END`].
    #[inline]
    pub(super) fn doc(&self) -> u64 {
        self.docs.get(self.pos).map_or(END, |&d| u64::from(d))
    }

    /// The current value; only valid while [`Cursor::doc`] is not [`END`].
    #[inline]
    pub(super) fn val(&self) -> f32 {
        self.vals[self.pos]
    }

    #[inline]
    pub(super) fn advance(&mut self) {
        self.pos += 1;
    }

    /// How many postings from the current one have an id below `end`.
    #[inline]
    pub(super) fn count_below(&self, end: u64) -> usize {
        let rest = &self.docs[self.pos.min(self.docs.len())..];
        rest.partition_point(|&d| u64::from(d) < end)
    }

    /// Moves to the first id `>= target` by galloping (doubling steps, then a binary search in
    /// the last step), so short skips cost O(1) and long ones O(log distance).
    pub(super) fn seek(&mut self, target: u32) {
        let rest = &self.docs[self.pos.min(self.docs.len())..];
        if rest.first().is_none_or(|&d| d >= target) {
            return;
        }
        // Invariant: rest[bound / 2] < target.
        let mut bound = 1;
        while bound < rest.len() && rest[bound] < target {
            bound *= 2;
        }
        let lo = bound / 2;
        let hi = (bound + 1).min(rest.len());
        self.pos += lo + rest[lo..hi].partition_point(|&d| d < target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_out_of_order_keeps_ids_sorted_and_bounds_exact() {
        let mut p = PostingList::new();
        for (d, v) in [(5, 1.0), (2, -3.0), (9, 4.0), (7, 0.5), (2, 2.0)] {
            p.insert(d, v);
            p.check_invariants();
        }
        assert_eq!(p.docs, vec![2, 5, 7, 9]);
        assert_eq!(p.vals, vec![2.0, 1.0, 0.5, 4.0]);
        assert_eq!((p.min(), p.max()), (0.5, 4.0));
    }

    #[test]
    fn removing_the_extreme_tightens_bounds() {
        let mut p = PostingList::new();
        for (d, v) in [(1, 1.0), (2, 9.0), (3, -4.0), (4, 2.0)] {
            p.insert(d, v);
        }
        assert_eq!(p.remove(2), Some(9.0));
        p.check_invariants();
        assert_eq!(p.max(), 2.0);
        assert_eq!(p.remove(3), Some(-4.0));
        assert_eq!(p.min(), 1.0);
        assert_eq!(p.remove(3), None);
        assert_eq!(p.get(4), Some(2.0));
        assert_eq!(p.get(2), None);
    }

    #[test]
    fn seek_finds_first_id_at_or_after_target() {
        let mut p = PostingList::new();
        let ids: Vec<u32> = (0..200).map(|i| i * 3 + 1).collect();
        for &d in &ids {
            p.insert(d, 1.0);
        }
        for target in 0..620u32 {
            for start in [0usize, 1, 17, 100, 199, 200] {
                let mut c = p.cursor();
                for _ in 0..start {
                    c.advance();
                }
                let before = c.doc();
                c.seek(target);
                let expect = ids[start.min(ids.len())..]
                    .iter()
                    .find(|&&d| d >= target)
                    .map_or(END, |&d| u64::from(d));
                let expect = if before != END && before >= u64::from(target) {
                    before
                } else {
                    expect
                };
                assert_eq!(c.doc(), expect, "target {target} start {start}");
            }
        }
        let mut c = p.cursor();
        c.seek(u32::MAX);
        assert_eq!(c.doc(), END);
    }
}
