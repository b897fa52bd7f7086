//! CRC-32 (IEEE 802.3, reflected polynomial `0xEDB88320`), the checksum of zlib, gzip and PNG,
//! computed by the `crc32fast` crate (SIMD: PCLMULQDQ on x86-64, several times the ~2 GB/s of
//! the slicing-by-8 table this file used to hold). The same checksum as before, so snapshots
//! written by earlier builds still load; the bitwise definition below pins it.
//! It detects every error burst up to 32 bits, so every single-bit flip.

/// A running CRC-32.
#[derive(Debug, Clone)]
pub(super) struct Crc32(crc32fast::Hasher);

impl Crc32 {
    pub(super) fn new() -> Self {
        Crc32(crc32fast::Hasher::new())
    }

    pub(super) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The checksum of everything so far (the running state is kept: more may follow).
    pub(super) fn finish(&self) -> u32 {
        self.0.clone().finalize()
    }
}

/// CRC-32 of `bytes`.
#[cfg(test)]
pub(super) fn crc32(bytes: &[u8]) -> u32 {
    let mut c = Crc32::new();
    c.update(bytes);
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLY: u32 = 0xEDB8_8320;

    /// The textbook bit-at-a-time definition.
    fn bitwise(bytes: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in bytes {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 == 1 { POLY ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }

    #[test]
    fn check_values() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    #[test]
    fn sliced_equals_bitwise_at_every_length_and_split() {
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in 0..data.len() {
            assert_eq!(crc32(&data[..len]), bitwise(&data[..len]), "length {len}");
        }
        for split in 0..data.len() {
            let mut c = Crc32::new();
            c.update(&data[..split]);
            c.update(&data[split..]);
            assert_eq!(c.finish(), bitwise(&data), "split at {split}");
        }
    }
}
