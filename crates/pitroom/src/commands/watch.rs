//! `pitroom watch`: follows runs live. For agents (`--json`), one JSON object per line, flushed
//! at once (PRODUCT.md §8); for people, a table redrawn in place, or one line per finished run.
//! The events come from the run library's inotify-driven stream.

use std::io::Write;
use std::time::Instant;

use pitroom_core::duration::parse_duration;
use pitroom_core::{exit, report, RunRecord};
use pitroom_service::events::Next;
use pitroom_service::WatchEvent;

use crate::cli::WatchArgs;
use crate::output;
use crate::output::{say, tell};

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Json,
    Brief,
    Table,
}

pub(super) fn watch(args: WatchArgs) -> i32 {
    let limit = match args.timeout.as_deref().map(parse_duration).transpose() {
        Ok(l) => l,
        Err(why) => {
            output::error(format!("--timeout {why}"));
            return exit::USAGE;
        }
    };
    let service = match super::service() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let selector = match service.select_to_follow(&args.runs, args.group.as_deref()) {
        Ok(s) => s,
        Err(e) => return super::fail(&e),
    };
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
                return exit::STILL_RUNNING;
            }
        };
        let records = stream.records();
        match style {
            Style::Json => print_line(&event),
            Style::Brief => print_brief(&event, records),
            Style::Table => table.draw(records),
        }
        if let WatchEvent::AllDone { runs, ok, .. } = event {
            return if ok == runs { exit::OK } else { exit::FAILED };
        }
    }
    exit::OK
}

fn again(args: &WatchArgs) -> String {
    match &args.group {
        Some(g) => format!(" -g {g}"),
        None => args.runs.iter().map(|r| format!(" {r}")).collect(),
    }
}

/// One NDJSON line, flushed at once; a reader that went away ends the output.
fn print_line(event: &WatchEvent) {
    let Ok(line) = serde_json::to_string(event) else {
        return;
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        std::process::exit(exit::OK);
    }
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
    fn draw(&mut self, records: &[RunRecord]) {
        let mut out = std::io::stdout().lock();
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
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            std::process::exit(exit::OK);
        }
        self.drawn = records.len() + 1;
    }
}
