//! `cargo run --release -p pitroom-bench --bin crew`: crews and the scheduler (issue 6).
//!
//! - 30 fake workers that each take 2 s, started as one crew, against the same 30 sleeps
//!   started directly (the baseline, in the same run): wall time and Pitroom's own memory per
//!   supervised run.
//! - The wake-up latency from a freed slot to the next queued run's start (`max_parallel=1`).
//! - The `watch --json` latency from a worker's tool call to its NDJSON line.
//!
//! Prints figures; asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

fn main() {
    let (pitroom, worker) = pitroom_bench::release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let bench = Bench {
        pitroom,
        worker,
        root: tmp.path().to_path_buf(),
    };
    thirty_workers(&bench);
    wake_latency(&bench);
    watch_latency(&bench);
}

struct Bench {
    pitroom: PathBuf,
    worker: PathBuf,
    root: PathBuf,
}

impl Bench {
    /// A `pitroom` command with its own state dir and the fake worker running `script`.
    fn cmd(&self, state: &str, script: &Value, parallel: usize) -> Command {
        let dir = self.root.join("work");
        std::fs::create_dir_all(&dir).expect("work dir");
        let mut c = Command::new(&self.pitroom);
        c.current_dir(&dir)
            .env("PITROOM_HOME", self.root.join(state))
            .env("PITROOM_OPENCODE_BIN", &self.worker)
            .env("PITROOM_FAKE_SCRIPT", script.to_string())
            .env("PITROOM_MAX_PARALLEL", parallel.to_string())
            // The watch benchmark's worker stamps the time into a file beside the state dirs.
            .env("PITROOM_SANDBOX_WRITABLE", &self.root)
            .env_remove("PITROOM_ACTIVE")
            .stdin(Stdio::null());
        c
    }

    fn crew(&self, state: &str, script: &Value, parallel: usize, runs: usize) -> Vec<String> {
        let tasks: Vec<String> = (0..runs).map(|i| format!("task {i}")).collect();
        let out = self
            .cmd(state, script, parallel)
            .args(["crew", "-g", "bench"])
            .args(&tasks)
            .stderr(Stdio::null())
            .output()
            .expect("crew");
        assert!(out.status.success(), "crew failed");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn wait(&self, state: &str) {
        let status = self
            .cmd(state, &json!([]), 30)
            .args(["wait", "-g", "bench", "--brief", "--timeout", "300"])
            .stdout(Stdio::null())
            .status()
            .expect("wait");
        assert!(status.success(), "wait failed");
    }

    fn records(&self, state: &str, ids: &[String]) -> Vec<Value> {
        ids.iter()
            .map(|id| {
                let text = std::fs::read_to_string(
                    self.root
                        .join(state)
                        .join("runs")
                        .join(id)
                        .join("record.json"),
                )
                .expect("record");
                serde_json::from_str(&text).expect("record json")
            })
            .collect()
    }
}

fn thirty_workers(b: &Bench) {
    let script = json!([{"sleep_ms": 2000}, {"text": "SUMMARY: slept"}, {"step": {"input": 10, "output": 1, "reason": "stop"}}]);
    // Baseline: the same 30 two-second sleeps, started directly in parallel.
    let t = Instant::now();
    let mut children: Vec<_> = (0..30)
        .map(|_| Command::new("sleep").arg("2").spawn().expect("sleep"))
        .collect();
    for c in &mut children {
        let _ = c.wait();
    }
    let baseline = t.elapsed();

    let t = Instant::now();
    let ids = b.crew("thirty", &script, 30, 30);
    b.wait("thirty");
    let wall = t.elapsed();
    let records = b.records("thirty", &ids);
    let mut peaks: Vec<u64> = records
        .iter()
        .filter_map(|r| r["supervisor_peak_kb"].as_u64())
        .collect();
    peaks.sort_unstable();
    let done = records.iter().filter(|r| r["state"] == "done").count();
    println!("30 workers × 2 s, max_parallel 30 ({done}/30 done)");
    println!(
        "  30 direct `sleep 2` in parallel     {:8.0} ms   1.00×",
        ms(baseline)
    );
    println!(
        "  pitroom crew → wait -g, wall time   {:8.0} ms   {:.2}×",
        ms(wall),
        wall.as_secs_f64() / baseline.as_secs_f64()
    );
    if let (Some(median), Some(max)) = (peaks.get(peaks.len() / 2), peaks.last()) {
        println!(
            "  supervisor peak RSS per run         {:8.1} MiB median, {:.1} MiB max",
            *median as f64 / 1024.0,
            *max as f64 / 1024.0
        );
    }
}

fn wake_latency(b: &Bench) {
    let script = json!([{"sleep_ms": 300}, {"text": "SUMMARY: ok"}, {"step": {"input": 10, "output": 1, "reason": "stop"}}]);
    let ids = b.crew("wake", &script, 1, 10);
    b.wait("wake");
    let records = b.records("wake", &ids);
    let spans: Vec<(f64, f64)> = records
        .iter()
        .map(|r| {
            let start = seconds(&r["started_at"]);
            let worked = r["duration_ms"].as_f64().unwrap_or(0.0) / 1000.0;
            (start, start + worked)
        })
        .collect();
    let mut gaps: Vec<f64> = spans
        .windows(2)
        .map(|w| (w[1].0 - w[0].1) * 1000.0)
        .collect();
    gaps.sort_by(f64::total_cmp);
    println!("wake-up, freed slot → next queued run started (max_parallel 1, 9 hand-overs)");
    println!(
        "  median {:.1} ms, max {:.1} ms",
        gaps[gaps.len() / 2],
        gaps.last().copied().unwrap_or(0.0)
    );
}

fn watch_latency(b: &Bench) {
    let stamps = b.root.join("stamps.txt");
    let mut script = Vec::new();
    for _ in 0..10 {
        script.push(json!({"sleep_ms": 200}));
        // The shell records the moment, then the fake worker reports the call as a bash tool.
        script.push(json!({"sh": format!("date +%s%N >> {}", stamps.display())}));
    }
    script.push(json!({"text": "SUMMARY: ok"}));
    script.push(json!({"step": {"input": 10, "output": 1, "reason": "stop"}}));
    let script = Value::Array(script);
    let _ = b.crew("watch", &script, 30, 1);
    let mut watch = b
        .cmd("watch", &script, 30)
        .args(["watch", "-g", "bench", "--json", "--timeout", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("watch");
    let stdout = watch.stdout.take().expect("stdout");
    let mut arrivals = Vec::new();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        // The first line that shows each new tool call (a later step repeats the count).
        let tools = v["tools"].as_u64().unwrap_or(0);
        if v["event"] == "progress" && !arrivals.iter().any(|(t, _)| *t == tools) {
            arrivals.push((tools, at));
        }
    }
    let _ = watch.wait();
    let sent: Vec<u128> = std::fs::read_to_string(&stamps)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let mut latencies: Vec<f64> = arrivals
        .iter()
        .filter_map(|(tools, at)| {
            let stamp = sent.get((*tools as usize).checked_sub(1)?)?;
            Some((*at as f64 - *stamp as f64) / 1e6)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    println!(
        "watch --json, worker's tool call → its progress line ({} of 10 calls seen)",
        latencies.len()
    );
    if !latencies.is_empty() {
        println!(
            "  median {:.1} ms, max {:.1} ms",
            latencies[latencies.len() / 2],
            latencies.last().copied().unwrap_or(0.0)
        );
    }
}

/// Seconds since the epoch of an RFC 3339 timestamp in a record.
fn seconds(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_nanosecond() as f64 / 1e9)
        .unwrap_or(0.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
