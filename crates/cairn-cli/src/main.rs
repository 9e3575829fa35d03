//! `cairn`: read, write and maintain a cairn database from the command line (RocksDB's `ldb`
//! for cairn). Keys and values are given and printed as UTF-8; bytes that are not printable are
//! printed as `\xNN` (and a backslash as `\\`). `--hex` reads and prints them as hex instead,
//! `--json` prints one JSON value per result for scripts.
//!
//! Exit status: 0 done, 1 `get` found no value, 2 an error (one line on stderr).

use cairn::{Db, Options, Tree};
use clap::{Parser, Subcommand};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "cairn",
    version,
    about = "Read, write and maintain a cairn database",
    after_help = "Examples:\n  cairn put /data/db user:42 '{\"name\":\"ada\"}' --create\n  cairn get /data/db user:42\n  cairn scan /data/db --from user: --to user; --limit 10 --json\n  cairn --hex get /data/db 00ff10"
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
    /// Prints the value of KEY (exit status 1 when there is none).
    #[command(after_help = "Example: cairn get /data/db user:42 --tree users")]
    Get {
        /// Database directory.
        db: PathBuf,
        key: String,
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
    },
    /// Lists the trees.
    #[command(after_help = "Example: cairn trees /data/db")]
    Trees {
        /// Database directory.
        db: PathBuf,
    },
    /// Writes every tree's memtable to tables.
    #[command(after_help = "Example: cairn flush /data/db")]
    Flush {
        /// Database directory.
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

/// A failure: one line for the user.
struct Failure(String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(Failure(msg)) => {
            eprintln!("cairn: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli) -> Result<ExitCode, Failure> {
    let bytes = |s: &str| decode(s, cli.hex);
    match &cli.command {
        Command::Get { db, key, tree } => {
            let db = open(db, false)?;
            let t = existing_tree(&db, tree.as_deref())?;
            let key = bytes(key)?;
            match t.get(&key)? {
                Some(v) => {
                    print_entry(cli, None, &v);
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    if cli.json {
                        println!("null");
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
            let db = open(db, *create)?;
            let t = match tree {
                Some(name) => db.tree(name)?,
                None => existing_tree(&db, None)?,
            };
            let mut batch = cairn::WriteBatch::new();
            batch.put_in(&t, &bytes(key)?, &bytes(value)?);
            db.write(
                batch,
                &cairn::WriteOptions {
                    sync: true,
                    ..Default::default()
                },
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Delete { db, key, tree } => {
            let db = open(db, false)?;
            let t = existing_tree(&db, tree.as_deref())?;
            let mut batch = cairn::WriteBatch::new();
            batch.delete_in(&t, &bytes(key)?);
            db.write(
                batch,
                &cairn::WriteOptions {
                    sync: true,
                    ..Default::default()
                },
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Scan {
            db,
            keys,
            reverse,
            limit,
            tree,
        } => {
            let db = open(db, false)?;
            let t = existing_tree(&db, tree.as_deref())?;
            let range = t.range::<Vec<u8>, _>(keys.bounds(cli.hex)?);
            let limit = usize::try_from(limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
            let entries: Box<dyn Iterator<Item = Entry>> = if *reverse {
                Box::new(range.rev())
            } else {
                Box::new(range)
            };
            for e in entries.take(limit) {
                let (k, v) = e?;
                print_entry(cli, Some(&k), &v);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Trees { db } => {
            let db = open(db, false)?;
            let names = db.tree_names();
            if cli.json {
                println!("{}", serde_json::Value::from(names));
            } else {
                for n in names {
                    println!("{n}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Flush { db } => {
            open(db, false)?.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Compact { db, keys, tree } => {
            let db = open(db, false)?;
            let t = existing_tree(&db, tree.as_deref())?;
            t.compact_range::<Vec<u8>, _>(keys.bounds(cli.hex)?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Opens the database at `dir`; a directory that holds none is an error unless `create`.
fn open(dir: &Path, create: bool) -> Result<Db, Failure> {
    if !create && !dir.join("CURRENT").exists() {
        return Err(Failure(if dir.exists() {
            format!(
                "{} holds no cairn database (no CURRENT file); `put --create` makes one",
                dir.display()
            )
        } else {
            format!("{} does not exist", dir.display())
        }));
    }
    let opts = Options {
        create_if_missing: create,
        ..Options::default()
    };
    Db::open(dir, opts).map_err(|e| Failure(format!("cannot open {}: {e}", dir.display())))
}

/// The tree named `name` (the default tree when none), which must exist.
fn existing_tree(db: &Db, name: Option<&str>) -> Result<Tree, Failure> {
    let Some(name) = name else {
        return Ok(db.tree("default")?);
    };
    if !db.tree_names().iter().any(|n| n == name) {
        return Err(Failure(format!("no tree named {name:?} (see `cairn trees`)")));
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
        return Err(Failure(format!("{s:?} is not hex: odd number of digits")));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| Failure(format!("{s:?} is not hex")))
        })
        .collect()
}

/// Bytes as printed: hex, or UTF-8 with what is not printable escaped.
fn encode(b: &[u8], hex: bool) -> String {
    if hex {
        return b.iter().map(|x| format!("{x:02x}")).collect();
    }
    let mut out = String::new();
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for x in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{x:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02x}"));
        }
    }
    out
}

fn print_entry(cli: &Cli, key: Option<&[u8]>, value: &[u8]) {
    let v = encode(value, cli.hex);
    match (key, cli.json) {
        (Some(k), true) => println!("{}", serde_json::json!({ "key": encode(k, cli.hex), "value": v })),
        (None, true) => println!("{}", serde_json::Value::from(v)),
        (Some(k), false) => println!("{} => {v}", encode(k, cli.hex)),
        (None, false) => println!("{v}"),
    }
}
