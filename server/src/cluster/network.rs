//! The client side of the Raft RPCs: `POST http://<addr>/raft/<rpc>` with a MessagePack body
//! (every `f32` kept bit for bit), answered with the MessagePack of the remote node's
//! `Result`. The address of a peer is this node's own `--peers` entry when it has one (so a
//! test can route every link through a proxy it cuts), else the one the membership records.

use std::sync::Arc;
use std::time::Duration;

use openraft::BasicNode;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::types::{NodeId, Peers, TypeConfig};

/// Makes a [`Conn`] per peer; all share one HTTP client (its connection pool).
#[derive(Clone)]
pub(crate) struct Network {
    pub(crate) client: reqwest::Client,
    pub(crate) peers: Arc<Peers>,
}

impl Network {
    pub(crate) fn new(peers: Arc<Peers>) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(500))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|err| format!("raft HTTP client: {err}"))?;
        Ok(Self { client, peers })
    }

    /// The address this node uses for `target`.
    pub(crate) fn addr_of(&self, target: NodeId, node: &BasicNode) -> String {
        self.peers
            .get(&target)
            .cloned()
            .unwrap_or_else(|| node.addr.clone())
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Conn;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Conn {
        Conn {
            client: self.client.clone(),
            addr: self.addr_of(target, node),
            target,
        }
    }
}

/// The RPCs to one peer.
pub(crate) struct Conn {
    client: reqwest::Client,
    addr: String,
    target: NodeId,
}

type Rpc<T, E> = Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl Conn {
    async fn call<Req, Resp, E>(&self, rpc: &str, req: &Req, timeout: Duration) -> Rpc<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let body = rmp_serde::to_vec_named(req)
            .map_err(|err| RPCError::Network(NetworkError::new(&err)))?;
        let sent = self
            .client
            .post(format!("http://{}/raft/{rpc}", self.addr))
            .header("content-type", "application/msgpack")
            .timeout(timeout)
            .body(body)
            .send()
            .await;
        let res = match sent {
            Ok(res) => res,
            Err(err) if err.is_connect() => {
                return Err(RPCError::Unreachable(Unreachable::new(&err)));
            }
            Err(err) => return Err(RPCError::Network(NetworkError::new(&err))),
        };
        if !res.status().is_success() {
            let status = res.status();
            let text = res.text().await.unwrap_or_default();
            return Err(RPCError::Network(NetworkError::new(
                &std::io::Error::other(format!("node {} answered {status}: {text}", self.target)),
            )));
        }
        let bytes = res
            .bytes()
            .await
            .map_err(|err| RPCError::Network(NetworkError::new(&err)))?;
        let answer: Result<Resp, RaftError<NodeId, E>> = rmp_serde::from_slice(&bytes)
            .map_err(|err| RPCError::Network(NetworkError::new(&err)))?;
        answer.map_err(|err| RPCError::RemoteError(RemoteError::new(self.target, err)))
    }
}

impl RaftNetwork<TypeConfig> for Conn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Rpc<AppendEntriesResponse<NodeId>, openraft::error::Infallible> {
        self.call("append", &rpc, option.hard_ttl()).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Rpc<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        self.call("snapshot", &rpc, option.hard_ttl()).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Rpc<VoteResponse<NodeId>, openraft::error::Infallible> {
        self.call("vote", &rpc, option.hard_ttl()).await
    }
}
