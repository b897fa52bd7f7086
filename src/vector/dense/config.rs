//! Parameters of a dense index and their validation.

use crate::vector::{Metric, VectorError};
use serde::{Deserialize, Serialize};

/// Which approximate nearest-neighbour graph serves namespaces above the exact-scan threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum GraphBackend {
    /// The crate's own HNSW: flat neighbour arrays, no vector copy, SIMD kernels.
    #[default]
    Native,
    /// The [hnsw_rs](https://crates.io/crates/hnsw_rs) crate (cargo feature `hnsw-rs`).
    HnswRs,
}

/// How a search walks the graph (builds always use exact distances).
///
/// In an [`IndexConfig`](crate::vector::IndexConfig)'s JSON it is `graph.traversal`, `"exact"`,
/// `"int8"` or `"bits"` (absent means exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Traversal {
    /// Exact `f32` distances on the stored vectors.
    #[default]
    Exact,
    /// Approximate distances on int8 copies of the vectors (each scaled by its largest
    /// magnitude), a quarter of the bytes per visited node; the candidates are then rescored
    /// exactly, so returned scores are exact. Costs `dimension + 4` bytes per vector (+4 more
    /// for Euclidean). Native graph only; ignored by `hnsw-rs`. Measured on 43,000 × 384-d
    /// text embeddings (`benches/peers`, 2026-11-25 19:15 run): 32,044 / 14,539 QPS at
    /// recall@10 0.95 / 0.99 against the exact walk's 15,588 / 7,620, index memory 90.0 MB
    /// against 73.3.
    Int8,
    /// 1-bit codes of the vectors (RaBitQ's estimator, one cache line per vector at 384-d)
    /// choose whom the walk visits, and each node it expands is scored exactly, so results and
    /// returned scores are exact. Costs `dimension / 8 + 16` bytes per vector (`dimension`
    /// rounded up to a multiple of 64; 64 bytes at 384-d). Native graph only; ignored by
    /// `hnsw-rs`.
    ///
    /// Meant for text and image embeddings (a low intrinsic dimension in many components):
    /// on 43,000 × 384-d text embeddings it needs a wider beam than the exact walk for the same
    /// recall (ef 96 for 0.993, where the exact walk needs 64) but answers 42,365 / 19,855
    /// queries per second at recall@10 0.95 / 0.99 against the exact walk's 15,588 / 7,620
    /// (`benches/peers`, 2026-11-25 19:15 run, one thread), for 76.1 MB of index against 73.3. Not
    /// for data without such structure: on isotropic Gaussian clusters, where a point's
    /// neighbours are all nearly as far as each other, a 1-bit estimate cannot tell them
    /// apart (384-d, ef 64: recall@10 0.60 against the exact walk's 0.91); and it loses more
    /// at fewer dimensions, where one bit per component carries less (generated embedding-like
    /// data with 32 latent dimensions, ef 64: 0.997 / 0.987 / 0.935 at 384 / 128 / 64
    /// components, against 0.9995 / 1.0 / 0.999). Use [`Traversal::Int8`] or the exact walk
    /// there. Why it is not the default: that loss on unstructured data.
    Bits,
}

impl Traversal {
    /// Whether this is the default, [`Traversal::Exact`] (left out of serialised configs).
    #[must_use]
    pub fn is_exact(&self) -> bool {
        *self == Traversal::Exact
    }
}

