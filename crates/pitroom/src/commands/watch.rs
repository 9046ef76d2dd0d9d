//! `pitroom watch`: follows runs live. For agents (`--json`), one JSON object per line, flushed
//! at once; for people, a table redrawn in place, or one line per finished run.
//! The events come from the run library's inotify-driven stream.

use std::io::Write;
use std::time::Instant;

use pitroom_core::duration::parse_duration;
use pitroom_core::exit::Exit;
use pitroom_core::{report, RunRecord};
use pitroom_service::events::Next;
use pitroom_service::WatchEvent;

use super::Outcome;
use crate::cli::WatchArgs;
use crate::error::CliError;
use crate::output::{say, tell};

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Json,
    Brief,
    Table,
}

pub(super) fn watch(args: WatchArgs) -> Outcome {
    let limit = args
        .timeout
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(|why| CliError::usage(format!("--timeout {why}")))?;
    let service = super::service()?;
    let selector = service.select_to_follow(&args.runs, args.group.as_deref())?;
    let style = if args.json {
        Style::Json
    } else if args.brief || !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        Style::Brief
    } else {
        Style::Table
    };
    let mut stream = service.events(selector, limit.map(|l| Instant::now() + l));
    let mut table = Table::default();
    while let Some(next) = stream.next() {
        let event = match next {
            Next::Event(e) => e,
            Next::TimedOut => {
                tell!(
                    "pitroom: still running; call again: pitroom watch{}",
                    again(&args)
                );
                return Ok(Exit::StillRunning);
            }
        };
        let records = stream.records();
        let read = match style {
            Style::Json => print_line(&event),
            Style::Brief => {
                print_brief(&event, records);
                Read::On
            }
            Style::Table => table.draw(records),
        };
        if read == Read::Gone {
            // No one is left to follow the runs; they go on without us.
            return Ok(Exit::Ok);
        }
        if let WatchEvent::AllDone { runs, ok, .. } = event {
            return Ok(if ok == runs { Exit::Ok } else { Exit::Failed });
        }
    }
    Ok(Exit::Ok)
}

/// Whether the reader of stdout is still there after a write.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    On,
    Gone,
}

/// The reader's state after writing `text` and flushing it at once.
fn write_now(text: &[u8]) -> Read {
    let mut out = std::io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Ok(()) => Read::On,
        Err(_) => Read::Gone,
    }
}

fn again(args: &WatchArgs) -> String {
    match &args.group {
        Some(g) => format!(" -g {g}"),
        None => args.runs.iter().map(|r| format!(" {r}")).collect(),
    }
}

/// One NDJSON line, flushed at once; a reader that went away ends the output.
fn print_line(event: &WatchEvent) -> Read {
    let Ok(line) = serde_json::to_string(event) else {
        return Read::On;
    };
    write_now(format!("{line}\n").as_bytes())
}

/// A line per finished run, and the tally at the end.
fn print_brief(event: &WatchEvent, records: &[RunRecord]) {
    if let WatchEvent::AllDone { .. } = event {
        say!("{}", super::wait::tally_line(records));
        return;
    }
    if !event.is_terminal() {
        return;
    }
    if let Some(record) = records.iter().find(|r| Some(r.id.as_str()) == event.run()) {
        say!("{}", report::brief(record));
    }
}

/// The live table, redrawn in place.
#[derive(Default)]
struct Table {
    /// Lines drawn last.
    drawn: usize,
}

impl Table {
    fn draw(&mut self, records: &[RunRecord]) -> Read {
        let mut text = String::new();
        if self.drawn > 0 {
            // Up to the table's first line, then clear everything below.
            text.push_str(&format!("\x1b[{}F\x1b[J", self.drawn));
        }
        for r in records {
            text.push_str(&report::brief(r));
            text.push('\n');
        }
        text.push_str(&super::wait::tally_line(records));
        text.push('\n');
        self.drawn = records.len() + 1;
        write_now(text.as_bytes())
    }
}
