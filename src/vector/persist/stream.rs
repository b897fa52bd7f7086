//! Sections on the host's `Write` / `Read`: `tag u8 | length u64 | payload | crc32 u32`, the
//! checksum over tag, length and payload. Both sides keep a running CRC-32 of every byte but the
//! sections' own checksums, which the end section carries, so a dropped, repeated, reordered or
//! swapped section is caught too.

use super::crc32::Crc32;
use crate::vector::VectorError;
use std::io::{self, Read, Write};

fn io_error(e: &io::Error) -> VectorError {
    VectorError::SnapshotIo {
        kind: e.kind(),
        message: e.to_string(),
    }
}

/// Writes sections and tracks the running checksum.
pub(super) struct SectionWriter<W: Write> {
    w: W,
    file_crc: Crc32,
}

impl<W: Write> SectionWriter<W> {
    pub(super) fn new(w: W) -> Self {
        SectionWriter {
            w,
            file_crc: Crc32::new(),
        }
    }

    /// Raw bytes (the header).
    pub(super) fn raw(&mut self, bytes: &[u8]) -> Result<(), VectorError> {
        self.file_crc.update(bytes);
        self.w.write_all(bytes).map_err(|e| io_error(&e))
    }

    /// CRC-32 of every byte written so far but the sections' own checksums.
    pub(super) fn file_crc(&self) -> u32 {
        self.file_crc.finish()
    }

    pub(super) fn section(&mut self, tag: u8, payload: &[u8]) -> Result<(), VectorError> {
        let mut head = [0u8; 9];
        head[0] = tag;
        head[1..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        let mut crc = Crc32::new();
        crc.update(&head);
        crc.update(payload);
        let crc = crc.finish().to_le_bytes();
        self.raw(&head)?;
        self.raw(payload)?;
        // Not into the running checksum: a CRC over bytes followed by their own CRC is a
        // constant, which would make the running checksum blind to every section's content.
        self.w.write_all(&crc).map_err(|e| io_error(&e))
    }

    pub(super) fn flush(&mut self) -> Result<(), VectorError> {
        self.w.flush().map_err(|e| io_error(&e))
    }
}

/// One section as read and verified.
pub(super) struct Section {
    pub(super) tag: u8,
    pub(super) payload: Vec<u8>,
    /// Offset of the section's first byte in the snapshot.
    pub(super) offset: u64,
    /// Running CRC-32 of the bytes before this section (sections' own checksums excluded).
    pub(super) crc_before: u32,
}

/// Reads and verifies sections. It reads exactly the snapshot's bytes, never past its end, so
/// a host may store other data after it in the same stream.
pub(super) struct SectionReader<R: Read> {
    r: R,
    offset: u64,
    file_crc: Crc32,
}

impl<R: Read> SectionReader<R> {
    pub(super) fn new(r: R) -> Self {
        SectionReader {
            r,
            offset: 0,
            file_crc: Crc32::new(),
        }
    }

    /// Exactly `buf.len()` bytes, added to the running checksum; running out is
    /// [`VectorError::SnapshotTruncated`].
    pub(super) fn raw(&mut self, buf: &mut [u8]) -> Result<(), VectorError> {
        self.unchecked(buf)?;
        self.file_crc.update(buf);
        Ok(())
    }

    /// Exactly `buf.len()` bytes, not added to the running checksum.
    fn unchecked(&mut self, buf: &mut [u8]) -> Result<(), VectorError> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.r.read(&mut buf[filled..]) {
                Ok(0) => {
                    return Err(VectorError::SnapshotTruncated {
                        offset: self.offset + filled as u64,
                    });
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(&e)),
            }
        }
        self.offset += buf.len() as u64;
        Ok(())
    }

    /// The next section, its checksum verified. `max_len` caps the length field, and the
    /// payload buffer grows only as bytes actually arrive, so a corrupt length cannot make it
    /// allocate more than the input holds.
    pub(super) fn section(&mut self, max_len: u64) -> Result<Section, VectorError> {
        let offset = self.offset;
        let crc_before = self.file_crc.finish();
        let mut head = [0u8; 9];
        self.raw(&mut head)?;
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(&head[1..]);
        let len = u64::from_le_bytes(len_bytes);
        if len > max_len {
            return Err(VectorError::SnapshotCorrupt {
                offset,
                reason: format!(
                    "section of type {} claims {len} bytes, more than the {max_len} this \
                     snapshot's configuration allows",
                    head[0]
                ),
            });
        }
        let mut payload = Vec::new();
        let got = (&mut self.r)
            .take(len)
            .read_to_end(&mut payload)
            .map_err(|e| io_error(&e))?;
        self.file_crc.update(&payload);
        self.offset += got as u64;
        if (got as u64) < len {
            return Err(VectorError::SnapshotTruncated {
                offset: self.offset,
            });
        }
        let mut stored = [0u8; 4];
        self.unchecked(&mut stored)?;
        let mut crc = Crc32::new();
        crc.update(&head);
        crc.update(&payload);
        let (stored, computed) = (u32::from_le_bytes(stored), crc.finish());
        if stored != computed {
            return Err(VectorError::SnapshotCorrupt {
                offset,
                reason: format!(
                    "section checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
                ),
            });
        }
        Ok(Section {
            tag: head[0],
            payload,
            offset,
            crc_before,
        })
    }
}
