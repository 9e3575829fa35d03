//! Version edits and file metadata, as logged in the manifest.
//!
//! ```text
//! edit  := field*
//! field := tag:varint payload
//!   1 next_file_number:varint
//!   2 last_seqno:varint
//!   3 new tree:        id:varint name:lp
//!   4 log number:      tree:varint wal:varint        (oldest WAL the tree still needs)
//!   5 deepest level:   tree:varint level:varint      (Garnering's L)
//!   6 delete file:     tree:varint level:varint number:varint
//!   7 add file:        tree:varint level:varint number size smallest:lp largest:lp
//!                      smallest_seqno largest_seqno entries tombstones
//!                      filter_policy:lp filter_bpk:f64le segments
//!   8 db_id:varint                                   (random at creation; WAL headers carry it)
//!   9 add file to an L0 group: the payload of 7, then group:varint (≥ 1)
//!  10 range deletions of a file added by this edit: number:varint count:varint (≥ 1)
//!  11 earliest deadline of a file added by this edit: number:varint unix_ms:varint
//!  12 drop tree:       id:varint                     (its files and name go; ids are never
//!                                                     reused: a snapshot writes it alone for a
//!                                                     dropped id, in place of tag 3)
//!  13 global seqno of an ingested file added by this edit: number:varint seqno:varint
//!                                                    (its entries, written with seqno 0, are
//!                                                     read with this one)
//! ```
//! L0 files carry their **group** (Luo & Carey §4.1.2): a set of disjoint files; a higher group
//! is newer and overrides a lower one. Files added with tag 7 at L0 are group 0 (older than
//! every numbered group), which is how manifests written before groups read.
//! A file without tag 10 holds no range tombstone, which is how manifests written before range
//! deletions read (tag 10 follows the add of its file). Unknown tags are corruption: a build
//! that does not know range deletions refuses a manifest naming tables with them rather than
//! read those tables without their tombstones.

use crate::format::coding::{put_len_prefixed, put_varint64, Decoder};
use crate::format::ikey;

/// What the engine knows about one table without opening it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileMeta {
    /// File number (`NNNNNN.sst`).
    pub number: u64,
    /// Bytes.
    pub size: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Smallest seqno.
    pub smallest_seqno: u64,
    /// Largest seqno.
    pub largest_seqno: u64,
    /// Entries.
    pub entries: u64,
    /// Tombstones.
    pub tombstones: u64,
    /// Allocator that decided the file's filter.
    pub filter_policy: String,
    /// Total bits per key over the file's units.
    pub filter_bpk: f64,
    /// Segments.
    pub segments: u64,
    /// L0 group (0 outside L0, and for L0 files logged without one).
    pub l0_group: u64,
    /// Range tombstones in the table (0 for most; readers open a table for its tombstones only
    /// when it has some).
    pub range_deletions: u64,
    /// The earliest deadline (Unix ms) of its expiring values; 0: none (manifest tag 11).
    pub min_deadline: u64,
    /// An ingested table's sequence number, which every entry of it (written with 0) is read
    /// with; 0: its entries carry their own (manifest tag 13).
    pub global_seqno: u64,
}

impl FileMeta {
    /// User key of `smallest`.
    pub fn smallest_user_key(&self) -> &[u8] {
        ikey::user_key(&self.smallest)
    }
    /// User key of `largest`.
    pub fn largest_user_key(&self) -> &[u8] {
        ikey::user_key(&self.largest)
    }
}

/// A change to the version set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VersionEdit {
    /// The database's identity (in every manifest's first edit).
    pub db_id: Option<u64>,
    /// Next file number to allocate.
    pub next_file_number: Option<u64>,
    /// Largest seqno made durable in tables.
    pub last_seqno: Option<u64>,
    /// Trees created: (id, name).
    pub new_trees: Vec<(u32, String)>,
    /// Trees dropped (after `new_trees`: a snapshot names a dropped id here only).
    pub dropped_trees: Vec<u32>,
    /// Per tree, the oldest WAL whose records it still needs.
    pub log_numbers: Vec<(u32, u64)>,
    /// Per tree, Garnering's deepest level L.
    pub deepest: Vec<(u32, u32)>,
    /// Files removed: (tree, level, number).
    pub deleted: Vec<(u32, u32, u64)>,
    /// Files added: (tree, level, meta).
    pub added: Vec<(u32, u32, FileMeta)>,
}

