//! The command layer's decoders on arbitrary bytes: `LogEntry::decode` (what recovery reads
//! from the log) and `StateMachine::load` (what it reads from a snapshot). No panic, no
//! allocation beyond what the input justifies; an entry that decodes re-encodes to bytes that
//! decode to the same entry.
//!
//! Checksums stop blind mutation at once, so inputs whose first byte is odd get a valid CRC-32
//! in front (reaching the MessagePack decoder), and inputs whose first byte is 2 mod 4 are
//! framed as a state image with valid section checksums (reaching the engines' loaders).
#![no_main]

use flowvec::state::{LogEntry, StateMachine};
use libfuzzer_sys::fuzz_target;

fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// An image framed from fuzz pieces: `tag u8 | length u16 | payload`, each written as a
/// section with its real checksum.
fn frame(mut data: &[u8]) -> Vec<u8> {
    let mut out = b"FVSTATE1".to_vec();
    while data.len() >= 3 {
        let tag = data[0];
        let len = usize::from(u16::from_le_bytes([data[1], data[2]])).min(data.len() - 3);
        let payload = &data[3..3 + len];
        data = &data[3 + len..];
        out.push(tag);
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32(payload).to_le_bytes());
        out.extend_from_slice(payload);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    if first % 2 == 1 {
        let mut entry = crc32(rest).to_le_bytes().to_vec();
        entry.extend_from_slice(rest);
        if let Ok(decoded) = LogEntry::decode(&entry) {
            let again = LogEntry::decode(&decoded.encode()).expect("our own encoding decodes");
            assert_eq!(again, decoded);
        }
    } else if first % 4 == 2 {
        let _ = StateMachine::load(frame(rest).as_slice());
    } else {
        let _ = LogEntry::decode(rest);
        let _ = StateMachine::load(rest);
    }
});
