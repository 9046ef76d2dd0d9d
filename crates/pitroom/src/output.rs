//! All terminal output: colour only on a terminal (and never with NO_COLOR), one clear line per
//! error, the live progress line. This module owns stdout and stderr: commands print through
//! [`say!`] (results, on stdout), [`tell!`] (notes for the person, on stderr), [`error`] and
//! [`warning`]; a command's failure reaches [`error`] and [`hint`] only through
//! `CliError::report`. The crate denies `print_stdout`/`print_stderr` everywhere else.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use pitroom_core::report::human_count;
use pitroom_core::{Observer, RunRecord};

/// Writes `text` to stdout as is: the one place results reach stdout. A reader that went away
/// (`pitroom history | head`) is no error to report: there is no one left to read it, and the
/// command ends as it would have.
pub(crate) fn print_out(text: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(text).and_then(|()| out.flush());
    if let Err(e) = written {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            print_err(format_args!("pitroom: could not write to stdout: {e}"));
        }
    }
}

/// Writes one line to stderr: the one place notes for the person reach stderr. When stderr
/// itself is gone there is nowhere left to say so.
pub(crate) fn print_err(text: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
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

/// Prints a value as pretty JSON on stdout.
pub(crate) fn json(value: &impl serde::Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => say!("{text}"),
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
        let mut line = format!(
            "… {} · {}s · {} steps · {} tools · {} tokens",
            record.spec.backend,
            self.started.elapsed().as_secs(),
            t.steps,
            t.tool_calls,
            human_count(t.usage.total())
        );
        if let Some(last) = &record.last {
            line.push_str(" · ");
            line.push_str(last);
        }
        let line: String = line.chars().take(width).collect();
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
