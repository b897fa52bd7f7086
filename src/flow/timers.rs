//! The timer queue: rate-window ends and idle-key reclamation deadlines.
//!
//! A binary min-heap of `(deadline, key slot)` with lazy invalidation: an entry is valid only
//! while the key's `timer_at` still equals its deadline, so rescheduling never searches the
//! heap. Each key has at most one valid entry, and stale entries are dropped when they reach
//! the top or, if they pile up past twice the live keys, by one `retain` pass (amortised O(1)).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Clone, Default)]
pub(super) struct TimerQueue {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl TimerQueue {
    pub(super) fn push(&mut self, deadline: u64, slot: u32) {
        self.heap.push(Reverse((deadline, slot)));
    }

    /// The earliest entry, valid or not.
    #[inline]
    pub(super) fn peek(&self) -> Option<(u64, u32)> {
        self.heap.peek().map(|r| r.0)
    }

    pub(super) fn pop(&mut self) -> Option<(u64, u32)> {
        let top = self.heap.pop().map(|r| r.0);
        // Give memory back once the queue has drained (amortised: the copy is at most a
        // quarter of the pops since the capacity was reached).
        if self.heap.capacity() > 1024 && self.heap.len() * 4 < self.heap.capacity() {
            self.heap.shrink_to(self.heap.len() * 2);
        }
        top
    }

    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Keeps only the entries `valid` accepts.
    pub(super) fn retain(&mut self, mut valid: impl FnMut(u64, u32) -> bool) {
        self.heap.retain(|r| valid(r.0.0, r.0.1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_earliest_first_and_retains() {
        let mut t = TimerQueue::default();
        t.push(30, 1);
        t.push(10, 2);
        t.push(20, 3);
        t.retain(|_, slot| slot != 2);
        assert_eq!(t.peek(), Some((20, 3)));
        assert_eq!(t.pop(), Some((20, 3)));
        assert_eq!(t.pop(), Some((30, 1)));
        assert_eq!(t.len(), 0);
    }
}
