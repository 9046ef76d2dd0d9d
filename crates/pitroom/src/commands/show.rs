//! `pitroom show` and `pitroom ls`.

use std::io::Write;

use pitroom_core::{exit, report};
use pitroom_service::changes::RunFile;

use crate::cli::{LsArgs, ShowArgs};
use crate::output;
use crate::output::{say, say_raw, tell};

pub(super) fn show(args: ShowArgs) -> i32 {
    let service = match super::service() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let record = match super::load_run(&service, args.run.as_deref()) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let id = record.id.clone();
    if args.json {
        output::json(&record);
    } else if args.patch {
        match service.patch(&record) {
            Ok(Some(shown)) => write_stdout(shown.as_bytes()),
            Ok(None) => tell!("pitroom: run {id} changed nothing; there is no patch"),
            Err(e) => return super::fail(&e),
        }
    } else if args.events {
        match service.run_file(&record, RunFile::Events) {
            Ok(Some(bytes)) => write_stdout(&bytes),
            Ok(None) => {
                output::error(format!("run {id} has no events.jsonl"));
                return exit::REFUSED;
            }
            Err(e) => return super::fail(&e),
        }
    } else {
        say_raw!("{}", report::render(&record, output::stdout_color()));
        if args.full {
            let stderr = service
                .run_file(&record, RunFile::Stderr)
                .ok()
                .flatten()
                .unwrap_or_default();
            let stderr = String::from_utf8_lossy(&stderr);
            say!("── worker stderr ({} bytes):\n{stderr}", stderr.len());
        }
    }
    exit::OK
}

/// Raw bytes to stdout; a reader that went away (`| head`) ends the output, nothing else.
fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
        // SIGPIPE is at its default disposition, so only a closed pipe without it lands here.
    }
}

pub(super) fn ls(args: LsArgs) -> i32 {
    let service = match super::service() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let records = service.list(args.group.as_deref(), args.running, args.limit);
    if args.json {
        output::json(&records);
        return exit::OK;
    }
    if records.is_empty() {
        say!("no runs{}", if args.running { " running" } else { " yet" });
        return exit::OK;
    }
    for r in &records {
        say!("{}", report::brief(r));
    }
    exit::OK
}
