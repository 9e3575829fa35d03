//! `cairn`: read, write and maintain a cairn database from the command line (RocksDB's `ldb`
//! for cairn). Keys and values are given and printed as UTF-8; bytes that are not printable are
//! printed as `\xNN` (and a backslash as `\\`). `--hex` reads and prints them as hex instead,
//! `--json` prints one JSON value per result for scripts.
//!
//! Commands that only read (get, scan, trees and the inspection commands) open the database
//! read-only, so they run beside a process that has it open for writing. Every command opens
//! the database with the options it was last opened with (its newest OPTIONS file).
//!
//! Exit status: 0 done, 1 `get` found no value or `verify` found damage, 2 an error (one line
//! on stderr).

mod inspect;

use cairn::inspect::Bytes;
use cairn::{Db, Error, Options, Tree};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "cairn",
    version,
    about = "Read, write and maintain a cairn database",
    after_help = "Examples:\n  cairn put /data/db user:42 '{\"name\":\"ada\"}' --create\n  cairn get /data/db user:42\n  cairn scan /data/db --from user: --to 'user;' --limit 10 --json\n  cairn --hex get /data/db 00ff10\n  cairn verify /data/db\n  cairn sst /data/db/000012.sst --entries --index | less"
)]
struct Cli {
    /// Keys and values are hex on the command line and in the output.
    #[arg(long, global = true)]
    hex: bool,
    /// One JSON value per result (keys and values encoded as in text output).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prints the value of KEY; with several keys (read in one multi_get), one `key => value`
    /// line per key found. Exit status 1 when a key has none.
    #[command(
        after_help = "Example: cairn get /data/db user:42 --tree users\n         cairn get /data/db user:42 user:43 user:44"
    )]
    Get {
        /// Database directory.
        db: PathBuf,
        #[arg(required = true, num_args = 1..)]
        keys: Vec<String>,
        /// Tree to read (default: the default tree).
        #[arg(long)]
        tree: Option<String>,
    },
    /// Writes KEY = VALUE (durably: the write is synced before the command returns).
    #[command(after_help = "Example: cairn put /data/db user:42 ada --create")]
    Put {
        /// Database directory.
        db: PathBuf,
        key: String,
        value: String,
        /// Tree to write (created if missing; default: the default tree).
        #[arg(long)]
        tree: Option<String>,
        /// Create the database if the directory holds none.
        #[arg(long)]
        create: bool,
    },
    /// Deletes KEY (durably).
    #[command(after_help = "Example: cairn delete /data/db user:42")]
    Delete {
        /// Database directory.
        db: PathBuf,
        key: String,
        /// Tree to write (default: the default tree).
        #[arg(long)]
        tree: Option<String>,
    },
    /// Prints the entries with FROM ≤ key < TO, in key order (or reverse).
    #[command(after_help = "Example: cairn scan /data/db --from a --to b --reverse --limit 5")]
    Scan {
        /// Database directory.
        db: PathBuf,
        #[command(flatten)]
        keys: KeyRange,
        /// Largest key first.
        #[arg(long)]
        reverse: bool,
        /// At most this many entries.
        #[arg(long)]
        limit: Option<u64>,
        /// Tree to read (default: the default tree).
        #[arg(long)]
        tree: Option<String>,
        /// Print the keys only.
        #[arg(long)]
        keys_only: bool,
        /// Print at most this many bytes of each value, then a marker with the bytes left out
        /// (default: 1024 when the output is a terminal, whole values otherwise; 0: no limit).
        #[arg(long)]
        max_value_bytes: Option<usize>,
    },
    /// Lists the trees.
    #[command(after_help = "Example: cairn trees /data/db")]
    Trees {
        /// Database directory.
        db: PathBuf,
    },
    /// Drops tree NAME and everything in it, durably (its name is then free).
    #[command(name = "drop-tree", after_help = "Example: cairn drop-tree /data/db sessions")]
    DropTree {
        /// Database directory.
        db: PathBuf,
        name: String,
    },
    /// Adds external tables (written by cairn's `TableWriter`) to a tree, all or none: each
    /// is checked in full, then copied (or, with --move, linked and its source removed) and
    /// placed at the deepest level it fits, with a sequence number newer than every write.
    #[command(after_help = "Example: cairn ingest /data/db /load/part-0.sst /load/part-1.sst --move")]
    Ingest {
        /// Database directory.
        db: PathBuf,
        /// The tables, oldest first: a later table's version of a key wins.
        #[arg(required = true, num_args = 1..)]
        tables: Vec<PathBuf>,
        /// Tree to add them to (default: the default tree).
        #[arg(long)]
        tree: Option<String>,
        /// Link the tables into the database and remove their sources (copied where linking
        /// is impossible).
        #[arg(long = "move")]
        move_files: bool,
        /// Refuse, rather than flush memtables, when a table overlaps writes in memory.
        #[arg(long)]
        no_flush: bool,
    },
    /// Writes every tree's memtable to tables.
    #[command(after_help = "Example: cairn flush /data/db")]
    Flush {
        /// Database directory.
        db: PathBuf,
    },
    /// Writes a consistent copy of the database into DIR (new or empty), which opens as a
    /// database: tables hard-linked where possible, WALs copied.
    #[command(after_help = "Example: cairn checkpoint /data/db /data/db-copy")]
    Checkpoint {
        /// Database directory.
        db: PathBuf,
        /// Where the copy goes.
        dir: PathBuf,
    },
    /// Backs the database up into DIR: each backup copies only the tables the earlier
    /// backups in DIR lack.
    #[command(after_help = "Example: cairn backup /data/db /backups/db")]
    Backup {
        /// Database directory.
        db: PathBuf,
        /// The backup directory.
        dir: PathBuf,
    },
    /// Restores the newest complete backup in DIR into DB (new or empty).
    #[command(after_help = "Example: cairn restore /backups/db /data/db-restored")]
    Restore {
        /// The backup directory.
        dir: PathBuf,
        /// Where the database goes.
        db: PathBuf,
    },
    /// Compacts the keys FROM ≤ key < TO (default: all) down to the last level.
    #[command(after_help = "Example: cairn compact /data/db --from a --to m")]
    Compact {
        /// Database directory.
        db: PathBuf,
        #[command(flatten)]
        keys: KeyRange,
        /// Tree to compact (default: the default tree).
        #[arg(long)]
        tree: Option<String>,
    },
    /// Prints the engine's statistics (`cairn.stats`), levels and per-file filters
    /// (`cairn.filters`). Counters count this process's work since its open: from the command
    /// line they are zero; the shape, bits-per-key and memory are the database's.
    #[command(after_help = "Example: cairn stats /data/db")]
    Stats {
        /// Database directory.
        db: PathBuf,
    },
    /// Prints every tree's levels: files, bytes and entries.
    #[command(after_help = "Example: cairn levels /data/db --json")]
    Levels {
        /// Database directory.
        db: PathBuf,
    },
    /// Prints the manifest's version edits, decoded, and how it ends.
    #[command(after_help = "Example: cairn manifest /data/db")]
    Manifest {
        /// Database directory.
        db: PathBuf,
    },
    /// Prints a WAL's records: batches with sequence numbers and operations, and where and why
    /// the log ends.
    #[command(after_help = "Example: cairn wal /data/db/000042.wal --values")]
    Wal {
        /// The WAL file (`NNNNNN.wal`: the log number comes from the name).
        file: PathBuf,
        /// Print values too (default: their lengths).
        #[arg(long)]
        values: bool,
    },
    /// Prints a table: footer, properties, segments with their filter units and bits per key,
    /// index; or verifies it.
    #[command(
        after_help = "Examples:\n  cairn sst /data/db/000012.sst --entries\n  cairn sst /data/db/000012.sst --verify"
    )]
    Sst {
        /// The table file.
        file: PathBuf,
        /// Print every entry too.
        #[arg(long)]
        entries: bool,
        /// Print every index entry (one per data block) too.
        #[arg(long)]
        index: bool,
        /// Check every block's checksum, the entries' order and count, and that every filter
        /// unit holds its segment's keys; exit status 1 when damaged.
        #[arg(long, conflicts_with_all = ["entries", "index"])]
        verify: bool,
    },
    /// Prints the options stored in the database's newest OPTIONS file.
    #[command(after_help = "Example: cairn options /data/db")]
    Options {
        /// Database directory.
        db: PathBuf,
    },
    /// Reads every block of every live table, the manifest, the WALs and OPTIONS; checks every
    /// checksum and that every table matches its manifest entry. Prints each damaged structure
    /// (file, offset, what); exit status 1 when anything is damaged.
    #[command(after_help = "Example: cairn verify /data/db && echo intact")]
    Verify {
        /// Database directory.
        db: PathBuf,
    },
}

