//! Distance kernels: dot product and squared Euclidean distance, one vector against one, and
//! one query against a block of contiguous rows.
//!
//! The portable bodies are written so LLVM vectorises them without fast-math: `LANES`
//! independent accumulators per chunk (no reassociation needed), the tail summed separately. On
//! x86-64 with AVX2 and FMA (detected at run time) explicit 256-bit intrinsics with four FMA
//! accumulators (enough to cover the FMA latency at two loads per cycle).
//!
//! Measured on this machine (AMD EPYC Zen 4, 384-d, `cargo bench --bench dense -- kernel`):
//! portable ≈ 160 ns per 384-d dot, AVX2+FMA ≈ 78 ns (both under a load of 6 on 2 cores; the
//! ratio is what matters). This is the only module of the dense engine with `unsafe`.

/// Kernel functions picked once for the running CPU.
#[derive(Clone, Copy)]
pub(crate) struct Kernels {
    /// Inner product of two equal-length slices.
    pub(crate) dot: fn(&[f32], &[f32]) -> f32,
    /// Squared Euclidean distance of two equal-length slices.
    pub(crate) l2sq: fn(&[f32], &[f32]) -> f32,
    /// `out[r] = dot(query, rows[r * dim..][..dim])` for each `r < out.len()`.
    pub(crate) dot_rows: fn(&[f32], &[f32], &mut [f32]),
    /// `out[r] = l2sq(query, rows[r * dim..][..dim])` for each `r < out.len()`.
    pub(crate) l2sq_rows: fn(&[f32], &[f32], &mut [f32]),
    /// Inner product of two equal-length int8 slices (the quantised walk's codes), exact
    /// in `i32` for any dimension below 130,000.
    pub(crate) dot_i8: fn(&[i8], &[i8]) -> i32,
    /// `dot` of one query against four rows at once (each `query.len()` long): the four rows
    /// are read side by side, so their cache misses overlap. Sums may round differently
    /// from `dot` in the last bit; graph walks use it, exact scores come from `dot`.
    pub(crate) dot4: fn(&[f32], [&[f32]; 4]) -> [f32; 4],
    /// `l2sq` of one query against four rows at once, like `dot4`.
    pub(crate) l2sq4: fn(&[f32], [&[f32]; 4]) -> [f32; 4],
    /// `Σ_j 2^j · popcount(code & planes[j])` over the four bit planes of a 4-bit query laid
    /// out one after another in `planes` (each `code.len()` words): the 1-bit walk's
    /// `Σ_i bit_i · query_i` (see `bit_codes`).
    pub(crate) bit_dot: BitDot,
    /// `bit_dot` of many codes against one query: `out[i]` for the code at
    /// `records[slots[i] * stride..]`, each `planes.len() / 4` words (0 for a code past the
    /// end of `records`). One call per expanded node instead of one per neighbour, with the
    /// query's planes loaded once.
    pub(crate) bit_dots: BitDots,
    /// Whether the AVX2/FMA versions were selected.
    pub(crate) simd: bool,
}

/// The bit-plane kernel: `(code, planes)` (see `Kernels::bit_dot`).
pub(crate) type BitDot = fn(&[u64], &[u64]) -> u32;

/// The batched bit-plane kernel: `(records, stride, slots, planes, out)` (see
/// `Kernels::bit_dots`).
pub(crate) type BitDots = fn(&[u64], usize, &[u32], &[u64], &mut [u32]);

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernels").field("simd", &self.simd).finish()
    }
}