impl VersionEdit {
    /// Encodes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::new();
        let field = |o: &mut Vec<u8>, tag: u64, vals: &[u64]| {
            put_varint64(o, tag);
            for &v in vals {
                put_varint64(o, v);
            }
        };
        if let Some(n) = self.next_file_number {
            field(&mut o, 1, &[n]);
        }
        if let Some(s) = self.last_seqno {
            field(&mut o, 2, &[s]);
        }
        if let Some(id) = self.db_id {
            field(&mut o, 8, &[id]);
        }
        for (id, name) in &self.new_trees {
            field(&mut o, 3, &[u64::from(*id)]);
            put_len_prefixed(&mut o, name.as_bytes());
        }
        for &id in &self.dropped_trees {
            field(&mut o, 12, &[u64::from(id)]);
        }
        for &(t, n) in &self.log_numbers {
            field(&mut o, 4, &[u64::from(t), n]);
        }
        for &(t, l) in &self.deepest {
            field(&mut o, 5, &[u64::from(t), u64::from(l)]);
        }
        for &(t, l, n) in &self.deleted {
            field(&mut o, 6, &[u64::from(t), u64::from(l), n]);
        }
        for (t, l, f) in &self.added {
            let grouped = *l == 0 && f.l0_group != 0;
            field(&mut o, if grouped { 9 } else { 7 }, &[u64::from(*t), u64::from(*l), f.number, f.size]);
            put_len_prefixed(&mut o, &f.smallest);
            put_len_prefixed(&mut o, &f.largest);
            for v in [f.smallest_seqno, f.largest_seqno, f.entries, f.tombstones] {
                put_varint64(&mut o, v);
            }
            put_len_prefixed(&mut o, f.filter_policy.as_bytes());
            o.extend_from_slice(&f.filter_bpk.to_bits().to_le_bytes());
            put_varint64(&mut o, f.segments);
            if grouped {
                put_varint64(&mut o, f.l0_group);
            }
            if f.range_deletions > 0 {
                field(&mut o, 10, &[f.number, f.range_deletions]);
            }
            if f.min_deadline > 0 {
                field(&mut o, 11, &[f.number, f.min_deadline]);
            }
            if f.global_seqno > 0 {
                field(&mut o, 13, &[f.number, f.global_seqno]);
            }
        }
        o
    }

    /// Drops what the edit says about the trees `dropped` names (files, levels, log numbers),
    /// except their creation and drop.
    pub fn forget_trees(&mut self, dropped: impl Fn(u32) -> bool) {
        self.log_numbers.retain(|&(t, _)| !dropped(t));
        self.deepest.retain(|&(t, _)| !dropped(t));
        self.deleted.retain(|&(t, _, _)| !dropped(t));
        self.added.retain(|(t, _, _)| !dropped(*t));
    }

    /// Decodes an edit.
    pub fn decode(b: &[u8]) -> Result<Self, &'static str> {
        let mut d = Decoder::new(b);
        let mut e = VersionEdit::default();
        while !d.is_empty() {
            match d.varint64("edit tag")? {
                1 => e.next_file_number = Some(d.varint64("next file number")?),
                2 => e.last_seqno = Some(d.varint64("last seqno")?),
                8 => e.db_id = Some(d.varint64("db id")?),
                3 => {
                    let id = d.varint32("tree id")?;
                    let name =
                        std::str::from_utf8(d.len_prefixed("tree name")?).map_err(|_| "tree name is not UTF-8")?;
                    e.new_trees.push((id, name.to_string()));
                }
                4 => e.log_numbers.push((d.varint32("tree")?, d.varint64("log number")?)),
                12 => e.dropped_trees.push(d.varint32("dropped tree")?),
                5 => e.deepest.push((d.varint32("tree")?, d.varint32("deepest level")?)),
                6 => e
                    .deleted
                    .push((d.varint32("tree")?, d.varint32("level")?, d.varint64("file")?)),
                tag @ (7 | 9) => {
                    let tree = d.varint32("tree")?;
                    let level = d.varint32("level")?;
                    let f = FileMeta {
                        number: d.varint64("file number")?,
                        size: d.varint64("file size")?,
                        smallest: d.len_prefixed("smallest key")?.to_vec(),
                        largest: d.len_prefixed("largest key")?.to_vec(),
                        smallest_seqno: d.varint64("smallest seqno")?,
                        largest_seqno: d.varint64("largest seqno")?,
                        entries: d.varint64("entries")?,
                        tombstones: d.varint64("tombstones")?,
                        filter_policy: std::str::from_utf8(d.len_prefixed("filter policy")?)
                            .map_err(|_| "filter policy is not UTF-8")?
                            .to_string(),
                        filter_bpk: d.f64("filter bpk")?,
                        segments: d.varint64("segments")?,
                        l0_group: 0,
                        range_deletions: 0,
                        min_deadline: 0,
                        global_seqno: 0,
                    };
                    let mut f = f;
                    if tag == 9 {
                        f.l0_group = d.varint64("l0 group")?;
                        if level != 0 || f.l0_group == 0 {
                            return Err("an L0 group outside L0, or group 0");
                        }
                    }
                    if level > 64 {
                        return Err("level out of range");
                    }
                    if ikey::split(&f.smallest).is_none() || ikey::split(&f.largest).is_none() {
                        return Err("file key range is not made of internal keys");
                    }
                    e.added.push((tree, level, f));
                }
                // A fact about a file added earlier in this edit: never 0 (absent means 0).
                tag @ (10 | 11 | 13) => {
                    let (what, orphan) = match tag {
                        10 => ("range deletions", "range deletions of a file this edit does not add"),
                        11 => ("earliest deadline", "an earliest deadline of a file this edit does not add"),
                        _ => ("global seqno", "a global seqno of a file this edit does not add"),
                    };
                    let number = d.varint64("file number")?;
                    let n = d.varint64(what)?;
                    let file = e.added.iter_mut().rev().map(|(_, _, f)| f).find(|f| f.number == number);
                    let Some(f) = file.filter(|_| n > 0) else {
                        return Err(orphan);
                    };
                    match tag {
                        10 => f.range_deletions = n,
                        11 => f.min_deadline = n,
                        _ => f.global_seqno = n,
                    }
                }
                _ => return Err("unknown version edit tag"),
            }
        }
        Ok(e)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The manifest's edits carry no version: a new field is a new tag, and an existing tag's
    /// bytes never change (their goldens may never be rewritten).
    const EDIT_VERSIONS: &str = "none: tags only";
    use crate::format::ikey::{InternalKey, ValueKind};

    pub(crate) fn meta(n: u64, lo: &str, hi: &str) -> FileMeta {
        FileMeta {
            number: n,
            size: 1000,
            smallest: InternalKey::new(lo.as_bytes(), 1, ValueKind::Put).encoded().to_vec(),
            largest: InternalKey::new(hi.as_bytes(), 1, ValueKind::Put).encoded().to_vec(),
            smallest_seqno: 1,
            largest_seqno: n,
            entries: 10,
            tombstones: 0,
            filter_policy: "uniform".into(),
            filter_bpk: 10.0,
            segments: 1,
            l0_group: 0,
            range_deletions: 0,
            min_deadline: 0,
            global_seqno: 0,
        }
    }

    #[test]
    fn round_trip_and_garbage() {
        let e = VersionEdit {
            db_id: Some(0x1234_5678_9abc_def0),
            next_file_number: Some(9),
            last_seqno: Some(77),
            new_trees: vec![(0, "default".into()), (1, "users".into())],
            dropped_trees: vec![2],
            log_numbers: vec![(0, 4)],
            deepest: vec![(1, 3)],
            deleted: vec![(0, 1, 5)],
            added: vec![(1, 2, meta(8, "a", "m")), (1, 0, FileMeta { l0_group: 3, ..meta(9, "b", "c") })],
        };
        let enc = e.encode();
        assert_eq!(VersionEdit::decode(&enc), Ok(e));
        for cut in 1..enc.len() {
            let _ = VersionEdit::decode(&enc[..cut]); // never panics
        }
        assert!(VersionEdit::decode(&[99]).is_err());
    }

    /// An edit with every tag, pinned byte for byte (`docs/format/manifest.md`).
    #[test]
    fn golden_version_edit() {
        let e = VersionEdit {
            db_id: Some(0x0102_0304_0506_0708),
            next_file_number: Some(300),
            last_seqno: Some(1 << 40),
            new_trees: vec![(1, "users".into())],
            dropped_trees: Vec::new(), // tag 12: golden_dropped_tree
            log_numbers: vec![(0, 12), (1, 12)],
            deepest: vec![(0, 3)],
            deleted: vec![(0, 1, 5), (0, 2, 6)],
            added: vec![(0, 2, meta(7, "apple", "pear"))],
        };
        let enc = e.encode();
        crate::testutil::check_format_golden("golden/version_edit.hex", EDIT_VERSIONS, &crate::testutil::hex_lines(&enc));
        assert_eq!(VersionEdit::decode(&enc), Ok(e));
    }

    /// A file with range tombstones: tag 10 after its add (`docs/format/manifest.md`).
    #[test]
    fn golden_range_deletions() {
        let e = VersionEdit {
            added: vec![
                (0, 0, FileMeta { l0_group: 2, range_deletions: 3, ..meta(7, "a", "k") }),
                (0, 1, meta(8, "m", "z")),
            ],
            ..VersionEdit::default()
        };
        let enc = e.encode();
        crate::testutil::check_format_golden("golden/version_edit_range_del.hex", EDIT_VERSIONS, &crate::testutil::hex_lines(&enc));
        assert_eq!(VersionEdit::decode(&enc), Ok(e));
        // Tag 10 naming a file the edit does not add, or a count of 0, is corruption.
        refuses_orphans_and_zeros(10);
    }

    /// A per-file tag (`[tag, file, n]`) naming a file the edit does not add, or with `n` = 0,
    /// is corruption.
    fn refuses_orphans_and_zeros(tag: u64) {
        let mut orphan = Vec::new();
        for v in [tag, 9, 3] {
            put_varint64(&mut orphan, v);
        }
        assert!(VersionEdit::decode(&orphan).is_err());
        let mut zero = VersionEdit {
            added: vec![(0, 1, meta(8, "m", "z"))],
            ..VersionEdit::default()
        }
        .encode();
        for v in [tag, 8, 0] {
            put_varint64(&mut zero, v);
        }
        assert!(VersionEdit::decode(&zero).is_err());
    }

    /// A file with expiring values: tag 11 after its add (`docs/format/manifest.md`).
    #[test]
    fn golden_earliest_deadlines() {
        let e = VersionEdit {
            added: vec![
                (0, 1, FileMeta { min_deadline: 1_800_000_000_000, range_deletions: 2, ..meta(7, "a", "k") }),
                (0, 1, meta(8, "m", "z")),
            ],
            ..VersionEdit::default()
        };
        let enc = e.encode();
        crate::testutil::check_format_golden("golden/version_edit_deadline.hex", EDIT_VERSIONS, &crate::testutil::hex_lines(&enc));
        assert_eq!(VersionEdit::decode(&enc), Ok(e));
        // Tag 11 naming a file the edit does not add, or a deadline of 0, is corruption.
        refuses_orphans_and_zeros(11);
    }

    /// An ingested file: tag 13 after its add (`docs/format/manifest.md`).
    #[test]
    fn golden_global_seqno() {
        let e = VersionEdit {
            last_seqno: Some(41),
            added: vec![
                (0, 3, FileMeta { global_seqno: 41, range_deletions: 1, ..meta(7, "a", "k") }),
                (0, 1, meta(8, "m", "z")),
            ],
            ..VersionEdit::default()
        };
        let enc = e.encode();
        crate::testutil::check_format_golden("golden/version_edit_ingest.hex", EDIT_VERSIONS, &crate::testutil::hex_lines(&enc));
        assert_eq!(VersionEdit::decode(&enc), Ok(e));
        refuses_orphans_and_zeros(13);
    }

    /// A dropped tree: tag 12 (`docs/format/manifest.md`).
    #[test]
    fn golden_dropped_tree() {
        let e = VersionEdit {
            new_trees: vec![(3, "logs".into())],
            dropped_trees: vec![2],
            log_numbers: vec![(2, 9)],
            ..VersionEdit::default()
        };
        let enc = e.encode();
        crate::testutil::check_format_golden("golden/version_edit_drop_tree.hex", EDIT_VERSIONS, &crate::testutil::hex_lines(&enc));
        assert_eq!(VersionEdit::decode(&enc), Ok(e));
    }

    /// Without its dropped trees' parts: a job that finished after the drop installs nothing
    /// for that tree.
    #[test]
    fn an_edit_forgets_dropped_trees() {
        let mut e = VersionEdit {
            log_numbers: vec![(1, 4), (2, 4)],
            deepest: vec![(1, 3), (2, 3)],
            deleted: vec![(1, 1, 5), (2, 1, 6)],
            added: vec![(1, 1, meta(7, "a", "k")), (2, 1, meta(8, "a", "k"))],
            ..VersionEdit::default()
        };
        e.forget_trees(|t| t == 1);
        assert_eq!(e.log_numbers, vec![(2, 4)]);
        assert_eq!(e.deepest, vec![(2, 3)]);
        assert_eq!(e.deleted, vec![(2, 1, 6)]);
        assert_eq!(e.added.iter().map(|a| a.2.number).collect::<Vec<_>>(), vec![8]);
    }
}
