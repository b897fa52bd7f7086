//! The message slab and the per-key waitlists threaded through it.
//!
//! Every message (waiting or active) sits in one slot of a `Vec`; a key's waitlist is an
//! intrusive doubly-linked list through `prev`/`next` (head and tail live in the key), so
//! publish, dispatch, requeue (push to the head) and cancel (unlink from the middle) are O(1)
//! with no allocation beyond the slab's amortised growth. Vacant slots form a free list
//! through `next`.

use super::FlowError;
use super::key::NIL;

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotState {
    Vacant,
    Waiting,
    Active,
    /// Held until a release time (`delays.rs`); unlinked, `prev`/`next` hold the time.
    Delayed,
}

#[derive(Debug, Clone)]
pub(super) struct Entry<M> {
    pub(super) seq: u64,
    pub(super) key: u32,
    pub(super) prev: u32,
    pub(super) next: u32,
    pub(super) state: SlotState,
    pub(super) message: Option<M>,
}

/// The ends of one waitlist.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ends {
    pub(super) head: u32,
    pub(super) tail: u32,
}

#[derive(Debug, Clone)]
pub(super) struct MessageSlab<M> {
    pub(super) entries: Vec<Entry<M>>,
    /// Head of the free list.
    pub(super) free: u32,
    /// Occupied slots.
    pub(super) len: u32,
}

impl<M> MessageSlab<M> {
    pub(super) fn new() -> Self {
        Self {
            entries: Vec::new(),
            free: NIL,
            len: 0,
        }
    }

    #[inline]
    pub(super) fn get(&self, slot: u32) -> Option<&Entry<M>> {
        self.entries.get(slot as usize)
    }

    #[inline]
    pub(super) fn entry_mut(&mut self, slot: u32) -> &mut Entry<M> {
        &mut self.entries[slot as usize]
    }

    /// Stores a new waiting message (not yet linked) and returns its slot.
    ///
    /// # Errors
    /// [`FlowError::CapacityExceeded`] when all `u32` slots are in use.
    pub(super) fn alloc(&mut self, seq: u64, key: u32, message: M) -> Result<u32, FlowError> {
        let entry = Entry {
            seq,
            key,
            prev: NIL,
            next: NIL,
            state: SlotState::Waiting,
            message: Some(message),
        };
        let slot = if self.free != NIL {
            let slot = self.free;
            self.unlink_free(slot);
            self.entries[slot as usize] = entry;
            slot
        } else {
            let slot = u32::try_from(self.entries.len())
                .ok()
                .filter(|&s| s != NIL)
                .ok_or(FlowError::CapacityExceeded { what: "messages" })?;
            self.entries.push(entry);
            slot
        };
        self.len += 1;
        Ok(slot)
    }

    /// Empties `slot` (already unlinked) and returns its message; then drops vacant slots
    /// from the top of the slab (amortised O(1)), so memory follows the messages held.
    pub(super) fn release(&mut self, slot: u32) -> Option<M> {
        debug_assert!(
            self.entries[slot as usize].state != SlotState::Vacant,
            "released slots are occupied"
        );
        self.len -= 1;
        if slot as usize + 1 == self.entries.len() {
            // The top slot (the common case in a steady state): drop it instead of listing it.
            let message = self.entries.pop().and_then(|e| e.message);
            while let Some(last) = self.entries.last() {
                if last.state != SlotState::Vacant {
                    break;
                }
                self.unlink_free(self.entries.len() as u32 - 1);
                self.entries.pop();
            }
            if self.entries.capacity() > 1024 && self.entries.len() * 4 < self.entries.capacity() {
                self.entries.shrink_to(self.entries.len() * 2);
            }
            message
        } else {
            // The top slot stays occupied, so the slab has no vacant tail to trim.
            let free = self.free;
            let e = &mut self.entries[slot as usize];
            e.state = SlotState::Vacant;
            e.prev = NIL;
            e.next = free;
            let message = e.message.take();
            if free != NIL {
                self.entries[free as usize].prev = slot;
            }
            self.free = slot;
            message
        }
    }

    /// Unlinks a vacant slot from the doubly-linked free list.
    fn unlink_free(&mut self, slot: u32) {
        let (next, prev) = (
            self.entries[slot as usize].next,
            self.entries[slot as usize].prev,
        );
        if prev == NIL {
            self.free = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next != NIL {
            self.entries[next as usize].prev = prev;
        }
    }

    /// Links `slot` at the back of the list `ends`.
    pub(super) fn push_back(&mut self, ends: &mut Ends, slot: u32) {
        let tail = ends.tail;
        {
            let e = &mut self.entries[slot as usize];
            e.prev = tail;
            e.next = NIL;
        }
        if tail == NIL {
            ends.head = slot;
        } else {
            self.entries[tail as usize].next = slot;
        }
        ends.tail = slot;
    }

    /// Links `slot` at the front of the list `ends`.
    pub(super) fn push_front(&mut self, ends: &mut Ends, slot: u32) {
        let head = ends.head;
        {
            let e = &mut self.entries[slot as usize];
            e.prev = NIL;
            e.next = head;
        }
        if head == NIL {
            ends.tail = slot;
        } else {
            self.entries[head as usize].prev = slot;
        }
        ends.head = slot;
    }

    /// Unlinks `slot` from the list `ends`.
    pub(super) fn unlink(&mut self, ends: &mut Ends, slot: u32) {
        let (prev, next) = {
            let e = &mut self.entries[slot as usize];
            let pn = (e.prev, e.next);
            e.prev = NIL;
            e.next = NIL;
            pn
        };
        if prev == NIL {
            ends.head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            ends.tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
    }

    /// The free list, head first.
    pub(super) fn free_list(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut s = self.free;
        while s != NIL {
            out.push(s);
            s = self.entries[s as usize].next;
        }
        out
    }

    /// The slots of a list, head first.
    pub(super) fn list(&self, head: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut s = head;
        while s != NIL {
            out.push(s);
            s = self.entries[s as usize].next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_operations_keep_order_and_reuse_slots() {
        let mut slab = MessageSlab::new();
        let mut ends = Ends {
            head: NIL,
            tail: NIL,
        };
        let a = slab.alloc(0, 1, 'a').unwrap();
        let b = slab.alloc(1, 1, 'b').unwrap();
        let c = slab.alloc(2, 1, 'c').unwrap();
        slab.push_back(&mut ends, b);
        slab.push_back(&mut ends, c);
        slab.push_front(&mut ends, a);
        assert_eq!(slab.list(ends.head), vec![a, b, c]);
        slab.unlink(&mut ends, b);
        assert_eq!(slab.list(ends.head), vec![a, c]);
        slab.unlink(&mut ends, c);
        assert_eq!((ends.head, ends.tail), (a, a));
        slab.unlink(&mut ends, a);
        assert_eq!((ends.head, ends.tail), (NIL, NIL));
        assert_eq!(slab.release(b), Some('b'));
        assert_eq!(slab.free_list(), vec![b]);
        assert_eq!(slab.alloc(3, 2, 'd').unwrap(), b, "vacant slots are reused");
        assert_eq!(slab.len, 3);
    }
}
