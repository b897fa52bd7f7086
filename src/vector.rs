//! Nearest-neighbour search over dense, sparse and hybrid vectors (DESIGN §2).
//!
//! The public surface has two levels:
//! - the record-level [`Index`](crate::vector) API with namespaces, ids, metadata and the query
//!   contract of the reference service (under construction);
//! - the low-level engines it is built from, public for hosts that manage their own records and
//!   for benchmarks: [`dense::DenseIndex`], [`sparse::SparseIndex`], [`fusion`] and [`filter`].

pub mod dense;
mod error;
pub mod filter;
pub mod fusion;
mod metric;
pub mod sparse;
mod topk;

pub use error::VectorError;
pub use metric::Metric;
pub use topk::{TieBreak, TopK};
