//! All terminal output: colour only on a terminal (and never with NO_COLOR), one clear line per
//! error, the live progress line.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use pitroom_core::report::human_count;
use pitroom_core::{Observer, RunRecord};

pub fn stdout_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Prints a user-facing error: what happened and what to do.
pub fn error(message: impl std::fmt::Display) {
    eprintln!("pitroom: {message}");
}

pub fn warning(message: impl std::fmt::Display) {
    eprintln!("pitroom: warning: {message}");
}

/// Prints a value as pretty JSON on stdout.
pub fn json(value: &impl serde::Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(e) => error(format!("could not encode JSON: {e}")),
    }
}

/// The one-line live progress display on a terminal's stderr.
pub struct Progress {
    enabled: bool,
    started: Instant,
    drawn: bool,
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        Progress {
            enabled: enabled && std::io::stderr().is_terminal(),
            started: Instant::now(),
            drawn: false,
        }
    }

    /// Clears the line before the report is printed.
    pub fn finish(&mut self) {
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
pub fn hint(message: impl std::fmt::Display) {
    eprintln!("pitroom: hint: {message}");
}
