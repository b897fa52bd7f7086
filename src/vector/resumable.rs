//! Resumable queries (`/resumable-query`, `-next`, `-end`): a query whose results are read page
//! by page, in score order, until the namespace is exhausted.
//!
//! - [`ResumableQuery`] is the cursor: [`Index::resumable_query`](crate::vector::Index::resumable_query)
//!   starts one and returns its first page, [`ResumableQuery::next_page`] reads the next ones.
//! - [`ResumableQueries`] is the table of open cursors a host keeps: ids, `maxIdle`, expiry at
//!   a time the host passes in ([`ResumableQueries::expire`]), a cap on open cursors
//!   ([`ResumableLimits`]), [`ResumableError::NotFound`] for an unknown or expired id. It never
//!   reads a clock.
//!
//! What pages see while writers run, what a cursor costs and why cursors are not durable is
//! documented on [`ResumableQuery`].

mod cursor;
mod error;
mod table;

pub use cursor::ResumableQuery;
pub use error::ResumableError;
pub use table::{ResumableLimits, ResumableQueries};
