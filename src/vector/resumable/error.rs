//! [`ResumableError`]: what the table of open resumable queries refuses.

use crate::vector::VectorError;

/// Why a resumable query could not be started, continued or ended.
///
/// The wire layer answers [`NotFound`](Self::NotFound) with 404,
/// [`TooManyOpen`](Self::TooManyOpen) with 429 (retry once a query has ended or expired),
/// [`InvalidMaxIdle`](Self::InvalidMaxIdle) with 400 and [`Vector`](Self::Vector) as the
/// [`VectorError`] it carries.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumableError {
    /// No open query has this id: never started, already ended, expired after `maxIdle`
    /// without use, or started before the server restarted.
    #[error(
        "resumable query {id:?} not found: unknown, ended, or expired after its maxIdle without use"
    )]
    NotFound {
        /// The id that was given.
        id: String,
    },
    /// The index already has the most open queries it allows.
    #[error(
        "too many open resumable queries: at most {max} per index; end one (/resumable-query-end) or wait until an idle one expires"
    )]
    TooManyOpen {
        /// The cap ([`ResumableLimits::max_open`](crate::vector::ResumableLimits::max_open)).
        max: usize,
    },
    /// `maxIdle` outside `1..=max` seconds.
    #[error("invalid maxIdle: {max_idle}, expected 1 to {max} seconds")]
    InvalidMaxIdle {
        /// The value given, in seconds.
        max_idle: u64,
        /// The largest allowed ([`ResumableLimits::max_idle_secs`](crate::vector::ResumableLimits::max_idle_secs)).
        max: u64,
    },
    /// The query or page request itself is bad.
    #[error(transparent)]
    Vector(#[from] VectorError),
}
