//! The vector store: every vector of a namespace in one contiguous buffer, addressed by slot.
//!
//! A slot is the position of a vector in the buffer and the id the graph knows it by. Slots are
//! appended and never reused until a compaction renumbers them: a removed or replaced vector
//! leaves a tombstone (its slot stays, marked dead) so the graph, which cannot delete, can
//! still walk through it. For cosine the vector is stored as given (so it comes back bit-exact)
//! beside the inverse of its norm (computed in f64), so a cosine is one dot product and one
//! multiply; a vector of extreme norm (outside `2^±32`) is held rescaled by a power of two, its
//! original kept aside, so no f32 product of it overflows or underflows.

use super::bit_codes::BitCodes;
use super::kernels::Kernels;
use crate::vector::Metric;
use std::collections::HashMap;

/// Grows `v`'s capacity to hold `needed` elements by a quarter at a time rather than `Vec`'s
/// doubling: the vector buffer is most of an index's memory, and doubling left up to half of it
/// unused (measured: 100.7 MB of capacity for 66 MB of 384-d vectors). Amortised cost stays
/// O(1) per element (each element is copied at most ~4 times on average).
pub(crate) fn grow_for<T>(v: &mut Vec<T>, needed: usize) {
    if needed > v.capacity() {
        let step = (v.capacity() / 4).max(needed - v.len()).max(1024);
        v.reserve_exact(step);
        super::kernels::advise_huge_pages(v);
    }
}

/// A query prepared for one metric (normalised for cosine).
pub(crate) struct PreparedQuery {
    pub(crate) values: Vec<f32>,
}

/// int8 copies of the rows, for a graph walk that reads a quarter of the bytes per visit
/// ([`Traversal::Int8`](super::Traversal::Int8)). Each row is scaled by its own largest
/// magnitude onto `-127..=127`; `mult` folds that scale with the cosine inverse norm, so an
/// approximate inner product is one int8 dot product and two multiplies.
#[derive(Debug, Default)]
pub(crate) struct Codes {
    data: Vec<i8>,
    mult: Vec<f32>,
    /// `|row|^2` per slot (Euclidean only; empty otherwise).
    sq_norms: Vec<f32>,
}

/// A query prepared for the int8 walk.
pub(crate) struct CodedQuery {
    codes: Vec<i8>,
    scale: f32,
    sq_norm: f32,
}

