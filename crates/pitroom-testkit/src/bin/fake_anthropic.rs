//! `pitroom-fake-anthropic --script FILE [--port-file FILE] [--scenario NAME] [--log FILE]`
//!
//! Runs the scripted fake Anthropic Messages API server (what Claude Code talks to)
//! ([`pitroom_testkit::fake_anthropic::FakeAnthropic`]) as its own process, for manual runs and for
//! recording fixtures. It listens on 127.0.0.1 with an OS-chosen port, writes the port to
//! `--port-file` (through a rename), prints `LISTENING <port>` and serves until killed. With
//! `--log` the request log is kept in that file as JSON lines.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use pitroom_testkit::fake_anthropic::FakeAnthropic;
use serde_json::Value;

const NAME: &str = "pitroom-fake-anthropic";
const USAGE: &str =
    "usage: pitroom-fake-anthropic --script FILE [--port-file FILE] [--scenario NAME] [--log FILE]";

#[derive(Default)]
struct Args {
    script: Option<PathBuf>,
    port_file: Option<PathBuf>,
    scenario: Option<String>,
    log: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{NAME}: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(&args) {
        Ok(never) => match never {},
        Err(message) => {
            eprintln!("{NAME}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Parses `--flag value`; `Ok(None)` for `--help`.
fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut args = Args::default();
    while let Some(flag) = argv.next() {
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let mut value = || argv.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--script" => args.script = Some(PathBuf::from(value()?)),
            "--port-file" => args.port_file = Some(PathBuf::from(value()?)),
            "--scenario" => args.scenario = Some(value()?),
            "--log" => args.log = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if args.script.is_none() {
        return Err("--script is required".into());
    }
    Ok(Some(args))
}

/// Starts the server and serves until the process is killed.
fn serve(args: &Args) -> Result<std::convert::Infallible, String> {
    let path = args.script.as_deref().unwrap_or(Path::new(""));
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path:?}: {e}"))?;
    let mut script: Value =
        serde_json::from_str(&text).map_err(|e| format!("{path:?} is not valid JSON: {e}"))?;
    if let (Some(scenario), Some(map)) = (&args.scenario, script.as_object_mut()) {
        map.insert("default_scenario".into(), scenario.clone().into());
    }
    let server = FakeAnthropic::start(script).map_err(|e| format!("cannot listen: {e}"))?;
    if let Some(port_file) = &args.port_file {
        let temp = port_file.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temp, server.port().to_string())
            .and_then(|()| std::fs::rename(&temp, port_file))
            .map_err(|e| format!("cannot write {port_file:?}: {e}"))?;
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "LISTENING {}", server.port())
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))?;
    drop(stdout);
    let mut written = 0;
    loop {
        // The server threads do the work; SIGTERM's default action ends us.
        std::thread::sleep(Duration::from_millis(200));
        if let Some(log) = &args.log {
            let requests = server.requests();
            let lines: String = requests[written..]
                .iter()
                .map(|r| format!("{r}\n"))
                .collect();
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .and_then(|mut f| f.write_all(lines.as_bytes()));
            if appended.is_ok() {
                written = requests.len();
            }
        }
    }
}
