//! The key slab: keys interned to `u32` slots, with a name index.
//!
//! Each slot holds its key's state and name ([`KeyName`]: inline up to 23 bytes, so finding a
//! key reads no memory outside its slot). The index ([`KeyIndex`]) maps a name's hash to its
//! slot. Names come from untrusted callers, so the hash is seeded from the OS per table
//! (foldhash, several times cheaper than SipHash on short names), and an insert that lands
//! implausibly far from its home position (names crafted to collide) redraws the seed and
//! rebuilds the index: a flood is bounded at [`MAX_PROBE`] probes per lookup. Slot 0 is the reserved pseudo-key of messages published without a
//! key; it is never indexed or reclaimed. Vacant slots form an intrusive free list through
//! `head`.

use std::hash::{BuildHasher, Hasher};

use foldhash::SharedSeed;
use foldhash::quality::SeedableRandomState;

use super::FlowError;
use super::KeyName;
use super::key::{IN_READY, KeyState, NIL};
use super::key_index::KeyIndex;

/// A lookup under way: see [`KeyTable::start_lookup`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Lookup {
    /// The key's slot, known without hashing.
    Found(u32),
    /// The name's hash; its index entry has been prefetched.
    Hashed(u64),
}

/// The slot of messages published without a key.
pub(super) const UNKEYED: u32 = 0;

#[derive(Debug, Clone)]
pub(super) struct KeyTable {
    pub(super) slots: Vec<KeyState>,
    index: KeyIndex,
    hasher: SeedableRandomState,
    /// Inserts since the hash seed was last drawn (a redraw needs half the live keys' worth of
    /// inserts since the last, so its O(keys) rebuild is amortised O(1) even when forced).
    inserts_since_seed: usize,
    /// Times the seed was redrawn because an insert probed too far (see [`MAX_PROBE`]).
    pub(super) reseeds: u32,
    /// Tests: hash every name into one narrow range, as names crafted to collide would.
    #[cfg(test)]
    pub(super) colliding_hashes: bool,
    /// Head of the free list of vacant slots.
    pub(super) free: u32,
    /// Live keys, not counting [`UNKEYED`].
    pub(super) live: u32,
    /// The slot a lookup found last: bursts of messages for one key skip hashing.
    last: u32,
}

impl KeyTable {
    pub(super) fn new() -> Self {
        Self {
            slots: vec![KeyState::new(KeyName::from(""))],
            index: KeyIndex::new(),
            hasher: fresh_hasher(),
            inserts_since_seed: 0,
            reseeds: 0,
            #[cfg(test)]
            colliding_hashes: false,
            free: NIL,
            live: 0,
            last: UNKEYED,
        }
    }

    #[inline]
    fn hash(&self, name: &str) -> u64 {
        hash_name(
            &self.hasher,
            name,
            #[cfg(test)]
            self.colliding_hashes,
        )
    }

    #[inline]
    pub(super) fn get(&self, slot: u32) -> &KeyState {
        &self.slots[slot as usize]
    }

    #[inline]
    pub(super) fn get_mut(&mut self, slot: u32) -> &mut KeyState {
        &mut self.slots[slot as usize]
    }

    /// Whether `slot` holds a live key.
    pub(super) fn is_live(&self, slot: u32) -> bool {
        self.slots.get(slot as usize).is_some_and(KeyState::is_live)
    }

    /// The slot of `name`, if the key is live.
    pub(super) fn find(&self, name: &str) -> Option<u32> {
        let hash = self.hash(name);
        let slots = &self.slots;
        self.index.find(hash, |s| name_is(slots, s, name))
    }

