//! Diagnostics: what a best-effort step could not do (a cleanup, a credential link, a cooldown
//! note, a ledger row), written through `tracing` so that no such failure is silent.
//!
//! Where the lines go ([`init`], called once by the binary): every event at the level
//! `PITROOM_LOG` asks for (`info` by default; `debug`, `pitroom_core=debug,warn`, …) into the
//! current run's own log, `pitroom.log` in its run directory, once [`attach_run`] named it —
//! a background supervisor has no terminal, so that file is where its problems are told; and
//! warnings and errors also to stderr, one line each, in the printer's words (`warning: …`).
//! Steps whose failure loses data do not end here: they fail the run (see `home::storage_problem`).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The variable that sets what the run log keeps (a `tracing` target list: `debug`,
/// `pitroom_core=debug,info`).
pub const LOG_ENV: &str = pitroom_env::PITROOM_LOG;
/// The run's own log, in its run directory.
pub const RUN_LOG: &str = "pitroom.log";

/// The run log of this process, once a run is attached: its path, and the file once a line
/// was written (opened at the first line, so a run with nothing to tell has no log file).
static RUN_FILE: Mutex<Option<RunLog>> = Mutex::new(None);

struct RunLog {
    path: PathBuf,
    file: Option<File>,
}

impl RunLog {
    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            let opened = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            self.file = Some(opened);
        }
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("no run log"))
    }
}

/// Installs the process's subscriber (see the module doc). A `PITROOM_LOG` that does not parse
/// falls back to `info` and says so. A second call does nothing.
pub fn init() {
    let (targets, bad) = match std::env::var(LOG_ENV) {
        Ok(text) => match text.parse::<Targets>() {
            Ok(targets) => (targets, None),
            Err(e) => (Targets::new().with_default(Level::INFO), Some((text, e))),
        },
        Err(_) => (Targets::new().with_default(Level::INFO), None),
    };
    let run_log = tracing_subscriber::fmt::layer()
        .with_writer(|| RunLogWriter)
        .with_ansi(false)
        .with_filter(targets);
    let stderr = StderrLayer.with_filter(LevelFilter::WARN);
    // Fails only when a subscriber is already set (a test harness, a second call): keep it.
    if tracing_subscriber::registry()
        .with(run_log)
        .with(stderr)
        .try_init()
        .is_ok()
    {
        if let Some((text, e)) = bad {
            tracing::warn!(
                "{LOG_ENV}={text:?} is not a level or target list ({e}); logging at info"
            );
        }
    }
}

/// From now on, this process's log lines also go to `run_dir/pitroom.log` (appended: a run
/// prepared in one process and carried out in another keeps both parts).
pub fn attach_run(run_dir: &Path) {
    if let Ok(mut current) = RUN_FILE.lock() {
        *current = Some(RunLog {
            path: run_dir.join(RUN_LOG),
            file: None,
        });
    }
}

/// `result`, with "it is not there" counted as done: removing what is already gone is no
/// failure worth a line.
pub fn unless_gone(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Removes a directory the run no longer needs; a failure is logged (it leaves disk space
/// taken, nothing else), an absent directory is fine.
pub fn remove_dir(path: &Path, what: &str) {
    if let Err(e) = unless_gone(std::fs::remove_dir_all(path)) {
        tracing::info!("could not remove {what} {}: {e}", path.display());
    }
}

/// Removes a file the run no longer needs, like [`remove_dir`].
pub fn remove_file(path: &Path, what: &str) {
    if let Err(e) = unless_gone(std::fs::remove_file(path)) {
        tracing::info!("could not remove {what} {}: {e}", path.display());
    }
}

/// Writes log lines into the attached run log, or nowhere before one is attached.
struct RunLogWriter;

impl Write for RunLogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match RUN_FILE.lock() {
            Ok(mut log) => match log.as_mut() {
                // A run log that cannot be opened loses its lines; stderr still has the warnings.
                Some(log) => log.file().and_then(|f| f.write(buf)),
                None => Ok(buf.len()),
            },
            // A thread panicked while writing a log line: the log is lost, the run is not.
            Err(_) => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match RUN_FILE.lock() {
            Ok(mut log) => match log.as_mut().and_then(|l| l.file.as_mut()) {
                Some(f) => f.flush(),
                None => Ok(()),
            },
            Err(_) => Ok(()),
        }
    }
}

/// Warnings and errors on stderr as the printer words them (`warning: …`, `error: …`).
struct StderrLayer;

impl<S: Subscriber> Layer<S> for StderrLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let line = format!("{}\n", stderr_line(event));
        // stderr gone (the reader closed it): the run log still has the line.
        let _ = io::stderr().lock().write_all(line.as_bytes());
    }
}

/// An event as one stderr line: `warning: ` or `error: `, the message, then its fields.
fn stderr_line(event: &Event<'_>) -> String {
    let mut line = String::from(match *event.metadata().level() {
        Level::ERROR => "error: ",
        _ => "warning: ",
    });
    event.record(&mut MessageText(&mut line));
    line
}

/// Collects an event's message, then its other fields as `name=value`.
struct MessageText<'a>(&'a mut String);

impl Visit for MessageText<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn removing_what_is_already_gone_is_no_failure_but_other_errors_stay() {
        assert!(unless_gone(Err(io::Error::from(io::ErrorKind::NotFound))).is_ok());
        let denied = unless_gone(Err(io::Error::from(io::ErrorKind::PermissionDenied)));
        assert_eq!(
            denied.map_err(|e| e.kind()),
            Err(io::ErrorKind::PermissionDenied)
        );
    }

    /// The stderr layer's lines, kept instead of printed.
    struct Kept(Arc<Mutex<Vec<String>>>);

    impl<S: Subscriber> Layer<S> for Kept {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            self.0.lock().expect("lines").push(stderr_line(event));
        }
    }

    #[test]
    fn stderr_gets_warnings_and_errors_in_the_printers_words_and_nothing_quieter() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry()
            .with(Kept(Arc::clone(&lines)).with_filter(LevelFilter::WARN));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("removed the scratch dir");
            tracing::warn!(path = "/x", "could not link the credentials");
            tracing::error!("the ledger is unreadable");
        });
        assert_eq!(
            *lines.lock().expect("lines"),
            [
                "warning: could not link the credentials path=\"/x\"",
                "error: the ledger is unreadable"
            ]
        );
    }

    #[test]
    fn once_a_run_is_attached_its_log_file_gets_the_lines_at_the_chosen_level() {
        let dir = tempfile::tempdir().expect("temp dir");
        let targets: Targets = "warn,pitroom_core=debug".parse().expect("targets");
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(|| RunLogWriter)
                .with_ansi(false)
                .with_filter(targets),
        );
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("before the run: nowhere");
            attach_run(dir.path());
            tracing::trace!("too quiet");
            // Nothing to tell yet: no file.
            assert!(!dir.path().join(RUN_LOG).exists());
            tracing::debug!("kept at debug");
        });
        let log = std::fs::read_to_string(dir.path().join(RUN_LOG)).expect("the run log");
        assert!(log.contains("kept at debug"), "{log}");
        assert!(!log.contains("before the run"), "{log}");
        assert!(!log.contains("too quiet"), "{log}");
    }
}
