//! `pitroom-fake-gemini --script FILE [--port-file FILE]`
//!
//! Runs the scripted fake Gemini API ([`pitroom_testkit::fake_gemini::FakeGemini`]) as its own
//! process, for manual runs of Gemini CLI: listens on 127.0.0.1 with an OS-chosen port, writes
//! the port to `--port-file` (if given), prints `LISTENING <port>` and serves until killed.
//! Point the CLI at it with `GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<port>`.

use pitroom_testkit::fake_gemini::FakeGemini;
use std::process::ExitCode;

const USAGE: &str = "usage: pitroom-fake-gemini --script FILE [--port-file FILE]";

fn main() -> ExitCode {
    match run() {
        Ok(never) => match never {},
        Err(message) => {
            eprintln!("pitroom-fake-gemini: {message}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<std::convert::Infallible, String> {
    let mut script = None;
    let mut port_file = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--script" => script = args.next(),
            "--port-file" => port_file = args.next(),
            "-h" | "--help" => return Err("help".into()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let path = script.ok_or("--script is required")?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let script = serde_json::from_str(&text).map_err(|e| format!("{path} is not JSON: {e}"))?;
    let server = FakeGemini::start(script).map_err(|e| format!("cannot listen: {e}"))?;
    if let Some(file) = port_file {
        let temp = format!("{file}.tmp{}", std::process::id());
        std::fs::write(&temp, server.port().to_string())
            .and_then(|()| std::fs::rename(&temp, &file))
            .map_err(|e| format!("cannot write {file}: {e}"))?;
    }
    println!("LISTENING {}", server.port());
    loop {
        std::thread::park();
    }
}
