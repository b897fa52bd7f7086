//! Replication: the server as a Raft group on openraft 0.9. The durable server's command
//! log is the Raft log, its snapshots are Raft snapshots, and the engines are the state
//! machine; with no `--peers` it is a one-node group on the same code path.
//!
//! - `types.rs`: the type configuration: a log entry's data is a [`Batch`](types::Batch) (the commands of
//!   one group commit and the `now` the leader stamped on them).
//! - `log_store.rs`: openraft's log storage over the redb command log (`log.rs`), with the
//!   vote and the commit index beside the entries.
//! - `state_machine.rs`: openraft's state machine over the engines; snapshots are the
//!   snapshot files of `snapshot.rs`, installed by swapping the whole service.
//! - `network.rs`: the client side of the Raft RPCs (HTTP + MessagePack, reqwest).
//! - `rpc.rs`: the cluster port: the Raft RPCs, forwarded writes, read indices, and the
//!   operator's endpoints (metrics, membership changes).
//! - `node.rs`: starting the node, initialization, leadership and read barriers.

pub(crate) mod log_store;
pub(crate) mod network;
pub(crate) mod node;
pub(crate) mod rpc;
pub(crate) mod state_machine;
pub(crate) mod types;
