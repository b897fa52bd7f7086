//! openraft's type configuration for flowvec, and the bytes of a log entry.

use std::collections::BTreeMap;
use std::io::Cursor;

use flowvec::flow::Timestamp;
use flowvec::state::{Applied, ApplyError, Command};
use serde::{Deserialize, Serialize};

/// A node's id in the group (`--node-id`).
pub(crate) type NodeId = u64;

/// The commands of one group commit, with the time the leader stamped on them: every replica
/// applies them at this `now`, so all reach the same state (the engines read no clock).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Batch {
    pub(crate) now: Timestamp,
    pub(crate) commands: Vec<Command>,
}

/// What applying a [`Batch`] did, command by command. Only the node that proposed the batch
/// reads it (in memory); it never crosses the network.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Outcomes {
    #[serde(skip)]
    pub(crate) results: Vec<Result<Applied, ApplyError>>,
}

openraft::declare_raft_types!(
    /// flowvec's Raft types: entries carry a [`Batch`]; nodes are reached at an address.
    pub(crate) TypeConfig:
        D = Batch,
        R = Outcomes,
        NodeId = NodeId,
        Node = openraft::BasicNode,
);

pub(crate) type Entry = openraft::Entry<TypeConfig>;
pub(crate) type LogId = openraft::LogId<NodeId>;
pub(crate) type Membership = openraft::StoredMembership<NodeId, openraft::BasicNode>;
pub(crate) type Raft = openraft::Raft<TypeConfig>;
pub(crate) type StorageError = openraft::StorageError<NodeId>;
pub(crate) type SnapshotMeta = openraft::SnapshotMeta<NodeId, openraft::BasicNode>;

/// The address this node uses to reach each peer (`--peers`), which may differ from the
/// address the membership records (a test puts a cuttable proxy on every link).
pub(crate) type Peers = BTreeMap<NodeId, String>;

/// Format byte of a Raft entry in the log (format 1 was the single-node `LogEntry`).
const FORMAT: u8 = 2;

/// An entry's bytes in the log: CRC-32 of the rest (little-endian), a format byte, then the
/// entry as MessagePack with field names (every `f32` kept bit for bit).
pub(crate) fn encode_entry(entry: &Entry) -> Vec<u8> {
    let mut out = vec![0u8; 4];
    out.push(FORMAT);
    rmp_serde::encode::write_named(&mut out, entry)
        .expect("entries are plain data: MessagePack encoding into a Vec cannot fail");
    let crc = crc32fast::hash(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes [`encode_entry`]'s bytes; the error says what is wrong with them.
pub(crate) fn decode_entry(bytes: &[u8]) -> Result<Entry, String> {
    if bytes.len() < 5 {
        return Err(format!(
            "{} bytes, shorter than the 5-byte header",
            bytes.len()
        ));
    }
    let stored = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let computed = crc32fast::hash(&bytes[4..]);
    if stored != computed {
        return Err(format!(
            "checksum {computed:#010x} of {} bytes, stored {stored:#010x}",
            bytes.len()
        ));
    }
    if bytes[4] != FORMAT {
        return Err(format!(
            "format {} (this build reads format {FORMAT}; format 1 is the log of a server from before replication: replay it with that version and keep its snapshot)",
            bytes[4]
        ));
    }
    rmp_serde::from_slice(&bytes[5..]).map_err(|err| format!("does not decode: {err}"))
}

/// `s` as a storage error of openraft (the node stops: its storage is in an unknown state).
pub(crate) fn storage_error(
    subject: openraft::ErrorSubject<NodeId>,
    verb: openraft::ErrorVerb,
    why: impl std::fmt::Display,
) -> StorageError {
    openraft::StorageIOError::new(subject, verb, openraft::AnyError::error(why.to_string())).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_and_a_flipped_bit_is_caught() {
        let entry = Entry {
            log_id: openraft::LogId::new(openraft::CommittedLeaderId::new(3, 1), 7),
            payload: openraft::EntryPayload::Normal(Batch {
                now: Timestamp::from_millis(5),
                commands: vec![Command::ResetAll],
            }),
        };
        let mut bytes = encode_entry(&entry);
        let back = decode_entry(&bytes).expect("decodes");
        assert_eq!(back.log_id, entry.log_id);
        assert!(matches!(
            back.payload,
            openraft::EntryPayload::Normal(Batch { now, ref commands }) if now == Timestamp::from_millis(5) && commands == &[Command::ResetAll]
        ));
        bytes[7] ^= 1;
        assert!(decode_entry(&bytes).unwrap_err().contains("checksum"));
        bytes[7] ^= 1;
        bytes[4] = 1;
        let crc = crc32fast::hash(&bytes[4..]);
        bytes[..4].copy_from_slice(&crc.to_le_bytes());
        assert!(decode_entry(&bytes).unwrap_err().contains("format 1"));
    }
}
