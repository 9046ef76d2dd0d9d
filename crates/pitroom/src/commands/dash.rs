//! `pitroom dash`: the local dashboard (`pitroom-dash`). Starts a server on 127.0.0.1 (in the
//! foreground, or detached with `--detach`), reuses one that already runs, or stops it.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pitroom_core::exit::Exit;
use pitroom_core::Home;
use pitroom_dash::{registry, Dash, DashError, Options, DEFAULT_PORT, DETACHED_IDLE};
use serde_json::json;

use super::Outcome;
use crate::cli::DashArgs;
use crate::error::CliError;
use crate::output;
use crate::output::say;

/// How long `--detach` waits for the new server to answer.
const DETACH_WAIT: Duration = Duration::from_secs(20);
/// How long `--stop` waits for the server to exit.
const STOP_WAIT: Duration = Duration::from_secs(10);

pub(super) fn dash(args: DashArgs) -> Outcome {
    let home = super::home();
    if args.stop {
        return stop(&home, args.json);
    }
    if args.serve_detached {
        return serve(&args, true);
    }
    if let Some(entry) = registry::running(&home) {
        if registry::answers(entry.port) {
            announce(&args, &entry.url(), entry.pid, true);
            return Ok(Exit::Ok);
        }
    }
    if args.detach {
        return detach(&home, &args);
    }
    serve(&args, false)
}

fn announce(args: &DashArgs, url: &str, pid: u32, reused: bool) {
    if args.json {
        output::json(&json!({ "url": url, "pid": pid, "reused": reused }));
    } else if reused {
        say!("pitroom dash: already running at {url} (pid {pid}; `pitroom dash --stop` ends it)");
    } else {
        say!("pitroom dash: {url}");
    }
    if args.open {
        open(url);
    }
}

fn service() -> Result<pitroom_service::Service, DashError> {
    pitroom_service::Service::from_process().map_err(|e| DashError::Setup(e.message))
}

/// Binds the port asked for; without one, 7878 or else any free port.
fn bind(args: &DashArgs, detached: bool) -> Result<Dash, DashError> {
    let idle_stop = detached.then(|| {
        args.idle_stop
            .map(Duration::from_secs)
            .unwrap_or(DETACHED_IDLE)
    });
    let options = |port| Options {
        port,
        detached,
        idle_stop,
        registry: true,
    };
    match args.port {
        Some(port) => Dash::bind(service()?, options(port)),
        None => match Dash::bind(service()?, options(DEFAULT_PORT)) {
            Err(DashError::PortInUse { .. }) => Dash::bind(service()?, options(0)),
            other => other,
        },
    }
}

/// A dashboard that cannot start or serve is a refusal.
fn refused(e: DashError) -> CliError {
    CliError::refused(e.to_string())
}

fn serve(args: &DashArgs, detached: bool) -> Outcome {
    let dash = bind(args, detached).map_err(refused)?;
    if detached {
        say!("serving {} (pid {})", dash.url(), std::process::id());
    } else {
        announce(args, &dash.url(), std::process::id(), false);
        if !args.json {
            output::hint("Ctrl-C stops it; `pitroom dash --detach` runs it in the background");
        }
    }
    let _ = std::io::stdout().flush();
    dash.serve().map_err(refused)?;
    Ok(Exit::Ok)
}

/// Starts `pitroom dash --serve-detached` in its own session, logging to `dash.log`, and
/// returns once it answers.
fn detach(home: &Home, args: &DashArgs) -> Outcome {
    let exe = std::env::current_exe().map_err(|e| {
        CliError::refused(format!("cannot find the pitroom executable itself: {e}"))
    })?;
    let log_path = home.root.join("dash.log");
    let log = std::fs::create_dir_all(&home.root).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
    });
    let log = log.map_err(|e| {
        CliError::refused(format!(
            "cannot write {}: {e}; check that the state directory is writable",
            log_path.display()
        ))
    })?;
    let mut cmd = Command::new(exe);
    cmd.args(["dash", "--serve-detached"]);
    if let Some(port) = args.port {
        cmd.arg("--port").arg(port.to_string());
    }
    if let Some(secs) = args.idle_stop {
        cmd.arg("--idle-stop").arg(secs.to_string());
    }
    let (out, err) = match (log.try_clone(), log.try_clone()) {
        (Ok(a), Ok(b)) => (Stdio::from(a), Stdio::from(b)),
        _ => (Stdio::null(), Stdio::null()),
    };
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: setsid is async-signal-safe; it detaches the server from the terminal's session
    // so closing the terminal does not end it.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| CliError::refused(format!("cannot start the dashboard server: {e}")))?;
    let deadline = Instant::now() + DETACH_WAIT;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(CliError::refused(format!(
                "the dashboard server exited at start ({status}): {}",
                log_tail(&log_path)
            )));
        }
        if let Some(entry) = registry::running(home).filter(|e| e.pid == child.id()) {
            if registry::answers(entry.port) {
                announce(args, &entry.url(), entry.pid, false);
                return Ok(Exit::Ok);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(CliError::refused(format!(
        "the dashboard server (pid {}) did not answer within {}s; see {}",
        child.id(),
        DETACH_WAIT.as_secs(),
        log_path.display()
    )))
}

/// The last lines of the server's log, for an error message.
fn log_tail(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    let tail: Vec<&str> = lines.into_iter().rev().collect();
    if tail.is_empty() {
        format!("no output (see {})", path.display())
    } else {
        tail.join(" / ")
    }
}

fn stop(home: &Home, json_out: bool) -> Outcome {
    let Some(entry) = registry::running(home) else {
        if json_out {
            output::json(&json!({ "stopped": false, "running": false }));
        } else {
            say!("pitroom dash: no dashboard server is running for this state directory");
        }
        return Ok(Exit::Ok);
    };
    pitroom_proc::terminate_exact(entry.pid as i32, entry.pid_start);
    let deadline = Instant::now() + STOP_WAIT;
    while entry.is_alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if entry.is_alive() {
        return Err(CliError::refused(format!(
            "the dashboard server (pid {}) did not stop within {}s; end it with: kill {}",
            entry.pid,
            STOP_WAIT.as_secs(),
            entry.pid
        )));
    }
    // Normally the server removed it itself; a killed one could not.
    let _ = registry::running(home);
    if json_out {
        output::json(&json!({ "stopped": true, "pid": entry.pid, "url": entry.url() }));
    } else {
        say!(
            "pitroom dash: stopped the server at {} (pid {})",
            entry.url(),
            entry.pid
        );
    }
    Ok(Exit::Ok)
}

/// Opens `url` with the system's opener; a failure is only a warning (the address is printed).
fn open(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let started = Command::new(opener)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    if let Err(e) = started {
        output::warning(format!(
            "could not start {opener} ({e}); open {url} in a browser yourself"
        ));
    }
}
