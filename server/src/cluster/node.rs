//! This node in the group: who leads, where the leader is, the read barrier, and forwarding
//! a request to the leader.

use std::sync::Arc;
use std::time::Duration;

use openraft::ServerState;
use serde::{Deserialize, Serialize};

use super::network::Network;
use super::types::{NodeId, Raft};

/// What a read waits for before it is answered (`--read-consistency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadConsistency {
    /// The leader confirms it still leads (a heartbeat round to a quorum) and gives its commit
    /// index; the node answering waits until it has applied that far. A read sees every write
    /// acknowledged before it started, on any node (read index, Raft §6.4).
    Linearizable,
    /// The node answers from what it has applied (a follower may be behind by the entries in
    /// flight; after a partition, by more).
    Local,
}

/// How long a read waits for the leader's read index and this node's apply.
const READ_WAIT: Duration = Duration::from_secs(5);
/// How long a forwarded request may take (the leader answers a write within its own timeout).
const FORWARD_WAIT: Duration = Duration::from_secs(15);

pub(crate) struct Node {
    pub(crate) id: NodeId,
    pub(crate) raft: Raft,
    pub(crate) network: Network,
    pub(crate) read: ReadConsistency,
}

/// A client request as it crosses to the leader.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Forwarded {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

/// The leader's answer to a [`Forwarded`] request.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ForwardedAnswer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Node {
    /// Whether this node leads now (as far as it knows).
    pub(crate) fn is_leader(&self) -> bool {
        let m = self.raft.metrics();
        let m = m.borrow();
        m.state == ServerState::Leader && m.current_leader == Some(self.id)
    }

    /// The leader and the address this node reaches it at, if one is known.
    pub(crate) fn leader(&self) -> Option<(NodeId, String)> {
        let m = self.raft.metrics();
        let m = m.borrow();
        let leader = m.current_leader?;
        let node = m.membership_config.membership().get_node(&leader)?.clone();
        Some((leader, self.network.addr_of(leader, &node)))
    }

    /// Whether the group has one voter and no learners: every write is applied here before
    /// it is acknowledged, so reads need no barrier.
    pub(crate) fn alone(&self) -> bool {
        let m = self.raft.metrics();
        let m = m.borrow();
        let membership = m.membership_config.membership();
        membership.voter_ids().count() == 1 && membership.learner_ids().count() == 0
    }

    /// Waits until a read here sees every write acknowledged before it was called (see
    /// [`ReadConsistency`]); an error says why it cannot (no leader, leader unreachable).
    pub(crate) async fn read_barrier(&self) -> Result<(), String> {
        if self.read == ReadConsistency::Local || self.alone() {
            return Ok(());
        }
        let index = if self.is_leader() {
            match tokio::time::timeout(READ_WAIT, self.raft.ensure_linearizable()).await {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(err)) => return Err(format!("this node could not confirm it leads: {err}")),
                Err(_) => return Err("this node could not reach a quorum within 5 s".to_owned()),
            }
        } else {
            let (leader, addr) = self
                .leader()
                .ok_or_else(|| "no leader is known (an election is under way)".to_owned())?;
            self.ask_read_index(leader, &addr).await?
        };
        if let Some(index) = index {
            self.raft
                .wait(Some(READ_WAIT))
                .applied_index_at_least(Some(index), "read barrier")
                .await
                .map_err(|err| format!("this node did not apply up to the leader's read index {index} within 5 s: {err}"))?;
        }
        Ok(())
    }

    async fn ask_read_index(&self, leader: NodeId, addr: &str) -> Result<Option<u64>, String> {
        self.post_to(leader, addr, "read-index", Vec::new(), READ_WAIT)
            .await
            .map_err(|err| format!("no read index: {err}"))
    }

    /// Sends a request to the leader and returns its answer.
    pub(crate) async fn forward(&self, request: &Forwarded) -> Result<ForwardedAnswer, String> {
        let (leader, addr) = self
            .leader()
            .ok_or_else(|| "no leader is known (an election is under way); try again".to_owned())?;
        if leader == self.id {
            return Err("this node leads no longer; try again".to_owned());
        }
        let body = rmp_serde::to_vec_named(request).map_err(|err| err.to_string())?;
        self.post_to(leader, &addr, "forward", body, FORWARD_WAIT)
            .await
            .map_err(|err| format!("{err}; the write's outcome is unknown"))
    }

    /// `POST http://<addr>/raft/<rpc>` to `leader`, its MessagePack answer decoded.
    async fn post_to<T: serde::de::DeserializeOwned>(
        &self,
        leader: NodeId,
        addr: &str,
        rpc: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<T, String> {
        let res = self
            .network
            .client
            .post(format!("http://{addr}/raft/{rpc}"))
            .timeout(timeout)
            .body(body)
            .send()
            .await
            .map_err(|err| format!("the leader (node {leader} at {addr}) did not answer: {err}"))?;
        let status = res.status();
        let bytes = res
            .bytes()
            .await
            .map_err(|err| format!("the leader's answer (node {leader}): {err}"))?;
        if !status.is_success() {
            return Err(format!(
                "the leader (node {leader}) answered {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        rmp_serde::from_slice(&bytes)
            .map_err(|err| format!("the leader's answer (node {leader}): {err}"))
    }
}

/// Shared by the HTTP side and the cluster port.
pub(crate) type SharedNode = Arc<Node>;