impl Kernels {
    /// The fastest kernels this CPU supports.
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                let (bit_dot, bit_dots) = x86::bit_kernels();
                return Kernels {
                    dot: x86::dot,
                    l2sq: x86::l2sq,
                    dot_rows: x86::dot_rows,
                    l2sq_rows: x86::l2sq_rows,
                    dot_i8: x86::dot_i8,
                    dot4: x86::dot4,
                    l2sq4: x86::l2sq4,
                    bit_dot,
                    bit_dots,
                    simd: true,
                };
            }
        }
        Self::portable()
    }

    /// The portable kernels (any CPU).
    pub(crate) fn portable() -> Self {
        Kernels {
            dot: portable::dot,
            l2sq: portable::l2sq,
            dot_rows: portable::dot_rows,
            l2sq_rows: portable::l2sq_rows,
            dot_i8: portable::dot_i8,
            dot4: portable::dot4,
            l2sq4: portable::l2sq4,
            bit_dot: portable::bit_dot,
            bit_dots: portable::bit_dots,
            simd: false,
        }
    }
}

#[inline(always)]
fn dot_body<const LANES: usize>(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; LANES];
    let ca = a.chunks_exact(LANES);
    let cb = b.chunks_exact(LANES);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    reduce(acc) + tail
}

#[inline(always)]
fn l2sq_body<const LANES: usize>(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; LANES];
    let ca = a.chunks_exact(LANES);
    let cb = b.chunks_exact(LANES);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += (x - y) * (x - y);
    }
    reduce(acc) + tail
}

/// Pairwise sum of the accumulators (a tree, so it vectorises and keeps rounding balanced).
#[inline(always)]
fn reduce<const LANES: usize>(mut acc: [f32; LANES]) -> f32 {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0]
}