/// Parameters of a [`DenseIndex`](super::DenseIndex).
///
/// Build it with [`DenseConfig::new`] and adjust with the `with_*` methods; the defaults suit
/// 100- to 1000-dimensional embeddings.
///
/// # Examples
/// ```
/// use flowvec::vector::Metric;
/// use flowvec::vector::dense::DenseConfig;
/// let config = DenseConfig::new(384, Metric::Cosine).with_m(24).with_ef_search(48);
/// assert_eq!(config.ef_construction, 200);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DenseConfig {
    /// Number of components of every vector.
    pub dimension: usize,
    /// How vectors are compared.
    pub metric: Metric,
    /// Graph degree: links per node on the upper layers, twice that on the base layer
    /// (`2..=256`, default 16).
    pub m: usize,
    /// Beam width while inserting into the graph (`1..=`[`MAX_EF`], default 200).
    pub ef_construction: usize,
    /// Beam width of a search when the caller gives none (`1..=`[`MAX_EF`], default 64:
    /// recall@10 0.994 on the minilm-text set; 32 gives 0.979 there but only 0.93 on the
    /// harder 32-d synthetic clusters of the recall test).
    pub ef_search: usize,
    /// Up to this many live vectors a namespace is searched by exact scan and has no graph
    /// (default [`DEFAULT_EXACT_THRESHOLD`]); 0 builds the graph from the first vector.
    pub exact_threshold: usize,
    /// The store is compacted once tombstones (removed or replaced vectors, whose rows it
    /// still holds) pass this fraction of all slots (`(0, 1]`, default 0.25): the native graph,
    /// already repaired, is renumbered; an `hnsw-rs` graph is rebuilt from the live vectors.
    pub rebuild_fraction: f64,
    /// Which graph implementation to use.
    pub backend: GraphBackend,
    /// How searches walk the graph (default [`Traversal::Exact`]).
    pub traversal: Traversal,
    /// Threads that build the native graph when many vectors go in at once: when the index
    /// first passes the exact-scan threshold, in [`DenseIndex::insert_batch`](super::DenseIndex::insert_batch),
    /// and when a snapshot without graph links is loaded (`1..=256`, default 1). One thread
    /// builds the same graph for the same inserts every time; more build one as good but not
    /// bit for bit the same (which node sees which depends on timing), so a host that needs
    /// identical replicas keeps 1. Single inserts always use one thread; a batch uses them all
    /// whether or not the index holds removed or replaced vectors not yet compacted away.
    pub build_threads: usize,
}

/// The largest `ef` (construction or search) accepted; wider beams cost more than an exact scan
/// of any namespace that would need them.
pub const MAX_EF: usize = 10_000;

/// Default exact-scan threshold. Measured with `cargo bench --bench dense -- query` (384-d
/// cosine, k = 10, AVX2, native graph; wall times on a shared 2-core machine, so only the ratios
/// matter): exact scan of 1,000 / 2,000 / 4,000 / 10,000 vectors 160 µs / 258 µs / 544 µs /
/// 3.4 ms; graph on 10,000 vectors at ef 16 / 64 356 µs / 774 µs. At the default ef (64) the
/// two cross between 4,000 and 5,000 vectors; below that the scan is as fast and exact.
pub const DEFAULT_EXACT_THRESHOLD: usize = 4_000;

impl DenseConfig {
    /// A configuration with default graph and search parameters.
    pub fn new(dimension: usize, metric: Metric) -> Self {
        DenseConfig {
            dimension,
            metric,
            m: 16,
            ef_construction: 200,
            ef_search: 64,
            exact_threshold: DEFAULT_EXACT_THRESHOLD,
            rebuild_fraction: 0.25,
            backend: GraphBackend::default(),
            traversal: Traversal::default(),
            build_threads: 1,
        }
    }

    /// Sets [`DenseConfig::m`].
    #[must_use]
    pub fn with_m(mut self, m: usize) -> Self {
        self.m = m;
        self
    }

    /// Sets [`DenseConfig::ef_construction`].
    #[must_use]
    pub fn with_ef_construction(mut self, ef_construction: usize) -> Self {
        self.ef_construction = ef_construction;
        self
    }

    /// Sets [`DenseConfig::ef_search`].
    #[must_use]
    pub fn with_ef_search(mut self, ef_search: usize) -> Self {
        self.ef_search = ef_search;
        self
    }

    /// Sets [`DenseConfig::exact_threshold`] (0 always uses the graph).
    #[must_use]
    pub fn with_exact_threshold(mut self, exact_threshold: usize) -> Self {
        self.exact_threshold = exact_threshold;
        self
    }

