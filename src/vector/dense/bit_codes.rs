//! 1-bit codes of the rows, for a graph walk that estimates a neighbour's distance from one
//! cache line ([`Traversal::Bits`](super::Traversal::Bits)).
//!
//! The estimator is RaBitQ's (Gao & Long, SIGMOD 2024) without a centroid: each graph vector
//! `o` (the unit row for cosine) is rotated by a fixed orthogonal transform `P`, and its code
//! is the sign of each rotated component, `b_i = [(P·o/|o|)_i > 0]`, read as the vector
//! `x̄ = (2b − 1)/√D`. For a query `q`,
//! `⟨o, q⟩ ≈ |o| · ⟨x̄, P·q⟩ / ⟨x̄, P·o/|o|⟩`; the denominator is the code's own alignment,
//! stored per row. The query is rotated once and quantised to 4 bits per component, so
//! `⟨x̄, P·q⟩` becomes four `AND`+`popcount` passes over the code (`Kernels::bit_dot`).
//! Measured on minilm-text (43k × 384-d, numpy model of this estimator, 300 queries): the
//! estimate's error has standard deviation 0.038 in cosine, and the 50 best estimates over the
//! whole set hold 98.7% of the true top 10. Subtracting the data's centroid first (as RaBitQ
//! does) moved these to 0.0375 / 98.7%: not worth a global, order-dependent state, so there is
//! none and a row's code depends on the row alone. Without the rotation: 0.0387 / 98.6% on
//! that set, but sign codes of data whose variance sits in a few axes would waste most bits,
//! so the rotation stays: two rounds of random signs, a Walsh–Hadamard transform per block
//! and a random permutation, `O(D log D)` per vector (a dense random rotation measured the
//! same, 0.0383, at `D²` per query).
//!
//! Each row's record is one cache line for 384 dimensions: the code words, then its factors
//! (`|o| / ⟨x̄, P·o/|o|⟩`, the popcount, `|o|²`).

use super::kernels::Kernels;
use crate::vector::Metric;

/// Rounds of (signs, block Hadamard, permutation) in the rotation.
const ROUNDS: usize = 2;
/// The rotation's fixed seed: every index, on every machine, codes a row the same way.
const ROTATION_SEED: u64 = 0xB175_C0DE_5EED_0001;
/// Levels of the query's quantisation (4 bits).
const QUERY_LEVELS: f32 = 15.0;
/// Words of factors after each row's code: `[scale, popcount, |o|², 0]` as f32 pairs.
const FACTOR_WORDS: usize = 2;

/// A fixed orthogonal transform of `R^dp`: `ROUNDS` times, flip signs, apply a normalised
/// Walsh–Hadamard transform to each block of `block` components, then permute.
#[derive(Debug, Clone)]
struct Rotation {
    block: usize,
    signs: Vec<f32>,
    perms: Vec<u32>,
}

impl Rotation {
    fn new(dp: usize) -> Self {
        // The largest power of two dividing `dp` (a multiple of 64), at most 256.
        let block = (1usize << dp.trailing_zeros()).min(256);
        let mut rng = ROTATION_SEED;
        let mut next = move || super::graph::splitmix64(&mut rng);
        let mut signs = Vec::with_capacity(ROUNDS * dp);
        let mut perms = Vec::with_capacity(ROUNDS * dp);
        for _ in 0..ROUNDS {
            signs.extend((0..dp).map(|_| if next() & 1 == 1 { 1.0 } else { -1.0 }));
            let mut perm: Vec<u32> = (0..dp as u32).collect();
            for i in (1..dp).rev() {
                let j = (next() % (i as u64 + 1)) as usize;
                perm.swap(i, j);
            }
            perms.extend(perm);
        }
        Rotation {
            block,
            signs,
            perms,
        }
    }

    /// Rotates `v` (length `dp`) in place; `tmp` is scratch.
    fn apply(&self, v: &mut [f32], tmp: &mut Vec<f32>) {
        let dp = v.len();
        let norm = 1.0 / (self.block as f32).sqrt();
        for round in 0..ROUNDS {
            for (x, s) in v.iter_mut().zip(&self.signs[round * dp..][..dp]) {
                *x *= s;
            }
            for chunk in v.chunks_exact_mut(self.block) {
                hadamard(chunk);
                for x in chunk {
                    *x *= norm;
                }
            }
            tmp.clear();
            tmp.extend(
                self.perms[round * dp..][..dp]
                    .iter()
                    .map(|&p| v[p as usize]),
            );
            v.copy_from_slice(tmp);
        }
    }
}

