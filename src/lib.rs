//! # flowvec
//!
//! Embeddable, I/O-free Rust engines for two jobs that message-queue and vector-database
//! services do:
//!
//! - [`flow`]: deciding *when* each message may be delivered — key-scoped rate and parallelism
//!   limits, waitlists, pause, pin, resetRate and a global cap. A sans-I/O state machine: the
//!   host passes the time in and performs the deliveries.
//! - [`vector`]: nearest-neighbour search over dense, sparse and hybrid vectors in namespaces,
//!   with a metadata filter language, IDF weighting and RRF/DBSF fusion.
//! - [`management`]: the platform's database record and its password reset.
//!
//! Nothing in this crate reads a clock, opens a socket or touches a file: hosts link it and wrap
//! it in their own servers (see `examples/`).
//!
//! See `ARCHITECTURE.md` for a tour of the code.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod flow;
mod hints;
pub mod management;
pub mod state;
pub mod vector;
pub mod wire;

/// The README's code blocks, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