#[inline(always)]
fn rows_body(query: &[f32], rows: &[f32], out: &mut [f32], one: impl Fn(&[f32], &[f32]) -> f32) {
    let dim = query.len();
    if dim == 0 {
        out.fill(0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(dim)) {
        *o = one(query, row);
    }
}

mod portable {
    const LANES: usize = 16;

    pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
        super::dot_body::<LANES>(a, b)
    }

    pub(super) fn l2sq(a: &[f32], b: &[f32]) -> f32 {
        super::l2sq_body::<LANES>(a, b)
    }

    pub(super) fn dot_rows(query: &[f32], rows: &[f32], out: &mut [f32]) {
        super::rows_body(query, rows, out, super::dot_body::<LANES>);
    }

    pub(super) fn l2sq_rows(query: &[f32], rows: &[f32], out: &mut [f32]) {
        super::rows_body(query, rows, out, super::l2sq_body::<LANES>);
    }

    pub(super) fn dot4(query: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
        rows.map(|row| dot(query, row))
    }

    pub(super) fn l2sq4(query: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
        rows.map(|row| l2sq(query, row))
    }

    pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum()
    }

    #[inline(always)]
    pub(super) fn bit_dots(
        records: &[u64],
        stride: usize,
        slots: &[u32],
        planes: &[u64],
        out: &mut [u32],
    ) {
        let w = planes.len() / 4;
        for (o, &slot) in out.iter_mut().zip(slots) {
            let start = slot as usize * stride;
            *o = records
                .get(start..start + w)
                .map_or(0, |code| bit_dot(code, planes));
        }
    }

    #[inline(always)]
    pub(super) fn bit_dot(code: &[u64], planes: &[u64]) -> u32 {
        let w = code.len();
        let mut sum = 0u32;
        for (j, plane) in planes.chunks_exact(w.max(1)).take(4).enumerate() {
            let ones: u32 = code
                .iter()
                .zip(plane)
                .map(|(c, p)| (c & p).count_ones())
                .sum();
            sum += ones << j;
        }
        sum
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! AVX2 + FMA versions with explicit intrinsics (LLVM's auto-vectorisation of the
    //! `mul_add` body produced 2-wide `vmovsd` loads and stack spills: 2.6x slower). The safe
    //! wrappers are only handed out by `Kernels::detect` after `is_x86_feature_detected!`
    //! confirmed both features, which is what makes them sound.
    use std::arch::x86_64::{
        __m256, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehl_ps, _mm_shuffle_ps,
        _mm256_add_ps, _mm256_castps256_ps128, _mm256_extractf128_ps, _mm256_fmadd_ps,
        _mm256_loadu_ps, _mm256_setzero_ps, _mm256_sub_ps,
    };

    #[target_feature(enable = "avx2,fma")]
    fn hsum(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps::<1>(v);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s));
        _mm_cvtss_f32(s)
    }

    /// int8 inner product: 32 codes per step, widened to i16 and multiplied pairwise into
    /// i32 lanes (`vpmaddwd`).
    #[target_feature(enable = "avx2,fma")]
    fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
        use std::arch::x86_64::{
            __m128i, __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_shuffle_epi32,
            _mm256_add_epi32, _mm256_castsi256_si128, _mm256_cvtepi8_epi16,
            _mm256_extracti128_si256, _mm256_madd_epi16, _mm256_setzero_si256,
        };
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc0: __m256i = _mm256_setzero_si256();
        let mut acc1: __m256i = _mm256_setzero_si256();
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: i + 32 <= n <= a.len(), b.len(): both 16-byte loads at i and i + 16 are
            // in bounds (unaligned loads).
            let (x0, y0, x1, y1) = unsafe {
                (
                    _mm_loadu_si128(pa.add(i).cast::<__m128i>()),
                    _mm_loadu_si128(pb.add(i).cast::<__m128i>()),
                    _mm_loadu_si128(pa.add(i + 16).cast::<__m128i>()),
                    _mm_loadu_si128(pb.add(i + 16).cast::<__m128i>()),
                )
            };
            acc0 = _mm256_add_epi32(
                acc0,
                _mm256_madd_epi16(_mm256_cvtepi8_epi16(x0), _mm256_cvtepi8_epi16(y0)),
            );
            acc1 = _mm256_add_epi32(
                acc1,
                _mm256_madd_epi16(_mm256_cvtepi8_epi16(x1), _mm256_cvtepi8_epi16(y1)),
            );
            i += 32;
        }
        let acc = _mm256_add_epi32(acc0, acc1);
        let s = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        let mut total = _mm_cvtsi128_si32(s);
        for k in i..n {
            total += i32::from(a[k]) * i32::from(b[k]);
        }
        total
    }

    pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
        // SAFETY: only reachable through `Kernels::detect`, after AVX2 and FMA were detected.
        unsafe { dot_i8_avx2(a, b) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (j, acc) in acc.iter_mut().enumerate() {
                // SAFETY: i + 8 * j + 8 <= i + 32 <= n <= a.len(), b.len(): in bounds.
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_ps(pa.add(i + 8 * j)),
                        _mm256_loadu_ps(pb.add(i + 8 * j)),
                    )
                };
                *acc = _mm256_fmadd_ps(x, y, *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            // SAFETY: i + 8 <= n: in bounds.
            let (x, y) = unsafe { (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i))) };
            acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
            i += 8;
        }
        let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut total = hsum(sum);
        for k in i..n {
            total += a[k] * b[k];
        }
        total
    }

    #[target_feature(enable = "avx2,fma")]
    fn l2sq_avx2(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (j, acc) in acc.iter_mut().enumerate() {
                // SAFETY: i + 8 * j + 8 <= i + 32 <= n <= a.len(), b.len(): in bounds.
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_ps(pa.add(i + 8 * j)),
                        _mm256_loadu_ps(pb.add(i + 8 * j)),
                    )
                };
                let d = _mm256_sub_ps(x, y);
                *acc = _mm256_fmadd_ps(d, d, *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            // SAFETY: i + 8 <= n: in bounds.
            let (x, y) = unsafe { (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i))) };
            let d = _mm256_sub_ps(x, y);
            acc[0] = _mm256_fmadd_ps(d, d, acc[0]);
            i += 8;
        }
        let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut total = hsum(sum);
        for k in i..n {
            total += (a[k] - b[k]) * (a[k] - b[k]);
        }
        total
    }

    /// One query against four rows, 16 floats per step: two accumulators per row (eight FMA
    /// chains) and each query load shared by the four rows.
    #[target_feature(enable = "avx2,fma")]
    fn batch4_avx2<const L2: bool>(q: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
        let n = rows.iter().fold(q.len(), |n, r| n.min(r.len()));
        let pq = q.as_ptr();
        let pr = rows.map(<[f32]>::as_ptr);
        let mut acc = [[_mm256_setzero_ps(); 2]; 4];
        let mut i = 0;
        while i + 16 <= n {
            for h in 0..2 {
                // SAFETY: i + 8 * h + 8 <= i + 16 <= n <= every slice's length: in bounds.
                let x = unsafe { _mm256_loadu_ps(pq.add(i + 8 * h)) };
                for (r, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: as above.
                    let y = unsafe { _mm256_loadu_ps(pr[r].add(i + 8 * h)) };
                    acc[h] = if L2 {
                        let d = _mm256_sub_ps(x, y);
                        _mm256_fmadd_ps(d, d, acc[h])
                    } else {
                        _mm256_fmadd_ps(x, y, acc[h])
                    };
                }
            }
            i += 16;
        }
        let mut out = [0.0f32; 4];
        for (r, o) in out.iter_mut().enumerate() {
            let mut total = hsum(_mm256_add_ps(acc[r][0], acc[r][1]));
            for k in i..n {
                total += if L2 {
                    (q[k] - rows[r][k]) * (q[k] - rows[r][k])
                } else {
                    q[k] * rows[r][k]
                };
            }
            *o = total;
        }
        out
    }

    pub(super) fn dot4(query: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
        // SAFETY: only reachable through `Kernels::detect`, which checked AVX2 and FMA.
        unsafe { batch4_avx2::<false>(query, rows) }
    }

    pub(super) fn l2sq4(query: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
        // SAFETY: only reachable through `Kernels::detect`, which checked AVX2 and FMA.
        unsafe { batch4_avx2::<true>(query, rows) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn dot_rows_avx2(query: &[f32], rows: &[f32], out: &mut [f32]) {
        super::rows_body(query, rows, out, |a, b| dot_avx2(a, b));
    }

    #[target_feature(enable = "avx2,fma")]
    fn l2sq_rows_avx2(query: &[f32], rows: &[f32], out: &mut [f32]) {
        super::rows_body(query, rows, out, |a, b| l2sq_avx2(a, b));
    }

    pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: only reachable through `Kernels::detect`, which checked AVX2 and FMA.
        unsafe { dot_avx2(a, b) }
    }

    pub(super) fn l2sq(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: only reachable through `Kernels::detect`, which checked AVX2 and FMA.
        unsafe { l2sq_avx2(a, b) }
    }

    pub(super) fn dot_rows(query: &[f32], rows: &[f32], out: &mut [f32]) {
        // SAFETY: only reachable through `Kernels::detect`, which checked AVX2 and FMA.
        unsafe { dot_rows_avx2(query, rows, out) }
    }

    pub(super) fn l2sq_rows(query: &[f32], rows: &[f32], out: &mut [f32]) {
        // SAFETY: only reachable through `Kernels::detect`, which checked AVX2 and FMA.
        unsafe { l2sq_rows_avx2(query, rows, out) }
    }

    /// The best `bit_dot` and `bit_dots` for this CPU: AVX-512 with `VPOPCNTDQ` (eight words
    /// per instruction), else the scalar `popcnt` instruction (x86-64 baseline lacks it:
    /// without it `count_ones` is a dozen shifts and masks).
    pub(super) fn bit_kernels() -> (super::BitDot, super::BitDots) {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
        {
            (bit_dot_avx512_safe, bit_dots_avx512_safe)
        } else if std::arch::is_x86_feature_detected!("popcnt") {
            (bit_dot_popcnt_safe, bit_dots_popcnt_safe)
        } else {
            (super::portable::bit_dot, super::portable::bit_dots)
        }
    }

    #[target_feature(enable = "popcnt")]
    fn bit_dot_popcnt(code: &[u64], planes: &[u64]) -> u32 {
        super::portable::bit_dot(code, planes)
    }

    fn bit_dot_popcnt_safe(code: &[u64], planes: &[u64]) -> u32 {
        // SAFETY: only handed out by `bit_kernels` after `popcnt` was detected.
        unsafe { bit_dot_popcnt(code, planes) }
    }

    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    fn bit_dot_avx512(code: &[u64], planes: &[u64]) -> u32 {
        use std::arch::x86_64::{
            __mmask8, _mm512_add_epi64, _mm512_and_si512, _mm512_maskz_loadu_epi64,
            _mm512_popcnt_epi64, _mm512_reduce_add_epi64, _mm512_setzero_si512, _mm512_slli_epi64,
        };
        let w = code.len();
        if planes.len() < 4 * w {
            return super::portable::bit_dot(code, planes);
        }
        let (pc, pp) = (code.as_ptr().cast::<i64>(), planes.as_ptr().cast::<i64>());
        let mut acc = _mm512_setzero_si512();
        let mut i = 0;
        while i < w {
            let mask: __mmask8 = if w - i >= 8 {
                0xFF
            } else {
                (1u8 << (w - i)) - 1
            };
            // SAFETY: the mask enables only words `i..min(i + 8, w)`, in bounds of `code` and
            // of each plane `j * w..(j + 1) * w` of `planes` (`planes.len() >= 4 * w`); masked
            // lanes are not read.
            let (c, p0, p1, p2, p3) = unsafe {
                (
                    _mm512_maskz_loadu_epi64(mask, pc.add(i)),
                    _mm512_maskz_loadu_epi64(mask, pp.add(i)),
                    _mm512_maskz_loadu_epi64(mask, pp.add(w + i)),
                    _mm512_maskz_loadu_epi64(mask, pp.add(2 * w + i)),
                    _mm512_maskz_loadu_epi64(mask, pp.add(3 * w + i)),
                )
            };
            let c0 = _mm512_popcnt_epi64(_mm512_and_si512(c, p0));
            let c1 = _mm512_popcnt_epi64(_mm512_and_si512(c, p1));
            let c2 = _mm512_popcnt_epi64(_mm512_and_si512(c, p2));
            let c3 = _mm512_popcnt_epi64(_mm512_and_si512(c, p3));
            let lo = _mm512_add_epi64(c0, _mm512_slli_epi64::<1>(c1));
            let hi = _mm512_add_epi64(c2, _mm512_slli_epi64::<1>(c3));
            acc = _mm512_add_epi64(acc, _mm512_add_epi64(lo, _mm512_slli_epi64::<2>(hi)));
            i += 8;
        }
        _mm512_reduce_add_epi64(acc) as u32
    }

    #[target_feature(enable = "popcnt")]
    fn bit_dots_popcnt(
        records: &[u64],
        stride: usize,
        slots: &[u32],
        planes: &[u64],
        out: &mut [u32],
    ) {
        super::portable::bit_dots(records, stride, slots, planes, out);
    }

    fn bit_dots_popcnt_safe(
        records: &[u64],
        stride: usize,
        slots: &[u32],
        planes: &[u64],
        out: &mut [u32],
    ) {
        // SAFETY: only handed out by `bit_kernels` after `popcnt` was detected.
        unsafe { bit_dots_popcnt(records, stride, slots, planes, out) }
    }

    /// Codes of up to eight words (every dimension up to 512) keep the four planes in
    /// registers across the codes; longer ones go through `bit_dot_avx512` one by one.
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    fn bit_dots_avx512(
        records: &[u64],
        stride: usize,
        slots: &[u32],
        planes: &[u64],
        out: &mut [u32],
    ) {
        use std::arch::x86_64::{
            __mmask8, _mm512_add_epi64, _mm512_and_si512, _mm512_maskz_loadu_epi64,
            _mm512_popcnt_epi64, _mm512_reduce_add_epi64, _mm512_slli_epi64,
        };
        let w = planes.len() / 4;
        if w == 0 || w > 8 {
            for (o, &slot) in out.iter_mut().zip(slots) {
                let start = slot as usize * stride;
                *o = records
                    .get(start..start + w)
                    .map_or(0, |code| bit_dot_avx512(code, planes));
            }
            return;
        }
        let mask: __mmask8 = if w == 8 { 0xFF } else { (1u8 << w) - 1 };
        let pp = planes.as_ptr().cast::<i64>();
        // SAFETY: `planes.len() >= 4 * w` and the mask enables words `0..w` of each plane.
        let (p0, p1, p2, p3) = unsafe {
            (
                _mm512_maskz_loadu_epi64(mask, pp),
                _mm512_maskz_loadu_epi64(mask, pp.add(w)),
                _mm512_maskz_loadu_epi64(mask, pp.add(2 * w)),
                _mm512_maskz_loadu_epi64(mask, pp.add(3 * w)),
            )
        };
        for (o, &slot) in out.iter_mut().zip(slots) {
            let start = slot as usize * stride;
            let Some(code) = records.get(start..start + w) else {
                *o = 0;
                continue;
            };
            // SAFETY: `code` has `w` words and the mask enables words `0..w`.
            let c = unsafe { _mm512_maskz_loadu_epi64(mask, code.as_ptr().cast::<i64>()) };
            let c0 = _mm512_popcnt_epi64(_mm512_and_si512(c, p0));
            let c1 = _mm512_popcnt_epi64(_mm512_and_si512(c, p1));
            let c2 = _mm512_popcnt_epi64(_mm512_and_si512(c, p2));
            let c3 = _mm512_popcnt_epi64(_mm512_and_si512(c, p3));
            let lo = _mm512_add_epi64(c0, _mm512_slli_epi64::<1>(c1));
            let hi = _mm512_add_epi64(c2, _mm512_slli_epi64::<1>(c3));
            *o = _mm512_reduce_add_epi64(_mm512_add_epi64(lo, _mm512_slli_epi64::<2>(hi))) as u32;
        }
    }

    fn bit_dots_avx512_safe(
        records: &[u64],
        stride: usize,
        slots: &[u32],
        planes: &[u64],
        out: &mut [u32],
    ) {
        // SAFETY: only handed out by `bit_kernels` after AVX-512F and VPOPCNTDQ were
        // detected.
        unsafe { bit_dots_avx512(records, stride, slots, planes, out) }
    }

    fn bit_dot_avx512_safe(code: &[u64], planes: &[u64]) -> u32 {
        // SAFETY: only handed out by `bit_kernels` after AVX-512F and VPOPCNTDQ were
        // detected.
        unsafe { bit_dot_avx512(code, planes) }
    }
}

