//! A bounded collector of the best `k` scored ids, with deterministic tie-breaking.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Breaks score ties between two internal ids: `Ordering::Less` ranks the first id first.
///
/// The record layer passes one that compares the records' string ids, so that results are
/// ordered by score, then by id ascending, whatever order the records were inserted in.
pub type TieBreak<'a> = &'a dyn Fn(u32, u32) -> Ordering;

struct Entry<'a> {
    id: u32,
    score: f32,
    tie: Option<TieBreak<'a>>,
}

impl Entry<'_> {
    /// `Less` means `self` ranks before (is better than) `other`.
    fn rank(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| match self.tie {
                Some(tie) => tie(self.id, other.id),
                None => self.id.cmp(&other.id),
            })
    }
}

impl PartialEq for Entry<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.rank(other) == Ordering::Equal
    }
}
impl Eq for Entry<'_> {}
impl PartialOrd for Entry<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry<'_> {
    // The max-heap keeps the worst-ranked entry on top.
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank(other)
    }
}

/// Keeps the `k` best `(id, score)` pairs: higher score first, ties by the [`TieBreak`]
/// (internal id ascending when there is none).
///
/// # Examples
/// ```
/// use flowvec::vector::TopK;
/// let mut top = TopK::new(2, None);
/// for (id, score) in [(7, 0.5), (3, 0.9), (5, 0.5), (1, 0.1)] {
///     top.push(id, score);
/// }
/// assert_eq!(top.into_sorted_vec(), vec![(3, 0.9), (5, 0.5)]);
/// ```
pub struct TopK<'a> {
    k: usize,
    tie: Option<TieBreak<'a>>,
    heap: BinaryHeap<Entry<'a>>,
}

impl<'a> TopK<'a> {
    /// An empty collector for the best `k` entries.
    pub fn new(k: usize, tie: Option<TieBreak<'a>>) -> Self {
        TopK {
            k,
            tie,
            heap: BinaryHeap::with_capacity(k.min(4096) + 1),
        }
    }

    /// Offers a candidate; returns whether it is (for now) among the best `k`.
    pub fn push(&mut self, id: u32, score: f32) -> bool {
        if self.k == 0 {
            return false;
        }
        let entry = Entry {
            id,
            score,
            tie: self.tie,
        };
        if self.heap.len() < self.k {
            self.heap.push(entry);
            return true;
        }
        match self.heap.peek() {
            Some(worst) if entry.rank(worst) == Ordering::Less => {
                self.heap.pop();
                self.heap.push(entry);
                true
            }
            _ => false,
        }
    }

    /// The score a new candidate must reach to enter, once `k` entries are held.
    pub fn threshold(&self) -> Option<f32> {
        if self.heap.len() < self.k {
            None
        } else {
            self.heap.peek().map(|e| e.score)
        }
    }

    /// How many entries are held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The held entries, best first.
    pub fn into_sorted_vec(self) -> Vec<(u32, f32)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| (e.id, e.score))
            .collect()
    }
}