    /// Starts finding `name`'s slot: the last key found again is known at once; otherwise the
    /// name is hashed and its index entry's cache line requested, so that the miss it costs
    /// with many keys overlaps whatever the caller does before [`finish_lookup`](Self::finish_lookup).
    #[inline]
    pub(super) fn start_lookup(&self, name: &str) -> Lookup {
        // The last key again? One comparison instead of a hash and a probe. (The unkeyed
        // slot's name is "", which no valid key equals; a reclaimed slot's name is None.)
        if self.slots.get(self.last as usize).is_some_and(|k| {
            k.name
                .as_ref()
                .is_some_and(|n| n.as_bytes() == name.as_bytes())
        }) {
            return Lookup::Found(self.last);
        }
        let hash = self.hash(name);
        self.index.prefetch(hash);
        Lookup::Hashed(hash)
    }

    /// The slot of `name` (as started by [`start_lookup`](Self::start_lookup)), creating the
    /// key if needed.
    ///
    /// # Errors
    /// [`FlowError::CapacityExceeded`] when all `u32` slots are in use.
    #[inline]
    pub(super) fn finish_lookup(&mut self, name: &str, lookup: Lookup) -> Result<u32, FlowError> {
        let hash = match lookup {
            Lookup::Found(slot) => return Ok(slot),
            Lookup::Hashed(hash) => hash,
        };
        let slots = &self.slots;
        let slot = match self.index.find(hash, |s| name_is(slots, s, name)) {
            Some(s) => s,
            None => {
                let slot = self.alloc(KeyName::from(name))?;
                self.index_insert(hash, slot);
                slot
            }
        };
        self.last = slot;
        Ok(slot)
    }

    /// The slot of `name`, creating the key if needed.
    ///
    /// # Errors
    /// [`FlowError::CapacityExceeded`] when all `u32` slots are in use.
    pub(super) fn get_or_insert(&mut self, name: &str) -> Result<u32, FlowError> {
        let lookup = self.start_lookup(name);
        self.finish_lookup(name, lookup)
    }

    /// Puts a live key into a vacant (or new) slot and indexes it; used by restore.
    pub(super) fn insert_at(&mut self, slot: u32, state: KeyState) {
        let name = state.name.clone().unwrap_or_else(|| KeyName::from(""));
        if self.slots.len() <= slot as usize {
            if self.slots.capacity() <= slot as usize {
                self.grow(slot as usize + 1);
            }
            self.slots
                .resize_with(slot as usize + 1, || KeyState::vacant(NIL));
        }
        self.slots[slot as usize] = state;
        if slot != UNKEYED {
            self.live += 1;
            self.index_insert(self.hash(&name), slot);
        }
    }

    /// Indexes `slot`; if its entry landed implausibly far from home (names chosen to collide
    /// under this seed), draws a new seed and rebuilds the index.
    fn index_insert(&mut self, hash: u64, slot: u32) {
        let distance = self.index.insert(hash, slot);
        self.inserts_since_seed += 1;
        if distance > MAX_PROBE && self.inserts_since_seed >= self.live as usize / 2 {
            self.reseed();
        }
    }

    /// Draws a new hash seed and re-indexes every live key under it.
    #[cold]
    fn reseed(&mut self) {
        self.hasher = fresh_hasher();
        self.inserts_since_seed = 0;
        self.reseeds += 1;
        #[cfg(test)]
        {
            self.colliding_hashes = false; // the crafted names do not collide under a new seed
        }
        self.index.clear();
        for (slot, k) in self.slots.iter().enumerate().skip(1) {
            if let Some(name) = &k.name {
                let hash = hash_name(
                    &self.hasher,
                    name,
                    #[cfg(test)]
                    self.colliding_hashes,
                );
                self.index.insert(hash, slot as u32);
            }
        }
    }

    fn alloc(&mut self, name: KeyName) -> Result<u32, FlowError> {
        let slot = if self.free != NIL {
            let slot = self.free;
            self.unlink_free(slot);
            self.slots[slot as usize] = KeyState::new(name);
            slot
        } else {
            let slot = u32::try_from(self.slots.len())
                .ok()
                .filter(|&s| s != NIL)
                .ok_or(FlowError::CapacityExceeded { what: "keys" })?;
            if self.slots.len() == self.slots.capacity() {
                self.grow(self.slots.len() + 1);
            }
            self.slots.push(KeyState::new(name));
            slot
        };
        self.live += 1;
        Ok(slot)
    }