/// Unnormalised in-place fast Walsh–Hadamard transform (`v.len()` a power of two, at least
/// 8). The first three stages run on eight values held in registers; each later stage pairs
/// two halves slice against slice, so LLVM vectorises the butterflies.
fn hadamard(v: &mut [f32]) {
    for chunk in v.chunks_exact_mut(8) {
        let mut a = [0.0f32; 8];
        a.copy_from_slice(chunk);
        for h in [1, 2, 4] {
            let mut b = [0.0f32; 8];
            for i in 0..8 {
                b[i] = if i & h == 0 {
                    a[i] + a[i + h]
                } else {
                    a[i - h] - a[i]
                };
            }
            a = b;
        }
        chunk.copy_from_slice(&a);
    }
    let n = v.len();
    let mut h = 8;
    while h < n {
        for pair in v.chunks_exact_mut(2 * h) {
            let (lo, hi) = pair.split_at_mut(h);
            for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
                let (x, y) = (*a, *b);
                *a = x + y;
                *b = x - y;
            }
        }
        h *= 2;
    }
}

/// The rows' 1-bit codes and factors, `stride` words per slot, each record starting on a
/// cache line: one line per record up to 384 dimensions, so an estimate is one miss at most.
#[derive(Debug, Clone)]
pub(crate) struct BitCodes {
    /// Padded dimension: the row's, rounded up to a multiple of 64.
    dp: usize,
    /// Code words per row (`dp / 64`).
    words: usize,
    /// `words` rounded up to whole cache lines: the kernel reads this many words of a record
    /// (code, factors, padding) against query planes that are zero past `words`, so every
    /// load is a whole, aligned line.
    padded: usize,
    /// Words per record: code and factors, rounded up to whole cache lines.
    stride: usize,
    rotation: Rotation,
    /// `base` words of padding (to the first 64-byte boundary of the allocation), then the
    /// records. (`Vec<u64>` only promises 8-byte alignment; glibc's large allocations sit 16
    /// bytes past a page, which made every record straddle two lines: measured, 37% of the
    /// walk's time stalled on the factors' line.)
    data: Vec<u64>,
    base: usize,
}

/// A query prepared for [`BitCodes::estimate`]: the four bit planes of its rotated, 4-bit
/// quantised components, and the affine map from `bit_dot` to an inner product.
pub(crate) struct BitQuery {
    /// `base` words of padding to a 64-byte boundary, then four planes of `padded` words.
    planes: Vec<u64>,
    base: usize,
    /// `⟨x̄, P·q⟩ ≈ a · bit_dot + b · popcount − c`.
    a: f32,
    b: f32,
    c: f32,
    sq_norm: f32,
}

impl BitCodes {
    pub(crate) fn new(dim: usize) -> Self {
        let dp = dim.div_ceil(64).max(1) * 64;
        let words = dp / 64;
        BitCodes {
            dp,
            words,
            padded: words.div_ceil(8) * 8,
            stride: (words + FACTOR_WORDS).div_ceil(8) * 8,
            rotation: Rotation::new(dp),
            data: Vec::new(),
            base: 0,
        }
    }

    /// Number of records held.
    fn len(&self) -> usize {
        (self.data.len() - self.base) / self.stride
    }

    /// Makes room for `records` records in all, moving them to a new allocation (aligned
    /// again) when the current one is too small.
    fn ensure_capacity(&mut self, records: usize) {
        if self.base + records * self.stride <= self.data.capacity() {
            return;
        }
        let mut data: Vec<u64> = Vec::with_capacity(records * self.stride + 7);
        super::kernels::advise_huge_pages(&data);
        // Words to the next 64-byte boundary (the pointer is 8-aligned).
        let base = (64 - data.as_ptr() as usize % 64) % 64 / 8;
        data.resize(base, 0);
        data.extend_from_slice(&self.data[self.base..]);
        self.data = data;
        self.base = base;
    }

