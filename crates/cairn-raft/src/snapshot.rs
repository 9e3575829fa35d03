//! The snapshot file: a state machine's data and its snapshot metadata, written and read as one
//! stream (openraft sends it in chunks; a follower copies it while installing it).
//!
//! ```text
//! magic    8 bytes  "CAIRNRS1"
//! version  u32 LE   1
//! meta_len u32 LE   ≤ 16 MiB
//! meta     postcard(SnapshotMeta)
//! records  repeated: tag u8 = 1, key_len u32 LE, value_len u32 LE, key, value
//!          (keys ascending, as the data tree iterates)
//! end      tag u8 = 0, record count u64 LE,
//!          crc32c u32 LE of every byte before it (magic included)
//! ```
//!
//! A reader checks every length against the bytes left in the file and the database's key and
//! value limits before it allocates. Records are returned as they are read, so an installer
//! must not make them live before the reader has returned the end (count and checksum
//! verified).

use std::io::{self, Read, Write};

/// The current snapshot's name in a state machine's snapshot directory.
pub const SNAPSHOT_FILE: &str = "current.snap";

const MAGIC: &[u8; 8] = b"CAIRNRS1";
const VERSION: u32 = 1;
const MAX_META: u32 = 16 << 20;
const TAG_RECORD: u8 = 1;
const TAG_END: u8 = 0;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Writes a snapshot file to `out`.
pub(crate) struct Writer<W: Write> {
    out: W,
    crc: u32,
    count: u64,
}

impl<W: Write> Writer<W> {
    /// Starts a file with its metadata (already encoded).
    pub fn new(out: W, meta: &[u8]) -> io::Result<Self> {
        let meta_len = u32::try_from(meta.len())
            .ok()
            .filter(|&l| l <= MAX_META)
            .ok_or_else(|| invalid(format!("snapshot metadata of {} bytes is over 16 MiB", meta.len())))?;
        let mut w = Writer { out, crc: 0, count: 0 };
        w.put(MAGIC)?;
        w.put(&VERSION.to_le_bytes())?;
        w.put(&meta_len.to_le_bytes())?;
        w.put(meta)?;
        Ok(w)
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.crc = crc32c::crc32c_append(self.crc, b);
        self.out.write_all(b)
    }

    /// Appends one key and value.
    pub fn record(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        let len = |b: &[u8]| u32::try_from(b.len()).map_err(|_| invalid(format!("record of {} bytes", b.len())));
        let (kl, vl) = (len(key)?, len(value)?);
        self.put(&[TAG_RECORD])?;
        self.put(&kl.to_le_bytes())?;
        self.put(&vl.to_le_bytes())?;
        self.put(key)?;
        self.put(value)?;
        self.count += 1;
        Ok(())
    }

