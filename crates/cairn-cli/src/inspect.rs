//! The inspection commands' output: statistics, levels, stored options and verify reports.

use crate::Failure;
use cairn::inspect::VerifyReport;
use cairn::Db;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

pub(crate) fn stats(db: &Db, out: &mut dyn Write) -> Result<ExitCode, Failure> {
    for property in ["cairn.stats", "cairn.filters"] {
        write!(out, "{}", db.property(property).unwrap_or_default())?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn levels(db: &Db, json: bool, out: &mut dyn Write) -> Result<ExitCode, Failure> {
    let trees = db.levels();
    if json {
        let v: Vec<_> = trees
            .iter()
            .map(|t| {
                let levels: Vec<_> = t
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| json!({ "level": i, "files": l.files, "bytes": l.bytes, "entries": l.entries }))
                    .collect();
                json!({ "tree": t.name, "deepest": t.deepest, "levels": levels })
            })
            .collect();
        writeln!(out, "{}", serde_json::Value::from(v))?;
        return Ok(ExitCode::SUCCESS);
    }
    for t in &trees {
        write!(out, "{t}")?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn options(dir: &Path, json: bool, out: &mut dyn Write) -> Result<ExitCode, Failure> {
    let Some((path, stored)) = cairn::inspect::stored_options(&*crate::fs(), dir)? else {
        return Err(crate::fail(format!(
            "{} has no OPTIONS file (it is written at every open)",
            dir.display()
        )));
    };
    if json {
        writeln!(out, "{}", json!(stored))?;
    } else {
        writeln!(out, "# {}", path.display())?;
        for (k, v) in &stored {
            writeln!(out, "{k}={v}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a verify report; exit status 1 when it found damage.
pub(crate) fn report(r: &VerifyReport, json: bool, out: &mut dyn Write) -> Result<ExitCode, Failure> {
    if json {
        let damage: Vec<_> = r
            .damage
            .iter()
            .map(|d| json!({ "file": d.file.display().to_string(), "offset": d.offset, "what": d.what }))
            .collect();
        let checked: Vec<_> = r
            .checked
            .iter()
            .map(|(kind, p)| json!({ "kind": kind, "file": p.display().to_string() }))
            .collect();
        writeln!(
            out,
            "{}",
            json!({ "ok": r.is_ok(), "checked": checked, "blocks": r.blocks, "entries": r.entries,
                    "damage": damage, "notes": r.notes })
        )?;
    } else {
        for d in &r.damage {
            writeln!(out, "DAMAGED {d}")?;
        }
        for n in &r.notes {
            writeln!(out, "note: {n}")?;
        }
        let count = |kind: &str| r.checked.iter().filter(|(k, _)| *k == kind).count();
        writeln!(
            out,
            "checked {} table(s), {} WAL(s), {} manifest(s), {} OPTIONS file(s): {} blocks, {} entries and records",
            count("table"),
            count("wal"),
            count("manifest"),
            count("options"),
            r.blocks,
            r.entries
        )?;
        if r.is_ok() {
            writeln!(out, "OK: no damage found")?;
        } else {
            writeln!(out, "{} damaged structure(s)", r.damage.len())?;
        }
    }
    Ok(if r.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