/// `row`'s codes (appended to `out`) and their scale: `row[i] ≈ code[i] * scale`.
fn encode(row: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let scale = if max > 0.0 && max.is_finite() {
        max / 127.0
    } else {
        1.0
    };
    out.extend(
        row.iter()
            // `as` saturates (and maps NaN to 0): the codes stay in range for any input.
            .map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

/// Cosine rows with a norm in `[1 / NORM_RANGE, NORM_RANGE]` are held as inserted: the dot
/// product of two of them or of one with a unit query stays within `2^±64`, far from f32's
/// overflow and subnormal ranges. Others are rescaled (see `Store::originals`).
const NORM_RANGE: f64 = 4294967296.0; // 2^32

/// `|v|` computed in f64: finite and non-zero for every finite, non-zero f32 vector (the f32
/// sum of squares overflows above ~1.8e19 per component and vanishes below ~1e-23).
pub(crate) fn norm_f64(v: &[f32]) -> f64 {
    v.iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt()
}

#[derive(Debug)]
pub(crate) struct Store {
    dim: usize,
    metric: Metric,
    kernels: Kernels,
    /// Slot-major vectors, `dim` values each, as inserted.
    data: Vec<f32>,
    /// `1 / |v|` per slot (cosine only; empty otherwise), of the row as held in `data`.
    inv_norms: Vec<f32>,
    /// Cosine rows whose norm is outside [`NORM_RANGE`] are held in `data` scaled by a power
    /// of two to a norm near 1 (so no f32 dot product of them overflows or underflows); the
    /// row as inserted is kept here, by slot, for [`Store::original`].
    originals: HashMap<u32, Box<[f32]>>,
    /// Caller id per slot.
    ids: Vec<u32>,
    /// Whether the slot holds a current vector (false: tombstone).
    live: Vec<bool>,
    slot_of: HashMap<u32, u32>,
    /// int8 copies of the rows, when searches walk the graph on them.
    codes: Option<Codes>,
    /// 1-bit codes of the rows, when searches walk the graph on them.
    bits: Option<BitCodes>,
}

impl Store {
    pub(crate) fn new(dim: usize, metric: Metric, kernels: Kernels) -> Self {
        Store {
            dim,
            metric,
            kernels,
            data: Vec::new(),
            inv_norms: Vec::new(),
            originals: HashMap::new(),
            ids: Vec::new(),
            live: Vec::new(),
            slot_of: HashMap::new(),
            codes: None,
            bits: None,
        }
    }

    /// The same store, keeping 1-bit codes of its rows from now on (call it while empty).
    pub(crate) fn with_bits(mut self) -> Self {
        debug_assert!(self.ids.is_empty(), "codes are made as rows arrive");
        self.bits = Some(BitCodes::new(self.dim));
        self
    }

    /// The 1-bit codes, when searches walk the graph on them.
    #[inline]
    pub(crate) fn bits(&self) -> Option<&BitCodes> {
        self.bits.as_ref()
    }

    /// The same store, keeping int8 copies of its rows from now on (call it while empty).
    pub(crate) fn with_codes(mut self) -> Self {
        debug_assert!(self.ids.is_empty(), "codes are made as rows arrive");
        self.codes = Some(Codes::default());
        self
    }

    /// Appends the codes of `slot`'s row (the row itself is already stored).
    fn push_codes(&mut self, slot: u32) {
        let dim = self.dim;
        let inv = self.inv_norm(slot);
        let metric = self.metric;
        let dot = self.kernels.dot;
        let row = &self.data[slot as usize * dim..][..dim];
        if let Some(codes) = &mut self.codes {
            let needed = codes.data.len() + dim;
            grow_for(&mut codes.data, needed);
            let scale = encode(row, &mut codes.data);
            codes.mult.push(match metric {
                Metric::Cosine => scale * inv,
                _ => scale,
            });
            if metric == Metric::Euclidean {
                codes.sq_norms.push(dot(row, row));
            }
        }
    }

    /// The query prepared for the int8 walk, or `None` when the store keeps no codes.
    pub(crate) fn code_query(&self, prepared: &[f32]) -> Option<CodedQuery> {
        self.codes.as_ref()?;
        let mut codes = Vec::with_capacity(self.dim);
        let scale = encode(prepared, &mut codes);
        Some(CodedQuery {
            codes,
            scale,
            sq_norm: (self.kernels.dot)(prepared, prepared),
        })
    }

    /// The approximate distance (same scale as the exact graph distance) of `slot`.
    #[inline]
    pub(crate) fn code_distance(&self, q: &CodedQuery, slot: u32) -> f32 {
        let Some(codes) = &self.codes else {
            return f32::INFINITY;
        };
        let s = slot as usize;
        let row = &codes.data[s * self.dim..][..self.dim];
        let ip = (self.kernels.dot_i8)(&q.codes, row) as f32 * q.scale * codes.mult[s];
        let d = match self.metric {
            Metric::Cosine => (1.0 - ip).max(0.0),
            Metric::Euclidean => (q.sq_norm + codes.sq_norms[s] - 2.0 * ip).max(0.0),
            Metric::DotProduct => super::graph::dot_distance(ip),
        };
        if d.is_nan() { f32::INFINITY } else { d }
    }

    /// Prefetches `slot`'s codes (a hint).
    #[inline]
    pub(crate) fn prefetch_code(&self, slot: u32) {
        if let Some(codes) = &self.codes {
            let start = slot as usize * self.dim;
            let mut offset = 0;
            while offset < self.dim {
                super::kernels::prefetch(&codes.data, start + offset);
                offset += 64;
            }
            super::kernels::prefetch(&codes.mult, slot as usize);
        }
    }

    /// Whether searches walk the graph on int8 codes.
    pub(crate) fn has_codes(&self) -> bool {
        self.codes.is_some()
    }

    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    pub(crate) fn metric(&self) -> Metric {
        self.metric
    }

    pub(crate) fn kernels(&self) -> Kernels {
        self.kernels
    }

    /// Number of slots, live or dead.
    pub(crate) fn slots(&self) -> usize {
        self.ids.len()
    }

    /// Number of live vectors.
    pub(crate) fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// Number of tombstones.
    pub(crate) fn dead(&self) -> usize {
        self.slots() - self.len()
    }

    /// Appends `vector` for `id`, tombstoning the id's previous slot; returns the new slot.
    /// The vector must have been validated (right dimension, finite, non-zero for cosine).
    pub(crate) fn push(&mut self, id: u32, vector: &[f32]) -> u32 {
        debug_assert_eq!(vector.len(), self.dim);
        let slot = u32::try_from(self.ids.len()).expect(
            "fewer than 2^32 slots: compaction keeps slots near the live count, and ids are u32",
        );
        if let Some(old) = self.slot_of.insert(id, slot) {
            self.live[old as usize] = false;
        }
        let needed = self.data.len() + vector.len();
        grow_for(&mut self.data, needed);
        if self.metric == Metric::Cosine {
            // Insert time, so the f64 norm costs queries nothing.
            let norm = norm_f64(vector);
            if (1.0 / NORM_RANGE..=NORM_RANGE).contains(&norm) {
                self.data.extend_from_slice(vector);
                self.inv_norms.push((1.0 / norm) as f32);
            } else {
                // A power of two: exact, except components too small to move the cosine.
                let factor = 2f64.powi(-(norm.log2().round() as i32));
                let start = self.data.len();
                self.data
                    .extend(vector.iter().map(|v| (f64::from(*v) * factor) as f32));
                let scaled = norm_f64(&self.data[start..]);
                self.inv_norms.push((1.0 / scaled) as f32);
                self.originals.insert(slot, vector.into());
            }
        } else {
            self.data.extend_from_slice(vector);
        }
        self.ids.push(id);
        self.live.push(true);
        if self.codes.is_some() {
            self.push_codes(slot);
        }
        if let Some(bits) = &mut self.bits {
            bits.push(
                &self.data[slot as usize * self.dim..][..self.dim],
                self.metric == Metric::Cosine,
            );
        }
        slot
    }

    /// Makes room for `additional` more vectors without reallocating.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.data.reserve_exact(additional * self.dim);
        super::kernels::advise_huge_pages(&self.data);
        if self.metric == Metric::Cosine {
            self.inv_norms.reserve_exact(additional);
        }
        self.ids.reserve_exact(additional);
        self.live.reserve_exact(additional);
        if let Some(codes) = &mut self.codes {
            codes.data.reserve_exact(additional * self.dim);
            super::kernels::advise_huge_pages(&codes.data);
            codes.mult.reserve_exact(additional);
        }
        if let Some(bits) = &mut self.bits {
            bits.reserve(additional);
        }
        self.slot_of.reserve(additional);
    }

    /// Tombstones `id`'s slot; returns whether it was present.
    pub(crate) fn remove(&mut self, id: u32) -> bool {
        match self.slot_of.remove(&id) {
            Some(slot) => {
                self.live[slot as usize] = false;
                true
            }
            None => false,
        }
    }

    pub(crate) fn slot_of(&self, id: u32) -> Option<u32> {
        self.slot_of.get(&id).copied()
    }

    pub(crate) fn id(&self, slot: u32) -> u32 {
        self.ids[slot as usize]
    }

    pub(crate) fn is_live(&self, slot: u32) -> bool {
        self.live[slot as usize]
    }

    /// `slot`'s vector as inserted, bit for bit.
    pub(crate) fn original(&self, slot: u32) -> &[f32] {
        match self.originals.get(&slot) {
            Some(v) => v,
            None => self.row(slot),
        }
    }

    /// The row of `slot` that the kernels read: as inserted, or for a cosine row of extreme
    /// norm rescaled by a power of two (same direction; see [`Store::original`]).
    pub(crate) fn row(&self, slot: u32) -> &[f32] {
        &self.data[slot as usize * self.dim..][..self.dim]
    }

    /// All rows, slot-major.
    pub(crate) fn data(&self) -> &[f32] {
        &self.data
    }

    /// The vector the graph indexes for `slot`: the unit vector for cosine, else as stored.
    pub(crate) fn graph_vector(&self, slot: u32) -> Vec<f32> {
        let row = self.row(slot);
        match self.metric {
            Metric::Cosine => {
                let inv = self.inv_norms[slot as usize];
                row.iter().map(|v| v * inv).collect()
            }
            _ => row.to_vec(),
        }
    }

    /// Prefetches `slot`'s inverse norm (cosine only; a hint).
    #[inline]
    pub(crate) fn prefetch_inv_norm(&self, slot: u32) {
        super::kernels::prefetch(&self.inv_norms, slot as usize);
    }

    pub(crate) fn inv_norm(&self, slot: u32) -> f32 {
        self.inv_norms.get(slot as usize).copied().unwrap_or(1.0)
    }

    /// Prepares a validated query: normalised for cosine.
    pub(crate) fn prepare(&self, query: &[f32]) -> PreparedQuery {
        let values = match self.metric {
            Metric::Cosine => {
                // In f64: any finite, non-zero query normalises (once per query).
                let inv = 1.0 / norm_f64(query);
                query.iter().map(|v| (f64::from(*v) * inv) as f32).collect()
            }
            _ => query.to_vec(),
        };
        PreparedQuery { values }
    }

    /// The `[0, 1]` score of `slot` for a prepared query (DESIGN §2.2).
    pub(crate) fn score(&self, query: &PreparedQuery, slot: u32) -> f32 {
        let row = self.row(slot);
        let raw = match self.metric {
            Metric::Euclidean => (self.kernels.l2sq)(&query.values, row),
            _ => (self.kernels.dot)(&query.values, row),
        };
        self.score_from_raw(raw, slot)
    }

    /// Turns a kernel result (dot or squared distance against the stored row) into a score.
    #[inline]
    pub(crate) fn score_from_raw(&self, raw: f32, slot: u32) -> f32 {
        let s = match self.metric {
            Metric::Cosine => (1.0 + raw * self.inv_norm(slot)) / 2.0,
            Metric::Euclidean => 1.0 / (1.0 + raw),
            Metric::DotProduct => (1.0 + raw) / 2.0,
        };
        // NaN only from overflowing products of huge (but finite) inputs: rank it last.
        if s.is_nan() { 0.0 } else { s.clamp(0.0, 1.0) }
    }

    /// A copy holding only the live vectors, renumbered densely in slot order.
    pub(crate) fn compacted(&self) -> Store {
        let mut out = Store::new(self.dim, self.metric, self.kernels);
        if self.codes.is_some() {
            out = out.with_codes();
        }
        if self.bits.is_some() {
            out = out.with_bits();
        }
        out.data.reserve(self.len() * self.dim);
        out.ids.reserve(self.len());
        for slot in 0..self.slots() as u32 {
            if self.is_live(slot) {
                let new_slot = out.ids.len() as u32;
                out.data.extend_from_slice(self.row(slot));
                if self.metric == Metric::Cosine {
                    out.inv_norms.push(self.inv_norms[slot as usize]);
                    if let Some(v) = self.originals.get(&slot) {
                        out.originals.insert(new_slot, v.clone());
                    }
                }
                out.ids.push(self.ids[slot as usize]);
                out.live.push(true);
                out.slot_of.insert(self.ids[slot as usize], new_slot);
                if out.codes.is_some() {
                    out.push_codes(new_slot);
                }
                if let Some(bits) = &mut out.bits {
                    bits.push(self.row(slot), self.metric == Metric::Cosine);
                }
            }
        }
        out
    }

    /// Approximate heap bytes.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.data.capacity() * 4
            + self.inv_norms.capacity() * 4
            + self.originals.capacity() * 8 / 7 * (4 + 16 + 1)
            + self.originals.len() * self.dim * 4
            + self.ids.capacity() * 4
            + self.live.capacity()
            // hashbrown: key + value + one control byte per bucket, buckets ≈ capacity * 8 / 7
            + self.slot_of.capacity() * 8 / 7 * (4 + 4 + 1)
            + self.codes.as_ref().map_or(0, |c| {
                c.data.capacity() + c.mult.capacity() * 4 + c.sq_norms.capacity() * 4
            })
            + self.bits.as_ref().map_or(0, BitCodes::memory_bytes)
    }
}
