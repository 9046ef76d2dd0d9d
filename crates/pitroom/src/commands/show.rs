//! `pitroom show` and `pitroom ls`.

use std::io::Write;

use pitroom_core::{exit, report, RunRecord};

use crate::cli::{LsArgs, ShowArgs};
use crate::output;

pub fn show(args: ShowArgs) -> i32 {
    let home = super::home();
    let record = match super::load_run(&home, args.run.as_deref()) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let id = record.id.clone();
    let dir = home.run_dir(&id);
    if args.json {
        output::json(&record);
    } else if args.events || args.patch {
        let file = if args.events {
            "events.jsonl"
        } else {
            "changes.patch"
        };
        match std::fs::read(dir.join(file)) {
            Ok(bytes) if args.patch => {
                // The stored patch stays exact (apply and revert need it); what is shown is not.
                let dirs: Vec<&std::path::Path> = record.repo.iter().map(|p| p.as_path()).collect();
                let redactor = pitroom_core::redact::Redactor::for_dirs(&dirs);
                let shown = redactor.redact(&String::from_utf8_lossy(&bytes));
                let _ = std::io::stdout().write_all(shown.as_bytes());
            }
            Ok(bytes) => {
                let _ = std::io::stdout().write_all(&bytes);
            }
            Err(_) if args.patch => {
                eprintln!("pitroom: run {id} changed nothing; there is no patch")
            }
            Err(e) => {
                output::error(format!("run {id} has no {file}: {e}"));
                return exit::REFUSED;
            }
        }
    } else {
        print!("{}", report::render(&record, output::stdout_color()));
        if args.full {
            let stderr = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
            println!("── worker stderr ({} bytes):\n{stderr}", stderr.len());
        }
    }
    exit::OK
}

pub fn ls(args: LsArgs) -> i32 {
    let home = super::home();
    let ids = match &args.group {
        Some(g) => home.group_ids(g),
        None => home.run_ids(),
    };
    let mut records: Vec<RunRecord> = ids
        .iter()
        .rev()
        .filter_map(|id| home.load_settled(id).ok())
        .filter(|r| !args.running || r.state.is_active())
        .take(args.limit)
        .collect();
    records.reverse();
    if args.json {
        output::json(&records);
        return exit::OK;
    }
    if records.is_empty() {
        println!("no runs{}", if args.running { " running" } else { " yet" });
        return exit::OK;
    }
    for r in &records {
        println!("{}", report::brief(r));
    }
    exit::OK
}