    /// Appends the record of the next slot, whose row is `v`; with `unit` (cosine) the graph
    /// compares the unit vector `v / |v|` instead.
    pub(crate) fn push(&mut self, v: &[f32], unit: bool) {
        let norm = super::store::norm_f64(v);
        let mut y = vec![0.0f32; self.dp];
        if norm > 0.0 && norm.is_finite() {
            for (o, x) in y.iter_mut().zip(v) {
                *o = (f64::from(*x) / norm) as f32;
            }
        }
        self.rotation
            .apply(&mut y, &mut Vec::with_capacity(self.dp));
        let len = self.len();
        if self.base + (len + 1) * self.stride > self.data.capacity() {
            // Grow by a quarter (as the store does), at least 1,024 records.
            self.ensure_capacity(len + (len / 4).max(1024));
        }
        let mut ones = 0u32;
        let mut alignment = 0.0f64;
        for chunk in y.chunks_exact(64) {
            let mut word = 0u64;
            for (bit, x) in chunk.iter().enumerate() {
                if *x > 0.0 {
                    word |= 1 << bit;
                }
                alignment += f64::from(x.abs());
            }
            ones += word.count_ones();
            self.data.push(word);
        }
        // ⟨x̄, P·o/|o|⟩ = Σ|y_i| / √D: positive for any non-zero row (at least one |y_i| > 0).
        let alignment = alignment / (self.dp as f64).sqrt();
        let norm = if unit { 1.0 } else { norm };
        let scale = if alignment > 0.0 && norm.is_finite() {
            (norm / alignment) as f32
        } else {
            0.0
        };
        let sq_norm = (norm * norm) as f32;
        self.data.push(pack(scale, ones as f32));
        self.data.push(pack(sq_norm, 0.0));
        let end = self.base + (len + 1) * self.stride;
        self.data.resize(end, 0);
    }

    /// The query prepared for estimates: `q` as the graph compares it (normalised for cosine).
    pub(crate) fn query(&self, q: &[f32], kernels: &Kernels) -> BitQuery {
        let mut y = vec![0.0f32; self.dp];
        y[..q.len().min(self.dp)].copy_from_slice(&q[..q.len().min(self.dp)]);
        self.rotation
            .apply(&mut y, &mut Vec::with_capacity(self.dp));
        let (lo, hi) = y
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(*x), hi.max(*x))
            });
        let delta = if hi > lo && (hi - lo).is_finite() {
            (hi - lo) / QUERY_LEVELS
        } else {
            1.0
        };
        let lo = if lo.is_finite() { lo } else { 0.0 };
        // Planes on whole cache lines.
        let mut planes: Vec<u64> = Vec::with_capacity(4 * self.padded + 7);
        let base = (64 - planes.as_ptr() as usize % 64) % 64 / 8;
        planes.resize(base + 4 * self.padded, 0);
        let mut levels_sum = 0u32;
        for (w, chunk) in y.chunks_exact(64).enumerate() {
            let mut bits = [0u64; 4];
            for (i, x) in chunk.iter().enumerate() {
                // `x - lo >= 0`; `as` truncates (so `+ 0.5` rounds), saturates and maps NaN
                // to 0, and `min` caps: the level is in 0..=15 for any input.
                let level = (((x - lo) / delta + 0.5) as u32).min(QUERY_LEVELS as u32);
                levels_sum += level;
                for (j, plane) in bits.iter_mut().enumerate() {
                    *plane |= u64::from(level >> j & 1) << i;
                }
            }
            for (j, plane) in bits.into_iter().enumerate() {
                planes[base + j * self.padded + w] = plane;
            }
        }
        // ⟨x̄, y⟩ = (2 Σ_{b=1} y_i − Σ y_i) / √D with y_i ≈ lo + delta · level_i.
        let root = (self.dp as f32).sqrt();
        BitQuery {
            planes,
            base,
            a: 2.0 * delta / root,
            b: 2.0 * lo / root,
            c: (delta * levels_sum as f32 + lo * self.dp as f32) / root,
            sq_norm: (kernels.dot)(q, q),
        }
    }

    /// The estimated distance of `slot` (same scale as the exact graph distance), `∞` where
    /// the estimate is not a number.
    #[inline(always)]
    pub(crate) fn estimate(
        &self,
        q: &BitQuery,
        slot: u32,
        metric: Metric,
        kernels: &Kernels,
    ) -> f32 {
        let record = &self.data[self.base + slot as usize * self.stride..][..self.stride];
        let planes = &q.planes[q.base..];
        let dot = (kernels.bit_dot)(&record[..self.padded], planes);
        Self::distance(q, &record[self.words..], dot, metric)
    }

    /// [`BitCodes::estimate`] of each of `slots` into `out` (as long as `slots`), through one
    /// kernel call per 64 slots.
    #[inline(always)]
    pub(crate) fn estimate_many(
        &self,
        q: &BitQuery,
        slots: &[u32],
        metric: Metric,
        kernels: &Kernels,
        out: &mut [f32],
    ) {
        let records = &self.data[self.base..];
        let planes = &q.planes[q.base..];
        let mut dots = [0u32; 64];
        for (slots, out) in slots.chunks(64).zip(out.chunks_mut(64)) {
            (kernels.bit_dots)(
                records,
                self.stride,
                slots,
                planes,
                &mut dots[..slots.len()],
            );
            for ((o, &slot), &dot) in out.iter_mut().zip(slots).zip(&dots) {
                let factors = &records[slot as usize * self.stride + self.words..];
                *o = Self::distance(q, factors, dot, metric);
            }
        }
    }

    /// The estimated distance from a record's `bit_dot` and its factor words.
    #[inline(always)]
    fn distance(q: &BitQuery, factors: &[u64], dot: u32, metric: Metric) -> f32 {
        let (scale, ones) = unpack(factors[0]);
        let ip = scale * (q.a * dot as f32 + q.b * ones - q.c);
        let d = match metric {
            Metric::Cosine => 1.0 - ip,
            Metric::Euclidean => q.sq_norm + unpack(factors[1]).0 - 2.0 * ip,
            Metric::DotProduct => super::graph::dot_distance(ip),
        };
        if d.is_nan() { f32::INFINITY } else { d }
    }

    /// Prefetches `slot`'s record (a hint).
    #[inline]
    pub(crate) fn prefetch(&self, slot: u32) {
        super::kernels::prefetch(&self.data, self.base + slot as usize * self.stride);
    }

    /// Makes room for `additional` more rows.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.ensure_capacity(self.len() + additional);
    }

    /// Heap bytes.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.data.capacity() * 8
            + self.rotation.signs.capacity() * 4
            + self.rotation.perms.capacity() * 4
    }
}