    /// Writes the end marker, count and checksum; returns the sink (not synced).
    pub fn finish(mut self) -> io::Result<W> {
        self.put(&[TAG_END])?;
        self.put(&self.count.to_le_bytes())?;
        let crc = self.crc;
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads a snapshot file of known length, optionally copying every byte it reads to `copy`.
pub(crate) struct Reader<R: Read, C: Write> {
    inp: R,
    copy: C,
    crc: u32,
    left: u64,
    max_key: usize,
    max_value: usize,
    count: u64,
}

impl<R: Read, C: Write> Reader<R, C> {
    /// Reads the header of a file of `len` bytes; returns the reader and the encoded metadata.
    pub fn open(inp: R, copy: C, len: u64, limits: &cairn::Limits) -> io::Result<(Self, Vec<u8>)> {
        let mut r = Reader {
            inp,
            copy,
            crc: 0,
            left: len,
            max_key: limits.max_key_size,
            max_value: limits.max_value_size,
            count: 0,
        };
        let mut head = [0u8; 16];
        r.take(&mut head)?;
        if &head[..8] != MAGIC {
            return Err(invalid("not a cairn-raft snapshot file (bad magic)".into()));
        }
        let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        if version != VERSION {
            return Err(invalid(format!(
                "snapshot file version {version}; this build reads {VERSION}"
            )));
        }
        let meta_len = u32::from_le_bytes([head[12], head[13], head[14], head[15]]);
        let meta = r.take_vec(meta_len as usize, MAX_META as usize, "metadata")?;
        Ok((r, meta))
    }

    fn take(&mut self, buf: &mut [u8]) -> io::Result<()> {
        if (buf.len() as u64) > self.left {
            return Err(invalid(format!(
                "snapshot file truncated: {} bytes wanted, {} left",
                buf.len(),
                self.left
            )));
        }
        self.inp.read_exact(buf)?;
        self.copy.write_all(buf)?;
        self.left -= buf.len() as u64;
        self.crc = crc32c::crc32c_append(self.crc, buf);
        Ok(())
    }

    /// Reads `len` bytes after checking `len` against `max` and the bytes left.
    fn take_vec(&mut self, len: usize, max: usize, what: &str) -> io::Result<Vec<u8>> {
        if len > max || len as u64 > self.left {
            return Err(invalid(format!(
                "snapshot {what} of {len} bytes (limit {max}, {} bytes left in the file)",
                self.left
            )));
        }
        let mut v = vec![0u8; len];
        self.take(&mut v)?;
        Ok(v)
    }

    fn u32(&mut self) -> io::Result<u32> {
        let mut b = [0u8; 4];
        self.take(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// The next record, or `None` after the end marker with the count and checksum verified.
    pub fn next_record(&mut self) -> io::Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut tag = [0u8; 1];
        self.take(&mut tag)?;
        match tag[0] {
            TAG_RECORD => {
                let kl = self.u32()? as usize;
                let vl = self.u32()? as usize;
                let key = self.take_vec(kl, self.max_key, "key")?;
                let value = self.take_vec(vl, self.max_value, "value")?;
                self.count += 1;
                Ok(Some((key, value)))
            }
            TAG_END => {
                let mut count = [0u8; 8];
                self.take(&mut count)?;
                let expect = self.crc;
                let mut crc = [0u8; 4];
                self.take(&mut crc)?;
                let (count, crc) = (u64::from_le_bytes(count), u32::from_le_bytes(crc));
                if crc != expect {
                    return Err(invalid(format!(
                        "snapshot checksum mismatch: {crc:#x} stored, {expect:#x} computed"
                    )));
                }
                if count != self.count {
                    return Err(invalid(format!(
                        "snapshot holds {} records, its end says {count}",
                        self.count
                    )));
                }
                if self.left != 0 {
                    return Err(invalid(format!("{} bytes after the snapshot's end", self.left)));
                }
                Ok(None)
            }
            t => Err(invalid(format!("bad record tag {t} in snapshot file"))),
        }
    }

    /// The copy sink.
    pub fn into_copy(self) -> C {
        self.copy
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]
    use super::*;

    fn limits() -> cairn::Limits {
        cairn::Options::default().limits
    }

    fn file(records: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new(), b"meta").unwrap();
        for (k, v) in records {
            w.record(k, v).unwrap();
        }
        w.finish().unwrap()
    }

    type Read = (Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>, Vec<u8>);

    /// Metadata, records and the copy.
    fn read_all(b: &[u8]) -> io::Result<Read> {
        let (mut r, meta) = Reader::open(b, Vec::new(), b.len() as u64, &limits())?;
        let mut out = Vec::new();
        while let Some(kv) = r.next_record()? {
            out.push(kv);
        }
        Ok((meta, out, r.into_copy()))
    }

    #[test]
    fn round_trip_and_copy() {
        let b = file(&[(b"a", b"1"), (b"bb", b""), (b"", b"empty key")]);
        let (meta, recs, copy) = read_all(&b).unwrap();
        assert_eq!(meta, b"meta");
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1], (b"bb".to_vec(), Vec::new()));
        assert_eq!(copy, b, "the copy is the file");
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_an_error() {
        let b = file(&[(b"key", b"value"), (b"k2", b"v2")]);
        for i in 0..b.len() {
            for bit in [0x01u8, 0x80] {
                let mut c = b.clone();
                c[i] ^= bit;
                assert!(read_all(&c).is_err(), "flip at {i}");
            }
            assert!(read_all(&b[..i]).is_err(), "truncated to {i}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(read_all(&longer).is_err(), "trailing byte");
    }

    #[test]
    fn huge_lengths_are_refused_before_allocating() {
        // A record claiming a 4 GiB value in a tiny file.
        let mut b = file(&[]);
        let end = b.len() - 13;
        b.truncate(end);
        b.extend_from_slice(&[TAG_RECORD, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, b'k']);
        let err = read_all(&b).unwrap_err();
        assert!(err.to_string().contains("value of 4294967295 bytes"), "{err}");
    }
}
