//! [`LogEntry`]: a command with the time it is applied at, and its bytes.

use serde::{Deserialize, Serialize};

use super::{Command, StateError};
use crate::flow::Timestamp;

/// Format byte leading every encoded entry (after the checksum).
const FORMAT: u8 = 1;

/// A [`Command`] stamped with the `now` it is applied at: the unit a host writes to its log
/// and a leader ships to its followers.
///
/// Bytes ([`encode`](Self::encode)): a CRC-32 of the rest (4 bytes, little-endian), a format
/// byte (1), then the entry as MessagePack with field names. MessagePack keeps every `f32`
/// bit for bit (JSON text might not) and decodes the self-describing parts (metadata) as
/// they were.
///
/// # Examples
/// ```
/// use flowvec::flow::Timestamp;
/// use flowvec::state::{Command, LogEntry};
/// let entry = LogEntry { now: Timestamp::from_millis(5), command: Command::ResetAll };
/// let mut bytes = entry.encode();
/// assert_eq!(LogEntry::decode(&bytes)?, entry);
/// bytes[6] ^= 1;
/// assert!(LogEntry::decode(&bytes).is_err(), "the checksum catches a flipped bit");
/// # Ok::<(), flowvec::state::StateError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// The time the command is applied at (the host's clock, never going backwards).
    pub now: Timestamp,
    /// The change.
    pub command: Command,
}

impl LogEntry {
    /// The entry's bytes: checksum, format byte, MessagePack.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; 4];
        out.push(FORMAT);
        rmp_serde::encode::write_named(&mut out, self)
            .expect("commands are plain data: MessagePack encoding into a Vec cannot fail");
        let crc = crc32fast::hash(&out[4..]);
        out[..4].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes [`encode`](Self::encode)'s bytes.
    ///
    /// # Errors
    /// [`StateError::BadEntry`] for fewer than 5 bytes, a checksum mismatch, an unknown format
    /// byte or MessagePack that is not an entry.
    pub fn decode(bytes: &[u8]) -> Result<Self, StateError> {
        let bad = |reason: String| StateError::BadEntry { reason };
        if bytes.len() < 5 {
            return Err(bad(format!(
                "{} bytes, shorter than the 5-byte header",
                bytes.len()
            )));
        }
        let stored = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let computed = crc32fast::hash(&bytes[4..]);
        if stored != computed {
            return Err(bad(format!(
                "checksum {computed:#010x} of {} bytes, stored {stored:#010x}",
                bytes.len()
            )));
        }
        if bytes[4] != FORMAT {
            return Err(bad(format!(
                "format {} (this build reads format {FORMAT})",
                bytes[4]
            )));
        }
        rmp_serde::from_slice(&bytes[5..]).map_err(|err| bad(format!("does not decode: {err}")))
    }
}
