//! `Index::load` on arbitrary bytes: no panic, and no allocation beyond what the input can
//! justify (libFuzzer's `-rss_limit_mb` and `-malloc_limit_mb` catch a length field trusted
//! blindly). A snapshot that does load must save back to a snapshot that loads to the same
//! bytes (load-save is canonical).
//!
//! Checksums stop blind mutation at the first section, so half the inputs (first byte odd) are
//! framed first: the rest of the input is read as `tag u8 | length u16 | payload` pieces and
//! written out as real sections with valid CRCs (and a valid whole-stream CRC in an END
//! section), which lets the fuzzer reach the section parsers and the record validation.
#![no_main]

use flowvec::vector::{Index, SNAPSHOT_FORMAT_VERSION};
use libfuzzer_sys::fuzz_target;

fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = !0u32;
    for &b in parts.iter().flat_map(|p| p.iter()) {
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

/// A well-framed snapshot from fuzz pieces.
fn frame(mut data: &[u8]) -> Vec<u8> {
    let mut out = b"FLOWVECI".to_vec();
    out.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    // What the END section's whole-stream checksum covers: everything but section CRCs.
    let mut covered = out.clone();
    while data.len() >= 3 {
        let tag = data[0];
        let len = usize::from(u16::from_le_bytes([data[1], data[2]])).min(data.len() - 3);
        let mut payload = data[3..3 + len].to_vec();
        data = &data[3 + len..];
        if tag == 4 && payload.len() >= 20 {
            let crc = crc32(&[&covered]);
            payload[16..20].copy_from_slice(&crc.to_le_bytes());
        }
        let mut head = vec![tag];
        head.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        let crc = crc32(&[&head, &payload]);
        covered.extend_from_slice(&head);
        covered.extend_from_slice(&payload);
        out.extend_from_slice(&head);
        out.extend_from_slice(&payload);
        out.extend_from_slice(&crc.to_le_bytes());
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let framed;
    let input = match data.split_first() {
        Some((first, rest)) if first % 2 == 1 => {
            framed = frame(rest);
            &framed[..]
        }
        _ => data,
    };
    let mut reader = input;
    if let Ok(index) = Index::load(&mut reader) {
        let mut saved = Vec::new();
        index.save(&mut saved).expect("saving to a Vec cannot fail");
        let again = Index::load(saved.as_slice()).expect("a saved snapshot loads");
        let mut resaved = Vec::new();
        again
            .save(&mut resaved)
            .expect("saving to a Vec cannot fail");
        assert_eq!(saved, resaved);
    }
});
