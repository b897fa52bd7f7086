//! The image of a [`StateMachine`]: every engine in one framed stream.
//!
//! ```text
//! magic "FVSTATE1"
//! section*: tag u8 | length u64 LE | CRC-32 of the payload u32 LE | payload
//!   1 META      the host's bytes (e.g. the log position the image covers)
//!   2 INDEX     `Index::save` (records and graph links; its own format and checksums)
//!   3 FLOW      `FlowSnapshot<Message>` as JSON (active calls kept active)
//!   4 REGISTRY  `RegistrySnapshot` as JSON (password hashes only)
//!   5 ACCOUNTS  `AccountsSnapshot` as JSON (key hashes only)
//!   6 QUEUE     the queue's state beside the engine as JSON (signing keys, dead letter
//!               queue, publish deduplication ids); optional when reading, so
//!               images written before it existed still load
//!   255 END     empty; nothing may follow
//! ```
//! Each section appears once, in this order. A reader checks every length against what is
//! left before it allocates, every checksum, and the end: a truncated or damaged image is an
//! error naming the byte offset, never half a state.

use std::io::{Read, Write};

use crate::flow::{FlowControl, FlowSnapshot, SharedFlowControl};
use crate::management::{Accounts, AccountsSnapshot, Registry, RegistrySnapshot};
use crate::vector::Index;
use crate::wire::Message;

use super::{StateError, StateMachine};

const MAGIC: &[u8; 8] = b"FVSTATE1";
const SECTIONS: [(u8, &str); 5] = [
    (1, "META"),
    (2, "INDEX"),
    (3, "FLOW"),
    (4, "REGISTRY"),
    (5, "ACCOUNTS"),
];
const QUEUE: u8 = 6;
const END: u8 = 255;

/// The QUEUE section.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct QueueSettings {
    signing_keys: Option<crate::wire::SigningKeys>,
    #[serde(default)]
    dead_letters: super::DeadLetters,
    /// Absent in images written before publish deduplication existed.
    #[serde(default)]
    deduplication: super::Deduplication,
}
/// Tag, length and checksum.
const HEADER: usize = 1 + 8 + 4;

impl StateMachine {
    /// Writes the image of every engine, with the host's `meta` bytes (for example the log
    /// position it covers), to `w`.
    ///
    /// Call it where no command is being applied (the host's applier, between commands), so
    /// the image is one consistent cut. The vector index is saved with its graph links, so a
    /// load adopts the graph instead of rebuilding it.
    ///
    /// # Errors
    /// [`StateError::Io`] if writing fails; [`StateError::Vector`] if the index cannot be
    /// serialized.
    pub fn save(&self, mut w: impl Write, meta: &[u8]) -> Result<(), StateError> {
        let mut index = Vec::new();
        self.index().save(&mut index)?;
        let flow = json(&self.flow().snapshot())?;
        let registry = json(&self.registry().snapshot())?;
        let accounts = json(&self.accounts().snapshot())?;
        let queue = json(&QueueSettings {
            signing_keys: self.signing_keys(),
            dead_letters: self.dead_letters().clone(),
            deduplication: self.deduplication().clone(),
        })?;
        w.write_all(MAGIC)?;
        for (tag, payload) in SECTIONS.iter().map(|s| s.0).zip([
            meta,
            index.as_slice(),
            flow.as_slice(),
            registry.as_slice(),
            accounts.as_slice(),
        ]) {
            section(&mut w, tag, payload)?;
        }
        section(&mut w, QUEUE, &queue)?;
        section(&mut w, END, &[])?;
        w.flush()?;
        Ok(())
    }