    /// Sets [`DenseConfig::rebuild_fraction`].
    #[must_use]
    pub fn with_rebuild_fraction(mut self, rebuild_fraction: f64) -> Self {
        self.rebuild_fraction = rebuild_fraction;
        self
    }

    /// Sets [`DenseConfig::backend`].
    #[must_use]
    pub fn with_backend(mut self, backend: GraphBackend) -> Self {
        self.backend = backend;
        self
    }

    /// Sets [`DenseConfig::traversal`].
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::Metric;
    /// use flowvec::vector::dense::{DenseConfig, DenseIndex, Traversal};
    /// let config = DenseConfig::new(2, Metric::Cosine)
    ///     .with_traversal(Traversal::Int8)
    ///     .with_exact_threshold(0);
    /// let mut index = DenseIndex::new(config)?;
    /// index.insert(1, &[1.0, 0.0])?;
    /// index.insert(2, &[0.0, 1.0])?;
    /// let hits = index.search(&[0.9, 0.1], 1, None, None, None)?;
    /// assert_eq!(hits[0].0, 1);
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    #[must_use]
    pub fn with_traversal(mut self, traversal: Traversal) -> Self {
        self.traversal = traversal;
        self
    }

    /// Sets [`DenseConfig::build_threads`].
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::Metric;
    /// use flowvec::vector::dense::{DenseConfig, DenseIndex};
    /// let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    /// let config = DenseConfig::new(2, Metric::Euclidean)
    ///     .with_exact_threshold(0)
    ///     .with_build_threads(threads);
    /// let mut index = DenseIndex::new(config)?;
    /// let points: Vec<(u32, [f32; 2])> = (0..100).map(|i| (i, [i as f32, 1.0])).collect();
    /// index.insert_batch(points.iter().map(|(id, v)| (*id, v.as_slice())))?;
    /// let hits = index.search(&[42.2, 1.0], 1, None, None, None)?;
    /// assert_eq!(hits[0].0, 42);
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    #[must_use]
    pub fn with_build_threads(mut self, build_threads: usize) -> Self {
        self.build_threads = build_threads;
        self
    }

    /// Checks every parameter.
    ///
    /// # Errors
    /// [`VectorError::InvalidParameter`] naming the first parameter out of range.
    pub fn validate(&self) -> Result<(), VectorError> {
        fn bad(name: &'static str, value: impl ToString, expected: &'static str) -> VectorError {
            VectorError::InvalidParameter {
                name,
                value: value.to_string(),
                expected,
            }
        }
        if self.dimension == 0 {
            return Err(bad("dimension", 0, "at least 1"));
        }
        if !(2..=256).contains(&self.m) {
            return Err(bad("m", self.m, "between 2 and 256"));
        }
        if !(1..=MAX_EF).contains(&self.ef_construction) {
            return Err(bad(
                "ef_construction",
                self.ef_construction,
                "between 1 and 10000",
            ));
        }
        if !(1..=MAX_EF).contains(&self.ef_search) {
            return Err(bad("ef_search", self.ef_search, "between 1 and 10000"));
        }
        if !(1..=256).contains(&self.build_threads) {
            return Err(bad(
                "build_threads",
                self.build_threads,
                "between 1 and 256",
            ));
        }
        if !(self.rebuild_fraction > 0.0 && self.rebuild_fraction <= 1.0) {
            return Err(bad("rebuild_fraction", self.rebuild_fraction, "in (0, 1]"));
        }
        if !backend_available(self.backend) {
            return Err(bad(
                "backend",
                format!("{:?}", self.backend),
                "a backend compiled in (hnsw_rs needs the `hnsw-rs` cargo feature)",
            ));
        }
        Ok(())
    }
}

fn backend_available(backend: GraphBackend) -> bool {
    match backend {
        GraphBackend::Native => true,
        GraphBackend::HnswRs => cfg!(feature = "hnsw-rs"),
    }
}
