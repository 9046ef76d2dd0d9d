//! All terminal output: colour only on a terminal (and never with NO_COLOR), one clear line per
//! error, the live progress line. This module owns stdout and stderr: commands print through
//! [`say!`] (results, on stdout), [`tell!`] (notes for the person, on stderr), [`error`] and
//! [`warning`]; a command's failure reaches [`error`] and [`hint`] only through
//! `CliError::report`. The crate warns on `print_stdout`/`print_stderr` everywhere else (and CI
//! denies warnings); the few other writers are separate entry points that say why they may.
//!
//! Every text these print is neutralised (`pitroom_core::terminal::neutralise`): a worker's
//! answer, patch, file names or error cannot move the cursor or erase a line. Two paths print
//! exactly instead: [`json`] (JSON escapes control characters itself, and stays byte-exact)
//! and [`report`] (the run report, whose strings `report::render` neutralised before adding its
//! own colours).

use std::io::{IsTerminal, Write};
use std::time::Instant;

use pitroom_core::report::human_count;
use pitroom_core::terminal::neutralise;
use pitroom_core::{Observer, RunRecord};

/// Writes `text` to stdout, neutralised: the one place results reach stdout.
pub(crate) fn print_out(text: std::fmt::Arguments<'_>) {
    let text = text.to_string();
    print_exact(&neutralise(&text));
}

/// Writes `text` to stdout as is. A reader that went away (`pitroom history | head`) is no
/// error to report: there is no one left to read it, and the command ends as it would have.
fn print_exact(text: &str) {
    let mut out = std::io::stdout().lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if let Err(e) = written {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            print_err(format_args!("pitroom: could not write to stdout: {e}"));
        }
    }
}

/// Writes one line to stderr, neutralised: the one place notes for the person reach stderr.
/// When stderr itself is gone there is nowhere left to say so.
pub(crate) fn print_err(text: std::fmt::Arguments<'_>) {
    let text = text.to_string();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", neutralise(&text));
}

/// Prints a line of a command's result on stdout (`println!` through the printer).
macro_rules! say {
    () => {
        $crate::output::print_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Prints a command's result on stdout as is, without adding a newline.
macro_rules! say_raw {
    ($($arg:tt)*) => {
        $crate::output::print_out(format_args!($($arg)*))
    };
}

/// Prints a note for the person on stderr (`eprintln!` through the printer).
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::output::print_err(format_args!($($arg)*))
    };
}

pub(crate) use {say, say_raw, tell};

pub(crate) fn stdout_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Prints a user-facing error: what happened and what to do.
pub(crate) fn error(message: impl std::fmt::Display) {
    print_err(format_args!("pitroom: {message}"));
}

pub(crate) fn warning(message: impl std::fmt::Display) {
    print_err(format_args!("pitroom: warning: {message}"));
}

/// The run's report on stdout, coloured on a terminal: printed exactly, since
/// `report::render` neutralised every string of the record and its only escapes are colours.
/// Then what its patch would land unshown (binary or redacted files), neutralised.
pub(crate) fn report(service: &pitroom_service::Service, record: &RunRecord) {
    print_exact(&pitroom_core::report::render(record, stdout_color()));
    if let Some(note) = service.landing_note(record) {
        say_raw!("{note}");
    }
}

/// Prints a value as pretty JSON on stdout, byte-exact: JSON escapes control characters, and
/// the characters it leaves (DEL, C1) are part of the value a program reads.
pub(crate) fn json(value: &impl serde::Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => print_exact(&format!("{text}\n")),
        Err(e) => error(format!("could not encode JSON: {e}")),
    }
}

/// The one-line live progress display on a terminal's stderr.
pub(crate) struct Progress {
    enabled: bool,
    started: Instant,
    drawn: bool,
}

impl Progress {
    pub(crate) fn new(enabled: bool) -> Progress {
        Progress {
            enabled: enabled && std::io::stderr().is_terminal(),
            started: Instant::now(),
            drawn: false,
        }
    }

    /// Clears the line before the report is printed.
    pub(crate) fn finish(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Observer for Progress {
    fn progress(&mut self, record: &RunRecord) {
        if !self.enabled {
            return;
        }
        let t = &record.tally;
        let width = 100;
        if let Some(until) = record.held_until_short() {
            let line = format!(
                "… held until {until}: every target is cooling down after a rate limit (--no-hold starts at once)"
            );
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K{line}");
            let _ = err.flush();
            self.drawn = true;
            return;
        }
        let mut line = format!(
            "… {} · {}s · {} steps · {} tools · {} tokens",
            record.backend(),
            self.started.elapsed().as_secs(),
            t.steps,
            t.tool_calls,
            human_count(t.usage.total())
        );
        if let Some(last) = &record.last_step {
            line.push_str(" · ");
            line.push_str(last);
        }
        // `last` is the worker's latest tool call, in its words.
        let line: String = neutralise(&line).chars().take(width).collect();
        let mut err = std::io::stderr();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }
}

/// What to do next, after an error.
pub(crate) fn hint(message: impl std::fmt::Display) {
    print_err(format_args!("pitroom: hint: {message}"));
}