    /// Reads an image written by [`save`](Self::save): the machine and the host's meta bytes.
    /// Active calls stay active (see
    /// [`FlowControl::restore_exact`]); a host that restarted follows with
    /// [`Command::RequeueAllActive`](super::Command::RequeueAllActive).
    ///
    /// # Errors
    /// [`StateError::BadImage`] with the byte offset for a wrong magic, a truncated stream, a
    /// section out of order, a length past the end, a checksum mismatch or bytes after END;
    /// [`StateError::Vector`], [`StateError::Flow`] or [`StateError::Management`] when a
    /// well-framed part does not load; [`StateError::Io`] if reading fails.
    pub fn load(mut r: impl Read) -> Result<(Self, Vec<u8>), StateError> {
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes)?;
        let mut parts: Vec<&[u8]> = Vec::with_capacity(SECTIONS.len());
        let mut at = MAGIC.len();
        if bytes.get(..at) != Some(MAGIC.as_slice()) {
            return Err(bad(0, "does not start with the magic bytes \"FVSTATE1\""));
        }
        for &(tag, name) in &SECTIONS {
            let (payload, next) = read_section(&bytes, at, tag, name)?;
            parts.push(payload);
            at = next;
        }
        let mut queue = QueueSettings {
            signing_keys: None,
            dead_letters: super::DeadLetters::default(),
            deduplication: super::Deduplication::default(),
        };
        if bytes.get(at) == Some(&QUEUE) {
            let (payload, next) = read_section(&bytes, at, QUEUE, "QUEUE")?;
            queue = from_json(payload, "QUEUE")?;
            at = next;
        }
        let (_, next) = read_section(&bytes, at, END, "END")?;
        at = next;
        if at != bytes.len() {
            return Err(bad(
                at as u64,
                format!("{} bytes follow the END section", bytes.len() - at),
            ));
        }
        let [meta, index, flow, registry, accounts] = parts[..] else {
            unreachable!("one part per section");
        };
        let index = Index::load(index)?;
        let flow: FlowSnapshot<Message> = from_json(flow, "FLOW")?;
        let flow = FlowControl::restore_exact(flow)?;
        let registry = Registry::restore(from_json::<RegistrySnapshot>(registry, "REGISTRY")?)?;
        let accounts = Accounts::restore(from_json::<AccountsSnapshot>(accounts, "ACCOUNTS")?)?;
        let machine = Self::from_parts(
            index,
            SharedFlowControl::from_engine(flow),
            registry,
            accounts,
        );
        machine.set_signing_keys(queue.signing_keys);
        machine.set_dead_letters(queue.dead_letters);
        machine.set_deduplication(queue.deduplication);
        Ok((machine, meta.to_vec()))
    }
}

fn bad(offset: u64, reason: impl Into<String>) -> StateError {
    StateError::BadImage {
        offset,
        reason: reason.into(),
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, StateError> {
    serde_json::to_vec(value).map_err(|err| bad(0, format!("cannot serialize: {err}")))
}

fn from_json<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8], name: &str) -> Result<T, StateError> {
    serde_json::from_slice(bytes).map_err(|err| bad(0, format!("section {name}: {err}")))
}

fn section(w: &mut impl Write, tag: u8, payload: &[u8]) -> Result<(), StateError> {
    w.write_all(&[tag])?;
    w.write_all(&(payload.len() as u64).to_le_bytes())?;
    w.write_all(&crc32fast::hash(payload).to_le_bytes())?;
    w.write_all(payload)?;
    Ok(())
}

/// The payload of the section at `at`, which must be `tag`, and the offset after it.
fn read_section<'a>(
    bytes: &'a [u8],
    at: usize,
    tag: u8,
    name: &str,
) -> Result<(&'a [u8], usize), StateError> {
    let header = bytes.get(at..at + HEADER).ok_or_else(|| {
        bad(
            at as u64,
            format!("truncated: the image ends before section {name}"),
        )
    })?;
    if header[0] != tag {
        return Err(bad(
            at as u64,
            format!(
                "expected section {name} (tag {tag}), found tag {}",
                header[0]
            ),
        ));
    }
    let len = u64::from_le_bytes(header[1..9].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(header[9..13].try_into().expect("4 bytes"));
    let start = at + HEADER;
    let left = (bytes.len() - start) as u64;
    if len > left {
        return Err(bad(
            at as u64,
            format!("truncated: section {name} says {len} bytes, {left} are left"),
        ));
    }
    let end = start + len as usize;
    let payload = &bytes[start..end];
    let computed = crc32fast::hash(payload);
    if computed != crc {
        return Err(bad(
            start as u64,
            format!("section {name} fails its checksum ({computed:#010x}, stored {crc:#010x})"),
        ));
    }
    Ok((payload, end))
}
