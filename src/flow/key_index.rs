//! The key-name index: a name's hash to its key slot, in one cache line per lookup.
//!
//! An open-addressing table of 8-byte entries, each a 32-bit tag (the hash's high half) and a
//! slot, probed linearly from a home position taken from the tag's top bits. With a million
//! keys a lookup is one cache miss here plus one in the key slab, where a `hashbrown` table
//! costs two here (its control bytes and its buckets live in separate arrays). Because the
//! home position comes from the stored tag, growing and shrinking rehash without touching the
//! key names. Removal shifts later entries back (no tombstones), so probe runs stay short
//! under any mix of inserts and removals. The caller confirms every tag match against the
//! slot's name, so a tag collision costs a comparison, never a wrong answer.

/// An empty entry (slot `u32::MAX` is never a key slot).
const EMPTY: u64 = u64::MAX;
/// Entries in a new table's first allocation.
const MIN_CAPACITY: usize = 16;

#[derive(Debug, Clone)]
pub(super) struct KeyIndex {
    entries: Vec<u64>,
    /// `64 - log2(capacity)`: `home = tag << 32 >> shift`.
    shift: u32,
    len: usize,
}

impl KeyIndex {
    pub(super) fn new() -> Self {
        Self {
            entries: Vec::new(),
            shift: 64,
            len: 0,
        }
    }