    /// Moves the slab into a new buffer of at least `min_capacity` (and at least double the
    /// old one), advised onto huge pages before anything is written to it (a `realloc` would
    /// move the old buffer's pages, already faulted in at 4 KiB): with a million keys, every
    /// lookup lands on a random slot of an 80 MB slab, and with 4 KiB pages nearly every one
    /// also misses the TLB.
    #[cold]
    fn grow(&mut self, min_capacity: usize) {
        let capacity = min_capacity.max(self.slots.len() * 2).max(16);
        let mut bigger = Vec::with_capacity(capacity);
        crate::hints::advise_huge_pages(&bigger);
        bigger.append(&mut self.slots);
        self.slots = bigger;
    }

    /// Forgets the key in `slot` and frees the slot, unless a ready-ring entry still points at
    /// it: then the slot stays a vacant "zombie" (flag `IN_READY` kept) until that entry is
    /// popped and [`release`](Self::release)s it, so a reused slot never has two ring entries.
    pub(super) fn remove(&mut self, slot: u32) {
        debug_assert!(slot != UNKEYED, "the unkeyed slot is never reclaimed");
        let Some(name) = self.slots[slot as usize].name.take() else {
            return;
        };
        self.index.remove(self.hash(&name), slot);
        self.live -= 1;
        let in_ready = self.slots[slot as usize].has(IN_READY);
        self.slots[slot as usize] = KeyState::vacant(NIL);
        if in_ready {
            self.slots[slot as usize].set(IN_READY, true);
        } else {
            self.release(slot);
        }
    }

    /// Puts a vacant slot on the free list, then drops vacant slots from the top of the slab
    /// (amortised O(1): each slot is dropped once per release), so memory follows live keys.
    pub(super) fn release(&mut self, slot: u32) {
        debug_assert!(
            !self.slots[slot as usize].is_live(),
            "only vacant slots are released"
        );
        let free = self.free;
        let mut v = KeyState::vacant(free);
        v.tail = NIL;
        self.slots[slot as usize] = v;
        if free != NIL {
            self.slots[free as usize].tail = slot;
        }
        self.free = slot;
        while self.slots.len() > 1 {
            let last = self.slots.len() - 1;
            let k = &self.slots[last];
            if k.is_live() || k.has(IN_READY) {
                break;
            }
            self.unlink_free(last as u32);
            self.slots.pop();
        }
        if self.slots.capacity() > 1024 && self.slots.len() * 4 < self.slots.capacity() {
            self.slots.shrink_to(self.slots.len() * 2);
        }
    }

    /// Unlinks a vacant slot from the doubly-linked free list (`head` = next, `tail` = prev).
    fn unlink_free(&mut self, slot: u32) {
        let (next, prev) = (
            self.slots[slot as usize].head,
            self.slots[slot as usize].tail,
        );
        if prev == NIL {
            self.free = next;
        } else {
            self.slots[prev as usize].head = next;
        }
        if next != NIL {
            self.slots[next as usize].tail = prev;
        }
    }

    /// The free list, head first.
    pub(super) fn free_list(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut s = self.free;
        while s != NIL {
            out.push(s);
            s = self.slots[s as usize].head;
        }
        out
    }

    /// Iterates over live keyed slots (not [`UNKEYED`]).
    pub(super) fn live_slots(&self) -> impl Iterator<Item = (u32, &KeyState)> {
        self.slots
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, k)| k.is_live())
            .map(|(i, k)| (i as u32, k))
    }
}

/// Whether `slot` holds the key `name`. A 1M-key table is far larger than the caches: the
/// slot's lines are all requested at once, so the 88-byte state (which straddles two lines)
/// costs one miss, not two in a row, and the rest of the operation finds it cached.
#[inline]
fn name_is(slots: &[KeyState], slot: u32, name: &str) -> bool {
    let k = &slots[slot as usize];
    crate::hints::prefetch_all(k);
    k.name
        .as_ref()
        .is_some_and(|n| n.as_bytes() == name.as_bytes())
}

