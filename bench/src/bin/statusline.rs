//! `cargo run --release -p pitroom-bench --bin statusline [-- RUNS]`: `pitroom statusline` as a
//! host calls it (status JSON on stdin), on a state dir with a long history (2,000 finished runs
//! by default, a few of them real, the rest copies) and two workers running, against
//! `git --version` (a process that does almost nothing) as the baseline in the same run.
//!
//! Prints the median of 51 warm calls (the host's steady state), the first (cold) call, and
//! the call right after a run ended (the saving is recomputed then). Asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const ROUNDS: usize = 51;

/// What Claude Code sends on stdin (docs: statusline), trimmed.
const STATUS_JSON: &str = r#"{"cwd":"/tmp","session_id":"abc123","model":{"id":"claude-opus-5","display_name":"Opus"},"workspace":{"current_dir":"/tmp","project_dir":"/tmp"},"version":"2.1.90","cost":{"total_cost_usd":0.01234,"total_duration_ms":45000}}"#;

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000);
    let (pitroom, worker) = pitroom_bench::release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let b = Bench {
        pitroom,
        worker,
        repo: tmp.path().join("repo"),
        state: tmp.path().join("state"),
    };
    b.make_repo();
    let real = 10.min(runs);
    for i in 0..real {
        b.finished_run(i);
    }
    b.copy_runs(runs - real);
    // The first call reads every record once and imports the copies into the history.
    let cold = b.statusline_once();
    b.start_running(2);

    let mut line = String::new();
    let warm = median(|| {
        let (took, out) = b.statusline();
        line = out;
        took
    });
    let git = median(|| {
        let t = Instant::now();
        let ok = Command::new("git")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git --version failed");
        t.elapsed()
    });
    b.stop_one();
    let after_end = b.statusline_once();
    b.stop_all();

    println!("pitroom statusline, {runs} runs in the history, 2 workers running");
    println!("  line: {}", line.trim_end());
    println!(
        "  git --version (baseline)          {:7.2} ms   1.00×",
        ms(git)
    );
    println!(
        "  statusline, warm (median of {ROUNDS})     {:7.2} ms   {:.2}×   target ≤ 5 ms",
        ms(warm),
        warm.as_secs_f64() / git.as_secs_f64()
    );
    println!("  statusline, first call (cold)     {:7.2} ms", ms(cold));
    println!(
        "  statusline, just after a run ended {:6.2} ms",
        ms(after_end)
    );
}

struct Bench {
    pitroom: PathBuf,
    worker: PathBuf,
    repo: PathBuf,
    state: PathBuf,
}

impl Bench {
    fn cmd(&self, script: &Value) -> Command {
        let mut c = Command::new(&self.pitroom);
        c.current_dir(&self.repo)
            .env("PITROOM_HOME", &self.state)
            .env("PITROOM_OPENCODE_BIN", &self.worker)
            .env("PITROOM_FAKE_SCRIPT", script.to_string())
            .env_remove("PITROOM_ACTIVE")
            .stdin(Stdio::null());
        c
    }

    fn make_repo(&self) {
        std::fs::create_dir_all(&self.repo).expect("repo dir");
        std::fs::write(
            self.repo.join("calc.py"),
            "def divide(a, b):\n    return a / b\n",
        )
        .expect("file");
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "commit",
                "-qm",
                "init",
            ],
        ] {
            let ok = Command::new("git")
                .args(args)
                .current_dir(&self.repo)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "git {args:?}");
        }
    }

    /// One real read run that used enough tokens to show a saving.
    fn finished_run(&self, i: usize) {
        let script = json!([
            {"text": "SUMMARY: divide() has no zero check: calc.py:2"},
            {"step": {"input": 200_000, "output": 500, "cost": 0.001, "reason": "stop"}}
        ]);
        let out = self
            .cmd(&script)
            .arg(format!("question {i}"))
            .output()
            .expect("run");
        assert!(out.status.success(), "run {i} failed");
    }

    /// Copies of the newest real record under older ids: a long history, cheaply.
    fn copy_runs(&self, n: usize) {
        let runs = self.state.join("runs");
        let newest = std::fs::read_dir(&runs)
            .expect("runs")
            .flatten()
            .map(|e| e.path())
            .max()
            .expect("a real run");
        let record: Value =
            serde_json::from_slice(&std::fs::read(newest.join("record.json")).expect("record"))
                .expect("record json");
        let base = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24 * 6);
        for k in 0..n {
            let t = base + jiff::SignedDuration::from_secs(k as i64);
            let id = format!("{}-000b", t.strftime("%Y%m%d-%H%M%S"));
            let dir = runs.join(&id);
            std::fs::create_dir_all(&dir).expect("run dir");
            let mut copy = record.clone();
            copy["id"] = json!(id);
            std::fs::write(dir.join("record.json"), copy.to_string()).expect("record copy");
        }
    }

    fn start_running(&self, n: usize) {
        let script = json!([{"sleep_ms": 600_000}]);
        let tasks: Vec<String> = (0..n).map(|i| format!("slow {i}")).collect();
        let out = self
            .cmd(&script)
            .args(["crew", "-g", "bench"])
            .args(&tasks)
            .output()
            .expect("crew");
        assert!(out.status.success(), "crew failed");
        // The runs count as running once their supervisors have claimed them.
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && !self.statusline().1.contains(&format!("{n} running")) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop_one(&self) {
        let ids = std::fs::read_to_string(self.state.join("groups/bench")).unwrap_or_default();
        if let Some(id) = ids.lines().next() {
            let _ = self.cmd(&json!([])).args(["stop", id]).output();
        }
    }

    fn stop_all(&self) {
        let _ = self.cmd(&json!([])).args(["stop", "-g", "bench"]).output();
    }

    /// One call as a host makes it: status JSON on stdin, one line on stdout.
    fn statusline(&self) -> (Duration, String) {
        let t = Instant::now();
        let mut child = Command::new(&self.pitroom)
            .arg("statusline")
            .env("PITROOM_HOME", &self.state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("statusline");
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(STATUS_JSON.as_bytes());
        }
        let out = child.wait_with_output().expect("statusline output");
        (
            t.elapsed(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    fn statusline_once(&self) -> Duration {
        self.statusline().0
    }
}

fn median(f: impl FnMut() -> Duration) -> Duration {
    pitroom_bench::median(ROUNDS, f)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
