//! The key slab: keys interned to `u32` slots, with a name index.
//!
//! Each slot holds its key's state and name ([`KeyName`]: inline up to 23 bytes, so finding a
//! key reads no memory outside its slot). The index ([`KeyIndex`]) maps a name's hash to its
//! slot; names are hashed with the std SipHash `RandomState` because keys come from untrusted
//! callers (no HashDoS). Slot 0 is the reserved pseudo-key of messages published without a
//! key; it is never indexed or reclaimed. Vacant slots form an intrusive free list through
//! `head`.

use std::hash::{BuildHasher, Hasher, RandomState};

use super::FlowError;
use super::KeyName;
use super::key::{IN_READY, KeyState, NIL};
use super::key_index::KeyIndex;

/// The slot of messages published without a key.
pub(super) const UNKEYED: u32 = 0;

#[derive(Debug, Clone)]
pub(super) struct KeyTable {
    pub(super) slots: Vec<KeyState>,
    index: KeyIndex,
    hasher: RandomState,
    /// Head of the free list of vacant slots.
    pub(super) free: u32,
    /// Live keys, not counting [`UNKEYED`].
    pub(super) live: u32,
    /// The slot `get_or_insert` found last: bursts of messages for one key skip hashing.
    last: u32,
}

impl KeyTable {
    pub(super) fn new() -> Self {
        Self {
            slots: vec![KeyState::new(KeyName::from(""))],
            index: KeyIndex::new(),
            hasher: RandomState::new(),
            free: NIL,
            live: 0,
            last: UNKEYED,
        }
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
        let hash = hash_name(&self.hasher, name);
        let slots = &self.slots;
        self.index.find(hash, |s| name_is(slots, s, name))
    }

    /// The slot of `name`, creating the key if needed.
    ///
    /// # Errors
    /// [`FlowError::CapacityExceeded`] when all `u32` slots are in use.
    pub(super) fn get_or_insert(&mut self, name: &str) -> Result<u32, FlowError> {
        // The last key again? One comparison instead of a SipHash and a probe. (The unkeyed
        // slot's name is "", which no valid key equals; a reclaimed slot's name is None.)
        if self.slots.get(self.last as usize).is_some_and(|k| {
            k.name
                .as_ref()
                .is_some_and(|n| n.as_bytes() == name.as_bytes())
        }) {
            return Ok(self.last);
        }
        let slot = self.lookup_or_insert(name)?;
        self.last = slot;
        Ok(slot)
    }

    fn lookup_or_insert(&mut self, name: &str) -> Result<u32, FlowError> {
        let hash = hash_name(&self.hasher, name);
        let slots = &self.slots;
        if let Some(s) = self.index.find(hash, |s| name_is(slots, s, name)) {
            return Ok(s);
        }
        let slot = self.alloc(KeyName::from(name))?;
        self.index.insert(hash, slot);
        Ok(slot)
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
            self.index.insert(hash_name(&self.hasher, &name), slot);
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
        self.index.remove(hash_name(&self.hasher, &name), slot);
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

/// Hashes a key name's bytes in one `write` (cheaper than `Hash for str`, which adds a
/// separator byte in a second call; the table only ever holds strings, so no ambiguity).
#[inline]
fn hash_name(hasher: &RandomState, name: &str) -> u64 {
    let mut h = hasher.build_hasher();
    h.write(name.as_bytes());
    h.finish()
}