/// How far from its home position an index entry may land before the table suspects flooding.
/// With a good hash, a table at its 75% load limit sees runs of a few hundred at most (319 the
/// longest over 600 seeds of 200,000 names); names crafted to collide pile up in one run, and
/// each lookup in it scans the run. Past this distance the seed is redrawn, so a flood costs
/// at most this many probes per lookup (8 KiB of contiguous entries) until then, and the
/// crafted names scatter after.
const MAX_PROBE: usize = 1024;

/// A hasher with a seed from the OS (foldhash's own per-hasher seeds come from a counter and
/// a stack address). foldhash rather than std's SipHash: a million-key lookup spends its time
/// on one cache miss, and SipHash's ~15 ns on a short name was most of the rest; foldhash is
/// only "minimally DoS-resistant", which [`MAX_PROBE`] and reseeding make up for.
///
/// `foldhash::quality`, not `fast`: the index takes its home position from the hash's top
/// bits, and with `fast` some seeds spread names like `tenant-{i}` so poorly that ordinary
/// keys made runs past [`MAX_PROBE`] (the longest run of 200,000 such names over 600 seeds:
/// 8,166 entries with `fast`, 319 with `quality`). The final avalanche costs one multiply.
fn fresh_hasher() -> SeedableRandomState {
    let seed = getrandom::u64().unwrap_or_else(|_| {
        // No OS randomness: fall back to foldhash's own per-hasher seeding.
        foldhash::fast::RandomState::default().hash_one(0u64)
    });
    SeedableRandomState::with_seed(seed, SharedSeed::global_random())
}

/// Hashes a key name's bytes in one `write` (cheaper than `Hash for str`, which adds a
/// separator byte in a second call; the table only ever holds strings, so no ambiguity).
#[inline]
fn hash_name(hasher: &SeedableRandomState, name: &str, #[cfg(test)] colliding: bool) -> u64 {
    let mut h = hasher.build_hasher();
    h.write(name.as_bytes());
    let hash = h.finish();
    #[cfg(test)]
    if colliding {
        // Distinct tags (so lookups stay exact) but one home position for every name.
        return hash & 0x0000_0000_FFFF_FFFF | (hash & 0xFFFF) << 32;
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names that all hash to one home position pile up in one probe run; once an insert lands
    /// past `MAX_PROBE`, the table draws a new seed and every key is still found, at its own
    /// slot, under the new one.
    #[test]
    fn a_collision_flood_redraws_the_seed_and_loses_no_key() {
        let mut t = KeyTable::new();
        t.colliding_hashes = true;
        let names: Vec<String> = (0..3000).map(|i| format!("crafted-{i}")).collect();
        let slots: Vec<u32> = names
            .iter()
            .map(|n| t.get_or_insert(n).expect("room"))
            .collect();
        assert_eq!(t.reseeds, 1, "one redraw ends the flood");
        assert!(!t.colliding_hashes);
        assert_eq!(t.live, 3000);
        for (n, &s) in names.iter().zip(&slots) {
            assert_eq!(t.find(n), Some(s), "{n}");
        }
        assert_eq!(t.find("crafted-3000"), None);
        // Removal still finds the entries placed under the new seed.
        for (n, &s) in names.iter().zip(&slots).take(1000) {
            t.remove(s);
            assert_eq!(t.find(n), None);
        }
        assert_eq!(t.live, 2000);
    }

    /// Ordinary names never trigger a redraw (the guard is far above natural probe lengths).
    #[test]
    fn ordinary_names_keep_their_seed() {
        let mut t = KeyTable::new();
        for i in 0..200_000 {
            t.get_or_insert(&format!("tenant-{i}")).expect("room");
        }
        assert_eq!(t.reseeds, 0);
        assert_eq!(t.live, 200_000);
    }
}
