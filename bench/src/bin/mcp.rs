//! `cargo run --release -p pitroom-bench --bin mcp`: the budgets of `pitroom mcp` (issue 12),
//! each beside its baseline in the same run: `initialize` answered after start (vs
//! `pitroom --version`), the server's resident memory idle after the handshake, and a
//! `pitroom_run` of an instant worker over MCP vs the same run by `pitroom run`. Medians of 9
//! rounds; prints, asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const ROUNDS: usize = 9;

fn main() {
    let (pitroom, worker) = pitroom_bench::release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    make_repo(&repo);
    let env = Env {
        state: tmp.path().join("state"),
        worker,
        config: tmp.path().join("config.toml"),
    };

    let version = median(|| {
        let t = Instant::now();
        let ok = Command::new(&pitroom)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "pitroom --version failed");
        t.elapsed()
    });
    let initialize = median(|| {
        let t = Instant::now();
        let mut server = Server::start(&pitroom, &repo, &env);
        server.initialize();
        let elapsed = t.elapsed();
        server.stop();
        elapsed
    });
    let mut server = Server::start(&pitroom, &repo, &env);
    server.initialize();
    server.request("tools/list", json!({}));
    let idle_kib = rss_kib(server.child.id());

    let cli = median(|| {
        let t = Instant::now();
        let ok = env
            .apply(Command::new(&pitroom).args([
                "run",
                "--json",
                "-m",
                "fake/instant",
                "bench task",
            ]))
            .current_dir(&repo)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "pitroom run failed");
        t.elapsed()
    });
    let mcp = median(|| {
        let t = Instant::now();
        let answer = server.request(
            "tools/call",
            json!({"name": "pitroom_run", "arguments": {"task": "bench task", "model": "fake/instant", "dir": repo}}),
        );
        let elapsed = t.elapsed();
        assert_eq!(
            answer["result"]["structuredContent"]["runs"][0]["state"], "done",
            "{answer}"
        );
        elapsed
    });
    server.stop();

    println!("pitroom mcp budgets (medians of {ROUNDS}; release build)");
    println!("| What | Measured | Baseline | Budget |");
    println!("|---|---|---|---|");
    println!(
        "| `initialize` answered after start | {:.1} ms | `pitroom --version`: {:.1} ms | ≤ 20 ms |",
        ms(initialize),
        ms(version)
    );
    println!(
        "| resident memory, idle after the handshake | {:.1} MiB | | ≤ 10 MiB |",
        idle_kib as f64 / 1024.0
    );
    println!(
        "| `pitroom_run` of an instant worker | {:.1} ms | `pitroom run`: {:.1} ms (+{:.1} ms) | ≤ CLI + 10 ms |",
        ms(mcp),
        ms(cli),
        ms(mcp) - ms(cli)
    );
}

struct Env {
    state: PathBuf,
    worker: PathBuf,
    config: PathBuf,
}

impl Env {
    fn apply<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        let script =
            json!([{"text": "SUMMARY: nothing to do"}, {"step": {"input": 10, "output": 1}}]);
        cmd.env("PITROOM_HOME", &self.state)
            .env("PITROOM_CONFIG", &self.config)
            .env("PITROOM_OPENCODE_BIN", &self.worker)
            .env("PITROOM_FAKE_SCRIPT", script.to_string())
            .env("NO_COLOR", "1")
    }
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(pitroom: &Path, dir: &Path, env: &Env) -> Server {
        let mut child = env
            .apply(Command::new(pitroom).arg("mcp"))
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("pitroom mcp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Server {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and reads until its response (notifications in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "the server closed its output");
            let value: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if value["id"] == id {
                return value;
            }
        }
    }

    fn initialize(&mut self) {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        assert!(
            answer["result"]["serverInfo"]["name"] == "pitroom",
            "{answer}"
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn stop(mut self) {
        drop(self.stdin);
        // Closing stdin ends the server; a bounded wait, then a kill.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn make_repo(dir: &Path) {
    std::fs::create_dir_all(dir).expect("repo dir");
    std::fs::write(dir.join("calc.py"), "def add(a, b):\n    return a + b\n").expect("file");
    for args in [
        vec!["init", "-q"],
        vec!["add", "-A"],
        vec![
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
            "commit",
            "-qm",
            "one",
        ],
    ] {
        let ok = Command::new("git")
            .args(&args)
            .current_dir(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?} failed");
    }
}

fn median(f: impl FnMut() -> Duration) -> Duration {
    pitroom_bench::median(ROUNDS, f)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
