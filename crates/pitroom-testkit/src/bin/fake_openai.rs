//! `pitroom-fake-openai --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR]`
//!
//! Runs the scripted fake OpenAI-compatible server
//! ([`pitroom_testkit::fake_openai::FakeOpenAi`]) as its own process, for
//! manual runs and for harnesses that are not Rust tests. It listens on
//! 127.0.0.1 with an OS-chosen port, writes the port to `--port-file` (if
//! given), prints `LISTENING <port>` on stdout and serves until killed.

use pitroom_testkit::fake_openai::FakeOpenAi;
use serde_json::Value;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{fs, thread};

const USAGE: &str = "usage: pitroom-fake-openai --script FILE [--port-file FILE] \
[--scenario NAME] [--workdir DIR]";

#[derive(Debug, Default)]
struct Args {
    script: Option<PathBuf>,
    port_file: Option<PathBuf>,
    /// Stored as the script's `default_scenario` (the Python's `--scenario`).
    scenario: Option<String>,
    /// Stored as the script's `workdir` (the Python's `--workdir`).
    workdir: Option<String>,
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args_os().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("pitroom-fake-openai: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(&args) {
        Ok(never) => match never {},
        Err(message) => {
            eprintln!("pitroom-fake-openai: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Parses `--flag value` and `--flag=value`; `Ok(None)` for `--help`.
fn parse_args(mut argv: impl Iterator<Item = OsString>) -> Result<Option<Args>, String> {
    let mut args = Args::default();
    while let Some(arg) = argv.next() {
        let arg = arg
            .into_string()
            .map_err(|arg| format!("argument is not UTF-8: {arg:?}"))?;
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg, None),
        };
        let mut value = || -> Result<String, String> {
            match inline.clone() {
                Some(value) => Ok(value),
                None => argv
                    .next()
                    .and_then(|v| v.into_string().ok())
                    .ok_or_else(|| format!("{flag} needs a value")),
            }
        };
        match flag.as_str() {
            "--script" => args.script = Some(PathBuf::from(value()?)),
            "--port-file" => args.port_file = Some(PathBuf::from(value()?)),
            "--scenario" => args.scenario = Some(value()?),
            "--workdir" => args.workdir = Some(value()?),
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
    let script = load_script(args)?;
    let server = FakeOpenAi::start(script).map_err(|e| format!("cannot listen: {e}"))?;
    if let Some(path) = &args.port_file {
        write_port_file(path, server.port())?;
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "LISTENING {}", server.port())
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))?;
    drop(stdout);
    loop {
        // The server threads do the work; SIGTERM's default action ends us.
        thread::park();
    }
}

fn load_script(args: &Args) -> Result<Value, String> {
    let path = args.script.as_deref().unwrap_or(Path::new(""));
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read {path:?}: {e}"))?;
    let mut script: Value =
        serde_json::from_str(&text).map_err(|e| format!("{path:?} is not valid JSON: {e}"))?;
    let overrides = [
        ("default_scenario", &args.scenario),
        ("workdir", &args.workdir),
    ];
    for (key, value) in overrides {
        if let Some(value) = value {
            let map = script
                .as_object_mut()
                .ok_or_else(|| format!("{path:?} must hold a JSON object"))?;
            map.insert(key.to_owned(), Value::String(value.clone()));
        }
    }
    Ok(script)
}

/// Writes the port through a rename, so a harness polling the file never
/// reads it half-written.
fn write_port_file(path: &Path, port: u16) -> Result<(), String> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp{}", std::process::id()));
    let temp = PathBuf::from(temp);
    fs::write(&temp, port.to_string())
        .and_then(|()| fs::rename(&temp, path))
        .map_err(|e| format!("cannot write port file {path:?}: {e}"))
}