pub(crate) use crate::hints::{advise_huge_pages, prefetch};

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    }

    fn naive_l2(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
            .sum()
    }

    fn data(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / u32::MAX as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn kernels_match_naive_for_every_length_and_both_variants() {
        for k in [Kernels::portable(), Kernels::detect()] {
            for n in [0, 1, 3, 7, 15, 16, 17, 31, 32, 33, 63, 100, 384, 385] {
                let a = data(n, 1 + n as u32);
                let b = data(n, 1000 + n as u32);
                let tol = 1e-4 * (n as f64 + 1.0);
                assert!(
                    ((k.dot)(&a, &b) as f64 - naive_dot(&a, &b)).abs() < tol,
                    "dot n={n}"
                );
                assert!(
                    ((k.l2sq)(&a, &b) as f64 - naive_l2(&a, &b)).abs() < tol,
                    "l2 n={n}"
                );
            }
        }
    }

    #[test]
    fn int8_dot_matches_naive_for_every_length_and_both_variants() {
        for k in [Kernels::portable(), Kernels::detect()] {
            for n in [0, 1, 15, 16, 31, 32, 33, 63, 64, 100, 384, 385, 1000] {
                let a: Vec<i8> = data(n, 7 + n as u32)
                    .iter()
                    .map(|v| (v * 127.0) as i8)
                    .collect();
                let mut b: Vec<i8> = data(n, 70 + n as u32)
                    .iter()
                    .map(|v| (v * 127.0) as i8)
                    .collect();
                if n > 3 {
                    b[0] = -128; // the extreme code, widened correctly
                }
                let naive: i32 = a.iter().zip(&b).map(|(&x, &y)| x as i32 * y as i32).sum();
                assert_eq!((k.dot_i8)(&a, &b), naive, "n={n} simd={}", k.simd);
            }
        }
    }

    #[test]
    fn batch_kernels_match_naive_for_every_length_and_both_variants() {
        for k in [Kernels::portable(), Kernels::detect()] {
            for n in (0..70).chain([384, 385]) {
                let q = data(n, 11);
                let tol = 1e-4 * (n as f64 + 1.0);
                let rows: Vec<Vec<f32>> = (0..4).map(|r| data(n, 20 + r)).collect();
                let refs = [&rows[0][..], &rows[1][..], &rows[2][..], &rows[3][..]];
                let dots = (k.dot4)(&q, refs);
                let l2s = (k.l2sq4)(&q, refs);
                for r in 0..4 {
                    let (d, l) = (naive_dot(&q, refs[r]), naive_l2(&q, refs[r]));
                    assert!((dots[r] as f64 - d).abs() < tol, "dot4 n={n} r={r}");
                    assert!((l2s[r] as f64 - l).abs() < tol, "l2sq4 n={n} r={r}");
                }
            }
        }
    }

    #[test]
    fn bit_dot_matches_naive_for_every_width_and_variant() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for w in [1, 2, 5, 6, 7, 8, 9, 12, 16, 17] {
            let code: Vec<u64> = (0..w).map(|_| next()).collect();
            let mut planes: Vec<u64> = (0..4 * w).map(|_| next()).collect();
            planes[0] = u64::MAX; // a full word, every bit counted
            let naive: u32 = (0..4)
                .map(|j| {
                    (0..w * 64)
                        .filter(|&b| {
                            code[b / 64] >> (b % 64) & 1 == 1
                                && planes[j * w + b / 64] >> (b % 64) & 1 == 1
                        })
                        .count() as u32
                        * (1 << j)
                })
                .sum();
            for k in [Kernels::portable(), Kernels::detect()] {
                assert_eq!((k.bit_dot)(&code, &planes), naive, "w={w} simd={}", k.simd);
                // The batched kernel: the code as record 2 of 3 (stride w + 3), record 0
                // another code, and a slot past the end.
                let stride = w + 3;
                let mut records: Vec<u64> = (0..3 * stride).map(|_| next()).collect();
                records[2 * stride..2 * stride + w].copy_from_slice(&code);
                let other = (k.bit_dot)(&records[..w], &planes);
                let mut out = [7u32; 4];
                (k.bit_dots)(&records, stride, &[2, 0, 3, 2], &planes, &mut out);
                assert_eq!(out, [naive, other, 0, naive], "w={w} simd={}", k.simd);
            }
        }
    }

    #[test]
    fn row_kernels_match_single_kernels() {
        for k in [Kernels::portable(), Kernels::detect()] {
            let dim = 37;
            let q = data(dim, 5);
            let rows = data(dim * 9, 6);
            let mut out = vec![0.0; 9];
            (k.dot_rows)(&q, &rows, &mut out);
            for (r, o) in out.iter().enumerate() {
                assert_eq!(*o, (k.dot)(&q, &rows[r * dim..][..dim]));
            }
            (k.l2sq_rows)(&q, &rows, &mut out);
            for (r, o) in out.iter().enumerate() {
                assert_eq!(*o, (k.l2sq)(&q, &rows[r * dim..][..dim]));
            }
        }
    }
}
