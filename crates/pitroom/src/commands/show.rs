//! `pitroom show` and `pitroom ls`.

use std::io::Write;

use pitroom_core::exit::Exit;
use pitroom_core::report;
use pitroom_core::terminal::neutralise;
use pitroom_service::changes::RunFile;

use super::Outcome;
use crate::cli::{LsArgs, ShowArgs};
use crate::error::CliError;
use crate::output;
use crate::output::{say, tell};

pub(super) fn show(args: ShowArgs) -> Outcome {
    let service = super::service()?;
    let record = service.load(args.run.as_deref())?;
    let id = record.id.clone();
    if args.json {
        output::json(&record);
    } else if args.patch {
        match service.patch(&record)? {
            // Neutralised like every text on a terminal: an escape sequence in the patch is
            // shown as `\x1b`, not obeyed. `apply` lands the stored patch, not this text.
            Some(shown) => write_stdout(neutralise(&shown).as_bytes()),
            None => tell!("pitroom: run {id} changed nothing; there is no patch"),
        }
    } else if args.events {
        // JSON lines, byte-exact: JSON escapes the control characters a terminal obeys.
        match service.run_file(&record, RunFile::Events)? {
            Some(bytes) => write_stdout(&bytes),
            None => return Err(CliError::refused(format!("run {id} has no events.jsonl"))),
        }
    } else {
        output::report(&service, &record);
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
    Ok(Exit::Ok)
}

/// Raw bytes to stdout; a reader that went away (`| head`) ends the output, nothing else.
fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
        // SIGPIPE is at its default disposition, so only a closed pipe without it lands here.
    }
}

pub(super) fn ls(args: LsArgs) -> Outcome {
    let service = super::service()?;
    let records = service.list(args.group.as_deref(), args.running, args.limit);
    if args.json {
        output::json(&records);
        return Ok(Exit::Ok);
    }
    if records.is_empty() {
        say!("no runs{}", if args.running { " running" } else { " yet" });
        return Ok(Exit::Ok);
    }
    for r in &records {
        say!("{}", report::brief(r));
    }
    Ok(Exit::Ok)
}
