//! The GRAPH section: a namespace's dense graph links, so a load adopts them instead of
//! rebuilding the graph.
//!
//! ```text
//! GRAPH (tag 5) nodes u64 | level generator state u64 | entry node u64 (u64::MAX: none)
//!               | level u8 * nodes
//!               | words u64 | u32 * words: per node in record order, per level 0..=its level,
//!                 a neighbour count then the neighbours' node numbers
//! ```
//!
//! Node `i` is the namespace's `i`-th record in id order (the order of its RECORDS sections),
//! so the links survive the renumbering of engine slots on load. What the numbers mean is
//! checked by the graph when it adopts them (`GraphImage::validate`); this file only frames
//! them, refusing counts the bytes left cannot hold.

use super::bytes::{Decoder, put_len, put_u32s, put_u64};
use crate::vector::VectorError;
use crate::vector::dense::GraphImage;

/// Appends `image` as a GRAPH payload.
pub(super) fn encode(image: &GraphImage, out: &mut Vec<u8>) {
    put_len(out, image.nodes());
    put_u64(out, image.rng);
    put_u64(out, image.entry.map_or(u64::MAX, u64::from));
    out.extend_from_slice(&image.levels);
    put_len(out, image.links.len());
    put_u32s(out, &image.links);
}

/// Reads a GRAPH payload (the whole of it).
pub(super) fn decode(d: &mut Decoder<'_>) -> Result<GraphImage, VectorError> {
    // A node takes at least its level byte and one count word.
    let nodes = d.count(5, "graph node count")?;
    let rng = d.u64("graph level generator state")?;
    let entry = match d.u64("graph entry node")? {
        u64::MAX => None,
        e => Some(
            u32::try_from(e)
                .ok()
                .filter(|&e| (e as usize) < nodes)
                .ok_or_else(|| d.corrupt(format!("graph entry node {e} is not below {nodes}")))?,
        ),
    };
    let levels = d.take(nodes, "graph levels")?.to_vec();
    let words = d.count(4, "graph link words")?;
    let links = d.u32s(words, "graph links")?;
    if !d.is_empty() {
        return Err(d.corrupt("graph section has trailing bytes"));
    }
    Ok(GraphImage {
        rng,
        entry,
        levels,
        links,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_reads_back_and_short_or_long_payloads_are_refused() {
        let image = GraphImage {
            rng: 0xDEAD_BEEF,
            entry: Some(1),
            levels: vec![0, 1],
            links: vec![1, 1, 1, 0, 0],
        };
        let mut buf = Vec::new();
        encode(&image, &mut buf);
        assert_eq!(decode(&mut Decoder::new(&buf, 0)), Ok(image));
        for cut in 0..buf.len() {
            assert!(
                decode(&mut Decoder::new(&buf[..cut], 0)).is_err(),
                "cut at {cut}"
            );
        }
        let mut long = buf.clone();
        long.push(0);
        assert!(decode(&mut Decoder::new(&long, 0)).is_err());
        let mut bad_entry = buf;
        bad_entry[16..24].copy_from_slice(&2u64.to_le_bytes());
        assert!(decode(&mut Decoder::new(&bad_entry, 0)).is_err());
    }
}
