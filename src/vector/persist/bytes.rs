//! Little-endian encoding of section payloads, and a bounds-checked decoder over one verified
//! payload: every length field is checked against the bytes that remain before anything is
//! allocated for it.

use crate::vector::VectorError;

pub(super) fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

pub(super) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A length or count (`usize` is at most 64 bits on every supported target).
pub(super) fn put_len(out: &mut Vec<u8>, n: usize) {
    put_u64(out, n as u64);
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// Four bytes per value into a pre-sized tail (a straight loop the compiler turns into a copy
/// on little-endian targets).
fn put_words<T: Copy>(out: &mut Vec<u8>, values: &[T], le: impl Fn(T) -> [u8; 4]) {
    let start = out.len();
    out.resize(start + 4 * values.len(), 0);
    for (slot, &v) in out[start..].chunks_exact_mut(4).zip(values) {
        slot.copy_from_slice(&le(v));
    }
}

pub(super) fn put_f32s(out: &mut Vec<u8>, values: &[f32]) {
    put_words(out, values, f32::to_le_bytes);
}

pub(super) fn put_i32s(out: &mut Vec<u8>, values: &[i32]) {
    put_words(out, values, i32::to_le_bytes);
}

pub(super) fn put_u32s(out: &mut Vec<u8>, values: &[u32]) {
    put_words(out, values, u32::to_le_bytes);
}

/// Reads one section's payload; errors name the section's offset in the snapshot.
pub(super) struct Decoder<'a> {
    buf: &'a [u8],
    at: usize,
    /// Offset of the section in the snapshot, for error messages.
    pub(super) section: u64,
}

impl<'a> Decoder<'a> {
    pub(super) fn new(buf: &'a [u8], section: u64) -> Self {
        Decoder {
            buf,
            at: 0,
            section,
        }
    }

    pub(super) fn corrupt(&self, reason: impl Into<String>) -> VectorError {
        VectorError::SnapshotCorrupt {
            offset: self.section,
            reason: reason.into(),
        }
    }

    pub(super) fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    pub(super) fn is_empty(&self) -> bool {
        self.at == self.buf.len()
    }

    pub(super) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], VectorError> {
        if n > self.remaining() {
            return Err(self.corrupt(format!(
                "{what} needs {n} bytes but the section has {} left",
                self.remaining()
            )));
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    pub(super) fn u8(&mut self, what: &str) -> Result<u8, VectorError> {
        Ok(self.take(1, what)?[0])
    }

    pub(super) fn u64(&mut self, what: &str) -> Result<u64, VectorError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    /// A count of items of at least `item_bytes` bytes each, checked against what remains.
    pub(super) fn count(&mut self, item_bytes: usize, what: &str) -> Result<usize, VectorError> {
        let n = self.u64(what)?;
        let fits = usize::try_from(n)
            .ok()
            .filter(|&n| n.saturating_mul(item_bytes.max(1)) <= self.remaining());
        fits.ok_or_else(|| {
            self.corrupt(format!(
                "{what} is {n}, more than the {} bytes left in the section can hold",
                self.remaining()
            ))
        })
    }

    pub(super) fn str(&mut self, what: &str) -> Result<&'a str, VectorError> {
        let n = self.count(1, what)?;
        let bytes = self.take(n, what)?;
        std::str::from_utf8(bytes).map_err(|e| self.corrupt(format!("{what} is not UTF-8: {e}")))
    }

    pub(super) fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, VectorError> {
        self.words(n, what, f32::from_le_bytes)
    }

    pub(super) fn u32s(&mut self, n: usize, what: &str) -> Result<Vec<u32>, VectorError> {
        self.words(n, what, u32::from_le_bytes)
    }

    pub(super) fn i32s(&mut self, n: usize, what: &str) -> Result<Vec<i32>, VectorError> {
        self.words(n, what, i32::from_le_bytes)
    }

    /// `n` little-endian 4-byte values.
    fn words<T>(
        &mut self,
        n: usize,
        what: &str,
        from_le: fn([u8; 4]) -> T,
    ) -> Result<Vec<T>, VectorError> {
        let bytes = self.take(n.saturating_mul(4), what)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| from_le([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_beyond_the_payload_are_refused_before_allocating() {
        let mut buf = Vec::new();
        put_u64(&mut buf, u64::MAX);
        let mut d = Decoder::new(&buf, 40);
        assert!(matches!(
            d.count(1, "ids"),
            Err(VectorError::SnapshotCorrupt { offset: 40, .. })
        ));
        let mut buf = Vec::new();
        put_u64(&mut buf, 3);
        buf.extend_from_slice(&[0; 11]);
        let mut d = Decoder::new(&buf, 0);
        assert!(d.count(4, "entries").is_err(), "3 * 4 > 11");
        let mut d = Decoder::new(&buf, 0);
        assert_eq!(d.count(3, "entries"), Ok(3), "3 * 3 <= 11");
    }

    #[test]
    fn round_trip_of_each_encoding() {
        let mut buf = Vec::new();
        put_u8(&mut buf, 7);
        put_str(&mut buf, "héllo");
        put_f32s(&mut buf, &[1.5, -0.0, f32::MIN_POSITIVE / 2.0]);
        put_i32s(&mut buf, &[i32::MIN, 0, i32::MAX]);
        let mut d = Decoder::new(&buf, 0);
        assert_eq!(d.u8("tag"), Ok(7));
        assert_eq!(d.str("s"), Ok("héllo"));
        let f = d.f32s(3, "f").unwrap();
        assert_eq!(
            f.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            [1.5f32, -0.0, f32::MIN_POSITIVE / 2.0].map(f32::to_bits)
        );
        assert_eq!(d.i32s(3, "i"), Ok(vec![i32::MIN, 0, i32::MAX]));
        assert!(d.is_empty());
        assert!(d.u8("past the end").is_err());
    }
}
