//! The one `main` behind every fake server's launcher binary (`pitroom-fake-openai`,
//! `-responses`, `-anthropic`, `-gemini`): runs a scripted server as its own process, for manual
//! runs of a worker CLI and for recording fixtures.
//!
//! `NAME --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR] [--log FILE]`
//! (`--flag=value` works too). It listens on 127.0.0.1 with an OS-chosen port, writes the port
//! to `--port-file` through a rename (a harness polling it never reads half a number), prints
//! `LISTENING <port>` and serves until killed. `--scenario` and `--workdir` are stored in the
//! script as `default_scenario` and `workdir`; with `--log` the request log is appended to that
//! file as JSON lines.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use crate::fake_anthropic::FakeAnthropic;
use crate::fake_gemini::FakeGemini;
use crate::fake_openai::FakeOpenAi;
use crate::fake_responses::FakeResponses;

/// A scripted fake server a launcher can run.
pub trait Serve: Sized {
    fn start(script: Value) -> io::Result<Self>;
    fn port(&self) -> u16;
    fn requests(&self) -> Vec<Value>;
}

macro_rules! serve_impl {
    ($($server:ty),*) => {$(
        impl Serve for $server {
            fn start(script: Value) -> io::Result<Self> {
                <$server>::start(script)
            }
            fn port(&self) -> u16 {
                <$server>::port(self)
            }
            fn requests(&self) -> Vec<Value> {
                <$server>::requests(self)
            }
        }
    )*};
}
serve_impl!(FakeOpenAi, FakeResponses, FakeAnthropic, FakeGemini);

#[derive(Debug, Default, PartialEq)]
struct Args {
    script: Option<PathBuf>,
    port_file: Option<PathBuf>,
    scenario: Option<String>,
    workdir: Option<String>,
    log: Option<PathBuf>,
}

/// The launcher's `main` for server `S`, named `name` in messages.
pub fn main<S: Serve>(name: &str) -> ExitCode {
    let usage = format!(
        "usage: {name} --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR] [--log FILE]"
    );
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{usage}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{name}: {message}\n{usage}");
            return ExitCode::from(2);
        }
    };
    match serve::<S>(&args) {
        Ok(never) => match never {},
        Err(message) => {
            eprintln!("{name}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Parses `--flag value` and `--flag=value`; `Ok(None)` for `--help`.
fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut args = Args::default();
    while let Some(arg) = argv.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg, None),
        };
        let mut value = || match inline.clone() {
            Some(v) => Ok(v),
            None => argv.next().ok_or_else(|| format!("{flag} needs a value")),
        };
        match flag.as_str() {
            "--script" => args.script = Some(PathBuf::from(value()?)),
            "--port-file" => args.port_file = Some(PathBuf::from(value()?)),
            "--scenario" => args.scenario = Some(value()?),
            "--workdir" => args.workdir = Some(value()?),
            "--log" => args.log = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if args.script.is_none() {
        return Err("--script is required".into());
    }
    Ok(Some(args))
}

fn load_script(args: &Args) -> Result<Value, String> {
    let path = args.script.as_deref().unwrap_or(Path::new(""));
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path:?}: {e}"))?;
    let mut script: Value =
        serde_json::from_str(&text).map_err(|e| format!("{path:?} is not valid JSON: {e}"))?;
    for (key, value) in [
        ("default_scenario", &args.scenario),
        ("workdir", &args.workdir),
    ] {
        if let Some(value) = value {
            script
                .as_object_mut()
                .ok_or_else(|| format!("{path:?} must hold a JSON object"))?
                .insert(key.to_owned(), Value::String(value.clone()));
        }
    }
    Ok(script)
}

/// Starts the server and serves until the process is killed (SIGTERM's default action).
fn serve<S: Serve>(args: &Args) -> Result<std::convert::Infallible, String> {
    let server = S::start(load_script(args)?).map_err(|e| format!("cannot listen: {e}"))?;
    if let Some(port_file) = &args.port_file {
        let mut temp = port_file.as_os_str().to_owned();
        temp.push(format!(".tmp{}", std::process::id()));
        let temp = PathBuf::from(temp);
        std::fs::write(&temp, server.port().to_string())
            .and_then(|()| std::fs::rename(&temp, port_file))
            .map_err(|e| format!("cannot write {port_file:?}: {e}"))?;
    }
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "LISTENING {}", server.port())
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))?;
    drop(stdout);
    let mut written = 0;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        if let Some(log) = &args.log {
            let requests = server.requests();
            let lines: String = requests[written.min(requests.len())..]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<Option<Args>, String> {
        parse_args(words.iter().map(|w| w.to_string()))
    }

    #[test]
    fn flags_take_separate_or_inline_values() {
        let args = parse(&[
            "--script",
            "s.json",
            "--port-file=p",
            "--scenario",
            "x",
            "--log=l",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(args.script, Some(PathBuf::from("s.json")));
        assert_eq!(args.port_file, Some(PathBuf::from("p")));
        assert_eq!(args.scenario.as_deref(), Some("x"));
        assert_eq!(args.log, Some(PathBuf::from("l")));
    }

    #[test]
    fn a_missing_script_an_unknown_flag_or_a_missing_value_is_an_error() {
        assert!(parse(&["--port-file", "p"]).is_err());
        assert!(parse(&["--script", "s", "--colour", "x"]).is_err());
        assert!(parse(&["--script"]).is_err());
        assert_eq!(parse(&["--help"]).unwrap(), None);
    }

    #[test]
    fn scenario_and_workdir_are_stored_in_the_script() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, r#"{"scenarios": {}}"#).unwrap();
        let args = Args {
            script: Some(path),
            scenario: Some("slow".into()),
            workdir: Some("/w".into()),
            ..Args::default()
        };
        let script = load_script(&args).unwrap();
        assert_eq!(script["default_scenario"], "slow");
        assert_eq!(script["workdir"], "/w");
    }
}