fn pack(a: f32, b: f32) -> u64 {
    u64::from(a.to_bits()) | u64::from(b.to_bits()) << 32
}

#[inline(always)]
fn unpack(word: u64) -> (f32, f32) {
    (
        f32::from_bits(word as u32),
        f32::from_bits((word >> 32) as u32),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed | 1;
        (0..n)
            .map(|_| {
                (0..dim)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_fast_hadamard_matches_its_definition() {
        for n in [8, 16, 128] {
            let v = vectors(1, n, n as u64).remove(0);
            let mut fast = v.clone();
            hadamard(&mut fast);
            for (i, f) in fast.iter().enumerate() {
                // H[i][j] = (-1)^popcount(i & j)
                let want: f32 = v
                    .iter()
                    .enumerate()
                    .map(|(j, x)| {
                        if (i & j).count_ones() % 2 == 0 {
                            *x
                        } else {
                            -x
                        }
                    })
                    .sum();
                assert!((f - want).abs() < 1e-4, "n {n} i {i}: {f} vs {want}");
            }
        }
    }

    /// Each level's four bits land in the four planes at the component's position.
    #[test]
    fn query_planes_hold_each_components_level() {
        let kernels = Kernels::portable();
        let codes = BitCodes::new(130);
        let q = vectors(1, 130, 5).remove(0);
        let bq = codes.query(&q, &kernels);
        let mut y = vec![0.0f32; codes.dp];
        y[..130].copy_from_slice(&q);
        codes.rotation.apply(&mut y, &mut Vec::new());
        let (lo, hi) = y
            .iter()
            .fold((f32::MAX, f32::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
        let delta = (hi - lo) / QUERY_LEVELS;
        let mut sum = 0;
        for (i, x) in y.iter().enumerate() {
            let want = ((x - lo) / delta).round() as u32;
            let got: u32 = (0..4)
                .map(|j| {
                    ((bq.planes[bq.base + j * codes.padded + i / 64] >> (i % 64)) & 1) as u32
                        * (1 << j)
                })
                .sum();
            assert!(
                got.abs_diff(want) <= 1,
                "component {i}: level {got}, want {want}"
            );
            sum += got;
        }
        // c = (delta · Σ levels + lo · D) / √D
        let c = (delta * sum as f32 + lo * codes.dp as f32) / (codes.dp as f32).sqrt();
        assert!(
            (bq.c - c).abs() <= 1e-3 * c.abs().max(1.0),
            "{} vs {c}",
            bq.c
        );
    }

    #[test]
    fn the_rotation_keeps_norms_and_inner_products() {
        for dim in [64, 100, 384, 768] {
            let codes = BitCodes::new(dim);
            let vs = vectors(2, codes.dp, dim as u64);
            let (mut a, mut b) = (vs[0].clone(), vs[1].clone());
            let ip: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let na: f32 = a.iter().map(|x| x * x).sum();
            let mut tmp = Vec::new();
            codes.rotation.apply(&mut a, &mut tmp);
            codes.rotation.apply(&mut b, &mut tmp);
            let ip2: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let na2: f32 = a.iter().map(|x| x * x).sum();
            assert!((ip - ip2).abs() < 1e-3 * na, "dim {dim}: {ip} vs {ip2}");
            assert!((na - na2).abs() < 1e-3 * na, "dim {dim}: {na} vs {na2}");
        }
    }

    /// Rows with a 16-dimensional structure in `dim` components (as text embeddings have a
    /// low intrinsic dimension): random combinations of 16 fixed random directions.
    fn structured(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let basis = vectors(16, dim, 77);
        vectors(n, 16, seed)
            .into_iter()
            .map(|z| {
                let mut v = vec![0.0; dim];
                for (zi, axis) in z.iter().zip(&basis) {
                    for (x, a) in v.iter_mut().zip(axis) {
                        *x += zi * a;
                    }
                }
                v
            })
            .collect()
    }

    /// The nearest rows by estimate hold the nearest by exact distance (the walk re-scores
    /// exactly), on structured rows.
    #[test]
    fn estimates_track_exact_distances_for_every_metric() {
        let kernels = Kernels::detect();
        let dim = 96;
        let rows = structured(2_000, dim, 3);
        let queries = structured(20, dim, 4);
        for metric in [Metric::Cosine, Metric::Euclidean, Metric::DotProduct] {
            let graph_vec = |v: &[f32]| -> Vec<f32> {
                if metric == Metric::Cosine {
                    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    v.iter().map(|x| x / n).collect()
                } else {
                    v.to_vec()
                }
            };
            let mut codes = BitCodes::new(dim);
            for r in &rows {
                codes.push(r, metric == Metric::Cosine);
            }
            let mut hits = 0;
            for q in &queries {
                let q = graph_vec(q);
                let bq = codes.query(&q, &kernels);
                let exact = |r: &[f32]| {
                    let ip: f32 = r.iter().zip(&q).map(|(x, y)| x * y).sum();
                    match metric {
                        Metric::Cosine => 1.0 - ip,
                        Metric::Euclidean => r.iter().zip(&q).map(|(x, y)| (x - y) * (x - y)).sum(),
                        Metric::DotProduct => super::super::graph::dot_distance(ip),
                    }
                };
                let mut by_exact: Vec<(f32, usize)> = rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (exact(&graph_vec(r)), i))
                    .collect();
                let mut by_est: Vec<(f32, usize)> = (0..rows.len())
                    .map(|i| (codes.estimate(&bq, i as u32, metric, &kernels), i))
                    .collect();
                by_exact.sort_by(|a, b| a.0.total_cmp(&b.0));
                by_est.sort_by(|a, b| a.0.total_cmp(&b.0));
                let top: Vec<usize> = by_est[..20].iter().map(|e| e.1).collect();
                hits += by_exact[..10].iter().filter(|e| top.contains(&e.1)).count();
            }
            // 20 queries × 10 true neighbours, among the 20 best of 2,000 estimates (1%); the
            // exact ranks all 2,000, so this is what the estimate alone finds.
            assert!(hits >= 175, "{metric:?}: {hits} of 200 found");
        }
    }

    #[test]
    fn records_start_on_cache_lines_and_survive_growth() {
        let kernels = Kernels::detect();
        for dim in [8, 384, 700] {
            let rows = vectors(2_500, dim, 9);
            let mut codes = BitCodes::new(dim);
            codes.reserve(10);
            codes.push(&rows[0], false);
            let q = codes.query(&rows[1], &kernels);
            let first = codes.estimate(&q, 0, Metric::Euclidean, &kernels);
            for r in &rows[1..] {
                codes.push(r, false);
                // The records' start is 64-byte aligned after every reallocation.
                assert_eq!((codes.data.as_ptr() as usize + codes.base * 8) % 64, 0);
            }
            assert_eq!(codes.len(), 2_500);
            assert_eq!(codes.stride % 8, 0);
            assert_eq!(codes.estimate(&q, 0, Metric::Euclidean, &kernels), first);
        }
    }

    #[test]
    fn zero_and_huge_rows_give_finite_or_infinite_estimates_never_nan() {
        let kernels = Kernels::detect();
        let mut codes = BitCodes::new(3);
        codes.push(&[0.0, 0.0, 0.0], false);
        codes.push(&[3e38, -3e38, 1.0], true);
        codes.push(&[3e38, -3e38, 1.0], false);
        let q = codes.query(&[1.0, 2.0, 3.0], &kernels);
        for metric in [Metric::Cosine, Metric::Euclidean, Metric::DotProduct] {
            for slot in 0..3 {
                assert!(!codes.estimate(&q, slot, metric, &kernels).is_nan());
            }
        }
    }
}