/// One end of a key range.
type KeyBound = Bound<Vec<u8>>;

/// The keys FROM ≤ key < TO.
#[derive(clap::Args, Debug)]
struct KeyRange {
    /// First key (inclusive; default: the first key).
    #[arg(long)]
    from: Option<String>,
    /// End key (exclusive; default: past the last key).
    #[arg(long)]
    to: Option<String>,
}

impl KeyRange {
    /// The range's bounds, its keys decoded as the command line says.
    fn bounds(&self, hex: bool) -> Result<(KeyBound, KeyBound), Failure> {
        let key = |k: &Option<String>| k.as_deref().map(|k| decode(k, hex)).transpose();
        Ok((
            key(&self.from)?.map_or(Bound::Unbounded, Bound::Included),
            key(&self.to)?.map_or(Bound::Unbounded, Bound::Excluded),
        ))
    }
}

/// One entry of a scan.
type Entry = cairn::Result<(Vec<u8>, Vec<u8>)>;

/// A failure: one line for the user; `Pipe` when whoever reads the output went away (`| head`),
/// which ends the command quietly.
enum Failure {
    Line(String),
    Pipe,
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::Pipe
        } else {
            Failure::Line(format!("cannot write the output: {e}"))
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        match e {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe => Failure::Pipe,
            e => Failure::Line(e.to_string()),
        }
    }
}

