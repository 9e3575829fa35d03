//! Shared pieces of cairn's benchmark binaries.

pub mod ycsb;

/// db_bench's key encoding: the 8-byte big-endian integer, then `'0'` padding up to
/// `key_size` (shorter sizes keep the low-order bytes' prefix, as db_bench does).
pub fn db_bench_key(v: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let n = key_size.min(8);
    for i in 0..n {
        out.push((v >> ((n - i - 1) * 8)) as u8);
    }
    out.resize(key_size, b'0');
}

/// Peak resident set size of this process in bytes (Linux `VmHWM`), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_db_bench() {
        let mut k = Vec::new();
        db_bench_key(0x0102, 16, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\x01\x0200000000");
        db_bench_key(5, 4, &mut k);
        assert_eq!(k, &[0, 0, 0, 5]);
    }
}