    /// Number of indexed slots.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    /// The slot whose entry has `hash`'s tag and for which `is` says yes.
    #[inline]
    pub(super) fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let tag = hash >> 32;
        let mask = self.entries.len() - 1;
        let mut i = self.home(tag);
        loop {
            let e = self.entries[i];
            if e == EMPTY {
                return None;
            }
            if e >> 32 == tag && is(e as u32) {
                return Some(e as u32);
            }
            i = (i + 1) & mask;
        }
    }

    /// Requests the cache line where a probe for `hash` starts.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        if self.len != 0 {
            crate::hints::prefetch(&self.entries, self.home(hash >> 32));
        }
    }

    /// Indexes `slot` under `hash` (the caller knows it is not indexed yet); returns how far
    /// from its home position the entry landed (the caller watches this for flooding).
    pub(super) fn insert(&mut self, hash: u64, slot: u32) -> usize {
        debug_assert!(slot != u32::MAX, "u32::MAX marks an empty entry");
        if (self.len + 1) * 4 > self.entries.len() * 3 {
            self.resize((self.entries.len() * 2).max(MIN_CAPACITY));
        }
        self.len += 1;
        self.place(((hash >> 32) << 32) | u64::from(slot))
    }

    /// Forgets every entry, keeping the allocation (for a rebuild under new hashes).
    pub(super) fn clear(&mut self) {
        self.entries.fill(EMPTY);
        self.len = 0;
    }

    /// Forgets `slot`, indexed under `hash`; false if it was not there.
    pub(super) fn remove(&mut self, hash: u64, slot: u32) -> bool {
        let entry = ((hash >> 32) << 32) | u64::from(slot);
        if self.len == 0 {
            return false;
        }
        let mask = self.entries.len() - 1;
        let mut i = self.home(hash >> 32);
        loop {
            match self.entries[i] {
                EMPTY => return false,
                e if e == entry => break,
                _ => i = (i + 1) & mask,
            }
        }
        // Backward shift: pull each later entry of the run into the hole unless the hole lies
        // before that entry's home (it would then be unreachable from its home).
        let mut hole = i;
        let mut j = (i + 1) & mask;
        while self.entries[j] != EMPTY {
            let home = self.home(self.entries[j] >> 32);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.entries[hole] = self.entries[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.entries[hole] = EMPTY;
        self.len -= 1;
        // Memory follows live keys: give most of a large, mostly empty table back.
        if self.entries.len() > 1024 && self.len * 8 < self.entries.len() {
            self.resize(self.entries.len() / 4);
        }
        true
    }

    #[inline]
    fn home(&self, tag: u64) -> usize {
        // `shift` is 64 only for the empty table, which `find`/`remove` never probe.
        ((tag << 32) >> self.shift) as usize
    }

    /// Stores `entry` at the first empty position from its home; returns the distance.
    fn place(&mut self, entry: u64) -> usize {
        let mask = self.entries.len() - 1;
        let home = self.home(entry >> 32);
        let mut i = home;
        while self.entries[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.entries[i] = entry;
        i.wrapping_sub(home) & mask
    }

    /// Rebuilds the table with `capacity` (a power of two) entries, on huge pages when large.
    #[cold]
    fn resize(&mut self, capacity: usize) {
        debug_assert!(capacity.is_power_of_two() && capacity * 3 >= self.len * 4);
        let mut fresh: Vec<u64> = Vec::with_capacity(capacity);
        crate::hints::advise_huge_pages(&fresh);
        fresh.resize(capacity, EMPTY);
        let old = std::mem::replace(&mut self.entries, fresh);
        self.shift = 64 - capacity.trailing_zeros();
        for e in old.into_iter().filter(|&e| e != EMPTY) {
            self.place(e);
        }
    }

    /// Entries allocated.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.entries.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Hashes that collide on purpose: few distinct tags, many slots per tag.
    fn weak_hash(name: u32) -> u64 {
        u64::from(name % 7) << 32 | u64::from(name)
    }

    fn strong_hash(name: u32) -> u64 {
        u64::from(name)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
    }

    /// Runs `ops` (true = insert, false = remove; names pick from a small pool so both hit)
    /// against a `HashMap` oracle and checks every name's lookup after every step.
    fn check_against_oracle(ops: &[(bool, u32)], hash: fn(u32) -> u64) {
        let mut index = KeyIndex::new();
        // name -> slot; slots are handed out in order, as the key slab does.
        let mut oracle: HashMap<u32, u32> = HashMap::new();
        let mut next_slot = 1;
        for &(insert, name) in ops {
            if insert {
                if let std::collections::hash_map::Entry::Vacant(v) = oracle.entry(name) {
                    index.insert(hash(name), next_slot);
                    v.insert(next_slot);
                    next_slot += 1;
                }
            } else {
                let removed = oracle.remove(&name);
                let slot = removed.unwrap_or(u32::MAX - 1);
                assert_eq!(index.remove(hash(name), slot), removed.is_some());
            }
            assert_eq!(index.len(), oracle.len());
            for probe in 0..64 {
                let want = oracle.get(&probe).copied();
                let got = index.find(hash(probe), |s| oracle.get(&probe) == Some(&s));
                assert_eq!(got, want, "name {probe} after {insert} {name}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x0F10_4EC5),
            ..ProptestConfig::default()
        })]

        #[test]
        fn agrees_with_a_hash_map(ops in prop::collection::vec((any::<bool>(), 0u32..64), 0..400)) {
            check_against_oracle(&ops, strong_hash);
        }

        #[test]
        fn agrees_with_a_hash_map_when_tags_collide(
            ops in prop::collection::vec((any::<bool>(), 0u32..64), 0..400)
        ) {
            check_against_oracle(&ops, weak_hash);
        }
    }

    #[test]
    fn grows_and_gives_memory_back() {
        let mut index = KeyIndex::new();
        for s in 0..100_000 {
            index.insert(strong_hash(s), s);
        }
        let big = index.capacity();
        assert!(big >= 100_000 * 4 / 3, "load stays at most 3/4");
        for s in 0..100_000 {
            assert_eq!(index.find(strong_hash(s), |x| x == s), Some(s));
        }
        for s in 10..100_000 {
            assert!(index.remove(strong_hash(s), s));
        }
        assert!(index.capacity() * 64 < big, "{} of {big}", index.capacity());
        for s in 0..10 {
            assert_eq!(index.find(strong_hash(s), |x| x == s), Some(s));
        }
        assert_eq!(index.find(strong_hash(10), |_| true), None);
    }
}