fn fail(msg: impl Into<String>) -> Failure {
    Failure::Line(msg.into())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let r = run(&cli, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    match r {
        Ok(code) => code,
        Err(Failure::Pipe) => ExitCode::SUCCESS,
        Err(Failure::Line(msg)) => {
            let _ = out.flush();
            eprintln!("cairn: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli, out: &mut dyn Write) -> Result<ExitCode, Failure> {
    let bytes = |s: &str| decode(s, cli.hex);
    let show = if cli.hex { Bytes::Hex } else { Bytes::Text };
    match &cli.command {
        Command::Get { db, keys, tree } if keys.len() > 1 => {
            let db = open(db, Access::Read)?;
            let t = existing_tree(&db, tree.as_deref())?;
            let keys = keys.iter().map(|k| bytes(k)).collect::<Result<Vec<_>, _>>()?;
            let mut missing = false;
            for (key, v) in keys.iter().zip(t.multi_get(&keys)?) {
                match v {
                    Some(v) => print_entry(cli, out, Some(key), &v)?,
                    None => {
                        missing = true;
                        if cli.json {
                            writeln!(out, "{}", serde_json::json!({ "key": show.show(key), "value": null }))?;
                        } else {
                            eprintln!("cairn: not found: {}", cairn::inspect::key_text(show, key));
                        }
                    }
                }
            }
            Ok(if missing { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Get { db, keys, tree } => {
            let db = open(db, Access::Read)?;
            let t = existing_tree(&db, tree.as_deref())?;
            let key = bytes(&keys[0])?;
            match t.get(&key)? {
                Some(v) => {
                    print_entry(cli, out, None, &v)?;
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    if cli.json {
                        writeln!(out, "null")?;
                    } else {
                        eprintln!("cairn: not found");
                    }
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Put {
            db,
            key,
            value,
            tree,
            create,
        } => {
            let db = open(db, if *create { Access::Create } else { Access::Write })?;
            let t = match tree {
                Some(name) => db.tree(name)?,
                None => existing_tree(&db, None)?,
            };
            let mut batch = cairn::WriteBatch::new();
            batch.put_in(&t, &bytes(key)?, &bytes(value)?);
            write_synced(&db, batch)
        }
        Command::Delete { db, key, tree } => {
            let db = open(db, Access::Write)?;
            let t = existing_tree(&db, tree.as_deref())?;
            let mut batch = cairn::WriteBatch::new();
            batch.delete_in(&t, &bytes(key)?);
            write_synced(&db, batch)
        }
        Command::Scan {
            db,
            keys,
            reverse,
            limit,
            tree,
            keys_only,
            max_value_bytes,
        } => {
            let db = open(db, Access::Read)?;
            let t = existing_tree(&db, tree.as_deref())?;
            let range = t.range::<Vec<u8>, _>(keys.bounds(cli.hex)?);
            let limit = usize::try_from(limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
            let entries: Box<dyn Iterator<Item = Entry>> = if *reverse {
                Box::new(range.rev())
            } else {
                Box::new(range)
            };
            // A terminal gets the start of large values; a pipe or file gets them whole.
            let cap = match max_value_bytes {
                Some(0) => None,
                Some(n) => Some(*n),
                None => std::io::IsTerminal::is_terminal(&std::io::stdout()).then_some(1024),
            };
            for e in entries.take(limit) {
                let (k, v) = e?;
                if *keys_only {
                    print_key(cli, out, &k)?;
                } else {
                    match cap.filter(|&n| v.len() > n) {
                        None => print_entry(cli, out, Some(&k), &v)?,
                        // JSON keeps one entry per line and counts what it left out.
                        Some(n) if cli.json => {
                            let show = if cli.hex { Bytes::Hex } else { Bytes::Text };
                            let entry = serde_json::json!({
                                "key": show.show(&k),
                                "value": show.show(&v[..n]),
                                "more_bytes": v.len() - n,
                            });
                            writeln!(out, "{entry}")?;
                        }
                        Some(n) => {
                            print_entry(cli, out, Some(&k), &v[..n])?;
                            writeln!(out, "  … {} more bytes (--max-value-bytes 0 prints them)", v.len() - n)?;
                        }
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Trees { db } => {
            let names = open(db, Access::Read)?.tree_names();
            if cli.json {
                writeln!(out, "{}", serde_json::Value::from(names))?;
            } else {
                for n in names {
                    writeln!(out, "{n}")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::DropTree { db, name } => {
            open(db, Access::Write)?.drop_tree(name)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ingest {
            db,
            tables,
            tree,
            move_files,
            no_flush,
        } => {
            let db = open(db, Access::Write)?;
            let t = existing_tree(&db, tree.as_deref())?;
            let opts = cairn::IngestOptions {
                move_files: *move_files,
                allow_blocking_flush: !*no_flush,
            };
            let info = t.ingest(tables, &opts)?;
            for i in &info.tables {
                if cli.json {
                    let v = serde_json::json!({"source": i.source.display().to_string(), "file": i.file_number, "level": i.level, "seqno": i.seqno, "linked": i.linked});
                    writeln!(out, "{v}")?;
                } else {
                    writeln!(
                        out,
                        "{}: file {:06} at L{}, seq {}, {}",
                        i.source.display(),
                        i.file_number,
                        i.level,
                        i.seqno,
                        if i.linked { "linked" } else { "copied" }
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Flush { db } => {
            open(db, Access::Write)?.flush_all()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Checkpoint { db, dir } => {
            let i = open(db, Access::Write)?.checkpoint(dir)?;
            if cli.json {
                let v = serde_json::json!({"tables": i.tables, "linked": i.linked, "bytes_copied": i.bytes_copied, "last_seqno": i.last_seqno});
                writeln!(out, "{v}")?;
            } else {
                writeln!(
                    out,
                    "checkpoint at seqno {}: {} tables ({} hard-linked), {} bytes copied",
                    i.last_seqno, i.tables, i.linked, i.bytes_copied
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Backup { db, dir } => {
            let i = open(db, Access::Write)?.backup(dir)?;
            if cli.json {
                let v = serde_json::json!({"id": i.id, "tables": i.tables, "tables_shared": i.tables_shared, "bytes_copied": i.bytes_copied, "last_seqno": i.last_seqno});
                writeln!(out, "{v}")?;
            } else {
                writeln!(
                    out,
                    "backup {} at seqno {}: {} tables ({} already backed up), {} bytes copied",
                    i.id, i.last_seqno, i.tables, i.tables_shared, i.bytes_copied
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Restore { dir, db } => {
            let i = Db::restore(dir, db)?;
            if cli.json {
                let v = serde_json::json!({"id": i.id, "tables": i.tables, "bytes_copied": i.bytes_copied});
                writeln!(out, "{v}")?;
            } else {
                writeln!(
                    out,
                    "restored backup {}: {} tables, {} bytes copied",
                    i.id, i.tables, i.bytes_copied
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Compact { db, keys, tree } => {
            let db = open(db, Access::Write)?;
            let t = existing_tree(&db, tree.as_deref())?;
            t.compact_range::<Vec<u8>, _>(keys.bounds(cli.hex)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats { db } => inspect::stats(&open(db, Access::Read)?, out),
        Command::Levels { db } => inspect::levels(&open(db, Access::Read)?, cli.json, out),
        Command::Manifest { db } => {
            must_hold_database(db)?;
            cairn::inspect::dump_manifest(&*fs(), db, show, out)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Wal { file, values } => {
            must_be_file(file)?;
            cairn::inspect::dump_wal(&*fs(), file, *values, show, out)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sst {
            file,
            entries,
            index,
            verify,
        } => {
            must_be_file(file)?;
            if *verify {
                return inspect::report(&cairn::inspect::verify_table(&*fs(), file), cli.json, out);
            }
            let what = cairn::inspect::TableDump {
                entries: *entries,
                index: *index,
            };
            cairn::inspect::dump_table_with(&*fs(), file, what, show, out)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Options { db } => {
            must_hold_database(db)?;
            inspect::options(db, cli.json, out)
        }
        Command::Verify { db } => {
            must_exist(db)?;
            let report = cairn::inspect::verify(&*fs(), db)?;
            inspect::report(&report, cli.json, out)
        }
    }
}

fn fs() -> std::sync::Arc<dyn cairn::env::FileSystem> {
    Options::default().fs
}

fn write_synced(db: &Db, batch: cairn::WriteBatch) -> Result<ExitCode, Failure> {
    let sync = cairn::WriteOptions {
        sync: true,
        ..Default::default()
    };
    db.write(batch, &sync)?;
    Ok(ExitCode::SUCCESS)
}

/// How a command opens the database.
#[derive(Clone, Copy, PartialEq)]
enum Access {
    /// Read-only: no lock, nothing written (runs beside a writer).
    Read,
    Write,
    /// For writing, created when the directory holds none.
    Create,
}

fn must_exist(dir: &Path) -> Result<(), Failure> {
    if dir.exists() {
        Ok(())
    } else {
        Err(fail(format!("{} does not exist", dir.display())))
    }
}

fn must_be_file(file: &Path) -> Result<(), Failure> {
    must_exist(file)?;
    if file.is_file() {
        Ok(())
    } else {
        Err(fail(format!("{} is not a file", file.display())))
    }
}

/// A directory that exists and holds a database (a CURRENT file).
fn must_hold_database(dir: &Path) -> Result<(), Failure> {
    must_exist(dir)?;
    if dir.join("CURRENT").exists() {
        return Ok(());
    }
    Err(fail(format!(
        "{} holds no cairn database (no CURRENT file){}",
        dir.display(),
        if dir.is_dir() { "" } else { ": it is not a directory" }
    )))
}

/// Opens the database at `dir` with the options it was last opened with.
fn open(dir: &Path, access: Access) -> Result<Db, Failure> {
    if access != Access::Create {
        must_hold_database(dir).map_err(|f| match f {
            Failure::Line(m) if access == Access::Write && dir.is_dir() => {
                Failure::Line(format!("{m}; `put --create` makes one"))
            }
            f => f,
        })?;
    }
    let cannot = |e: Error| {
        let hint = match &e {
            Error::Corruption { .. } => format!("; `cairn verify {}` lists all damage", dir.display()),
            Error::Locked(_) => {
                "; another process has it open for writing (commands that only read work beside it)".into()
            }
            _ => String::new(),
        };
        fail(format!("cannot open {}: {e}{hint}", dir.display()))
    };
    let opts = if dir.join("CURRENT").exists() {
        Options::default().with_stored(dir).map_err(cannot)?
    } else {
        Options::default()
    };
    let opts = Options {
        create_if_missing: access == Access::Create,
        error_if_exists: false,
        ..opts
    };
    match access {
        Access::Read => Db::open_read_only(dir, opts),
        Access::Write | Access::Create => Db::open(dir, opts),
    }
    .map_err(cannot)
}

/// The tree named `name` (the default tree when none), which must exist.
fn existing_tree(db: &Db, name: Option<&str>) -> Result<Tree, Failure> {
    let Some(name) = name else {
        return Ok(db.tree("default")?);
    };
    if !db.tree_names().iter().any(|n| n == name) {
        return Err(fail(format!("no tree named {name:?} (see `cairn trees`)")));
    }
    Ok(db.tree(name)?)
}

/// A key or value from the command line.
fn decode(s: &str, hex: bool) -> Result<Vec<u8>, Failure> {
    if !hex {
        return Ok(s.as_bytes().to_vec());
    }
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.len() % 2 != 0 {
        return Err(fail(format!("{s:?} is not hex: odd number of digits")));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| fail(format!("{s:?} is not hex")))
        })
        .collect()
}

fn print_entry(cli: &Cli, out: &mut dyn Write, key: Option<&[u8]>, value: &[u8]) -> std::io::Result<()> {
    let show = if cli.hex { Bytes::Hex } else { Bytes::Text };
    let v = show.show(value);
    match (key, cli.json) {
        (Some(k), true) => writeln!(out, "{}", serde_json::json!({ "key": show.show(k), "value": v })),
        (None, true) => writeln!(out, "{}", serde_json::Value::from(v)),
        (Some(k), false) => writeln!(out, "{} => {v}", cairn::inspect::key_text(show, k)),
        (None, false) => writeln!(out, "{v}"),
    }
}

/// A key alone (`scan --keys-only`).
fn print_key(cli: &Cli, out: &mut dyn Write, key: &[u8]) -> std::io::Result<()> {
    let show = if cli.hex { Bytes::Hex } else { Bytes::Text };
    if cli.json {
        writeln!(out, "{}", serde_json::Value::from(show.show(key)))
    } else {
        writeln!(out, "{}", cairn::inspect::key_text(show, key))
    }
}
