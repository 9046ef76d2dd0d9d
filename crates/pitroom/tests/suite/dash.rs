//! `pitroom dash` in a real browser: Debian's Chromium driven by playwright-core (from npm, in
//! the e2e cache like the worker CLIs), against a detached server over a fake worker's runs.
//! The driver is `tests/dash/browser.mjs`; it prints `figure <name> <value>` lines, which are
//! reported here (budgets are measured, not asserted as timings).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pitroom_testkit::real_cli::CHROMIUM;
use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    assert_exit, eventually, fake_env, json_stdout, processes_with_env, text, PITROOM,
};

/// playwright-core's package directory, installed from npm on first use.
fn playwright() -> PathBuf {
    let lib = pitroom_testkit::real_cli::PLAYWRIGHT_CORE;
    match pitroom_testkit::real_cli::install_library(&lib) {
        Ok(prefix) => prefix.join("node_modules").join(lib.package),
        Err(e) => panic!("the browser tests need {}: {e}", lib.package),
    }
}

/// Debian's Chromium, installed on first use where the tests may (as root).
fn chromium_present() {
    if let Err(e) = pitroom_testkit::real_cli::debian_package(Path::new(CHROMIUM), "chromium") {
        panic!("the browser tests need Chromium: {e}");
    }
}

/// A detached `pitroom dash` on a free port, stopped when dropped.
struct Server<'a> {
    env: &'a TestEnv,
    dir: PathBuf,
    url: String,
    pid: i32,
}

impl<'a> Server<'a> {
    fn start(env: &'a TestEnv, dir: &Path) -> Server<'a> {
        let out = env.run(dir, &["dash", "--detach", "--port", "0", "--json"]);
        assert_exit(&out, 0);
        let v = json_stdout(&out);
        Server {
            env,
            dir: dir.to_path_buf(),
            url: v["url"].as_str().expect("url").to_string(),
            pid: v["pid"].as_i64().expect("pid") as i32,
        }
    }

    /// Runs a scenario of the browser driver; returns its stdout (figures, notes).
    fn browse(&self, scenario: &str, vars: &[(&str, String)]) -> String {
        chromium_present();
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dash/browser.mjs");
        let mut cmd = Command::new("node");
        cmd.arg(&driver).arg(scenario).current_dir(&self.dir);
        self.env.apply(&mut cmd);
        cmd.env("DASH_URL", &self.url)
            .env("PW_MODULE", playwright())
            .env("PITROOM_BIN", PITROOM)
            .env("WORK_DIR", &self.dir)
            .env("STATE", &self.env.state);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("node runs");
        assert!(
            out.status.success(),
            "browser scenario {scenario}:\n{}",
            text(&out)
        );
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        for line in stdout.lines().filter(|l| l.starts_with("figure ")) {
            println!("dash {scenario}: {}", &line[7..]);
        }
        stdout
    }

    /// The server's resident memory, from /proc.
    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    }
}

impl Drop for Server<'_> {
    fn drop(&mut self) {
        let _ = self.env.run(&self.dir, &["dash", "--stop"]);
    }
}

fn figure(stdout: &str, name: &str) -> Option<String> {
    stdout.lines().find_map(|l| {
        l.strip_prefix(&format!("figure {name} "))
            .map(str::to_string)
    })
}

/// A fake worker's read of `calc.py`.
fn read_calc() -> Value {
    json!({"tool": "read", "input": {"filePath": "calc.py"}})
}

/// A fake worker's step of `input` and `output` tokens, ended for `reason`.
fn step(input: u64, output: u64, reason: &str) -> Value {
    json!({"step": {"input": input, "output": output, "reason": reason}})
}

/// The fake worker's script per model: an old run to search for, an isolated edit with a
/// markdown answer, and a live run that waits on gate files the browser test creates.
fn scripts(gates: &Path) -> Value {
    let gate = |name: &str| {
        format!(
            "while [ ! -e '{}' ]; do sleep 0.02; done",
            gates.join(name).display()
        )
    };
    json!({"by_model": {
        "fake/old": [
            read_calc(),
            step(900, 40, "tool-calls"),
            {"text": "SUMMARY: the zanzibar parser is in calc.py:1"},
            step(950, 20, "stop")
        ],
        "fake/edit": [
            read_calc(),
            {"write": {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n        raise ValueError(\"b is 0\")\n    return a / b\n"}},
            {"tool": "edit", "input": {"filePath": "calc.py"}},
            step(1200, 80, "tool-calls"),
            {"text": "SUMMARY: divide() has a **zero check** now (calc.py:6).\n\n- raises `ValueError`\n- <script>document.title='owned'</script> stays text\n\n![chart](http://example.com/x.png)"},
            step(1300, 30, "stop")
        ],
        "openrouter/qwen3-coder": [
            read_calc(),
            step(500, 20, "tool-calls"),
            {"sh": gate("never")}
        ],
        "fake/live": [
            read_calc(),
            step(500, 20, "tool-calls"),
            {"sh": gate("live-1")},
            {"sh": gate("live-2")},
            {"text": "SUMMARY: never reached: the test stops this run"}
        ]
    }})
}

fn run_id(env: &TestEnv, dir: &Path) -> String {
    let out = env.run(dir, &["show", "--json"]);
    let v = json_stdout(&out);
    v["id"].as_str().expect("id").to_string()
}

#[test]
fn in_a_browser_a_bg_run_appears_updates_live_and_stops_and_answers_diffs_and_search_show() {
    let gates = tempfile::tempdir().expect("gates dir");
    let env = fake_env(scripts(gates.path()));
    let repo = dirty_repo(&env, "repo");
    let old = env.run(&repo, &["-m", "fake/old", "Find the zanzibar parser"]);
    assert_exit(&old, 0);
    let old_id = run_id(&env, &repo);
    let edit = env.run(
        &repo,
        &["-i", "-m", "fake/edit", "Add a zero check to divide()"],
    );
    assert_exit(&edit, 0);
    let edit_id = run_id(&env, &repo);

    let server = Server::start(&env, &repo);
    let stdout = server.browse(
        "live",
        &[
            ("GATES", gates.path().display().to_string()),
            ("OLD_RUN", old_id),
            ("EDIT_RUN", edit_id),
        ],
    );
    assert!(stdout.contains("offenders 0"), "{stdout}");
    let stopped = stdout
        .lines()
        .find_map(|l| l.strip_prefix("stopped "))
        .expect("the driver stopped a run")
        .to_string();
    let record: Value = serde_json::from_slice(
        &std::fs::read(env.state.join("runs").join(&stopped).join("record.json")).expect("record"),
    )
    .expect("json");
    assert_eq!(record["state"], "stopped");
    // Every process of the run is gone: only the dashboard server still has this state dir.
    let needle = env.state.display().to_string();
    let left = || -> Vec<i32> {
        processes_with_env(&needle)
            .into_iter()
            .filter(|p| *p != server.pid)
            .collect()
    };
    assert!(
        eventually(Duration::from_secs(20), || left().is_empty()),
        "processes of the stopped run are left: {:?}",
        left()
    );
    if let Some(kib) = server.rss_kib() {
        println!("dash live: idle_rss_kib {kib}");
    }
    for name in ["card_appeared_ms", "push_latency_ms"] {
        assert!(
            figure(&stdout, name).is_some(),
            "no {name} figure: {stdout}"
        );
    }
}

/// Writes `count` copies of a real run's directory under new ids that sort after it.
fn clone_runs(state: &Path, source: &str, count: usize) {
    let dir = state.join("runs").join(source);
    let record: Value =
        serde_json::from_slice(&std::fs::read(dir.join("record.json")).expect("record"))
            .expect("json");
    let events = std::fs::read(dir.join("events.jsonl")).unwrap_or_default();
    for n in 0..count {
        let id = format!(
            "20261101-{:02}{:02}{:02}-000a",
            n / 3600,
            n / 60 % 60,
            n % 60
        );
        let mut r = record.clone();
        r["id"] = json!(id);
        r["spec"]["task"] = json!(format!("Bulk task number {n}: map the callers of divide()"));
        let target = state.join("runs").join(&id);
        std::fs::create_dir_all(&target).expect("run dir");
        std::fs::write(
            target.join("record.json"),
            serde_json::to_vec_pretty(&r).expect("json"),
        )
        .expect("record");
        std::fs::write(target.join("events.jsonl"), &events).expect("events");
    }
}

#[test]
fn in_a_browser_the_live_view_renders_a_thousand_runs_and_its_figures_are_measured() {
    let env = fake_env(json!([
        {"tool": "read", "input": {"filePath": "calc.py"}},
        {"step": {"input": 900, "output": 40, "reason": "tool-calls"}},
        {"text": "SUMMARY: divide() has no zero check (calc.py:7)"},
        {"step": {"input": 950, "output": 20, "reason": "stop"}}
    ]));
    let repo = dirty_repo(&env, "repo");
    let first = env.run(&repo, &["Where can divide fail?"]);
    assert_exit(&first, 0);
    let source = run_id(&env, &repo);
    clone_runs(&env.state, &source, 999);
    let server = Server::start(&env, &repo);
    let stdout = server.browse("bulk", &[]);
    assert_eq!(figure(&stdout, "cards").as_deref(), Some("200"), "{stdout}");
    println!(
        "dash bulk: assets_bytes {}",
        pitroom_dash::assets::total_size()
    );
    if let Some(kib) = server.rss_kib() {
        println!("dash bulk: idle_rss_kib {kib} (after serving 1,000 runs)");
    }
}

/// Two weeks of generated history next to the demo's runs, so Stats and History have days,
/// models and failures to show: copies of the demo's finished runs with other tasks, models,
/// times, tokens and outcomes (labelled as generated in docs/dashboard.md).
fn sample_history(state: &Path, count: usize) {
    let runs = state.join("runs");
    let templates: Vec<(PathBuf, Value)> = std::fs::read_dir(&runs)
        .expect("runs")
        .flatten()
        .filter_map(|e| {
            let r: Value =
                serde_json::from_slice(&std::fs::read(e.path().join("record.json")).ok()?).ok()?;
            (r["state"] == "done").then(|| (e.path(), r))
        })
        .collect();
    let models = [
        "openrouter/qwen3-coder",
        "groq/kimi-k2",
        "deepseek/deepseek-chat",
        "ollama/qwen3:8b",
    ];
    let tasks = [
        "Map the session cookie readers",
        "List every caller of check_token",
        "Find dead code in auth/",
        "Why does the retry loop never back off?",
        "Summarise the migration scripts",
        "Which tests cover the parser?",
        "Add input validation to parse_amount()",
        "Where is the cache invalidated?",
    ];
    let now = jiff::Timestamp::now();
    for n in 0..count {
        let (dir, template) = &templates[n % templates.len()];
        let ago =
            jiff::SignedDuration::from_mins((n as i64 % 14) * 1440 + (n as i64 * 97) % 600 + 90);
        let start = now - ago;
        let id = format!(
            "{}-{:03}{}",
            start.strftime("%Y%m%d-%H%M%S"),
            n % 1000,
            (b'a' + (n % 26) as u8) as char
        );
        let mut r = template.clone();
        let duration = 8_000 + (n as u64 * 7_919) % 170_000;
        let tokens = 4_000 + (n as u64 * 13_331) % 90_000;
        let rate_limited = n % 9 == 4;
        let failed = rate_limited || n % 11 == 7;
        r["id"] = json!(id);
        r["created_at"] = json!(start.to_string());
        r["started_at"] = json!(start.to_string());
        r["ended_at"] =
            json!((start + jiff::SignedDuration::from_millis(duration as i64)).to_string());
        r["duration_ms"] = json!(duration);
        r["spec"]["model"] = json!(models[n % models.len()]);
        r["spec"]["task"] = json!(tasks[n % tasks.len()]);
        r["spec"]["group"] = Value::Null;
        r["state"] = json!(if failed { "failed" } else { "done" });
        if rate_limited {
            r["error"] = json!("the provider refused: rate limited (429)");
            r["failure"] = json!("rate_limited");
        } else if failed {
            r["error"] = json!("the worker ended without an answer (exit 1)");
            r["failure"] = json!("other");
        }
        // The attempt is the run as the chain saw it: the same target, state and end.
        r["attempts"] = json!([{
            "target": format!("opencode:{}", models[n % models.len()]),
            "state": r["state"],
            "failure": r["failure"],
            "error": r["error"],
            "steps": r["tally"]["steps"],
            "tool_calls": r["tally"]["tool_calls"],
            "duration_ms": duration,
            "fell_back": false,
        }]);
        r["receipt"]["worker_tokens"] = json!(tokens);
        r["receipt"]["saved"] = json!(tokens as f64 * 2.4e-6);
        r["receipt"]["cost"] = json!(if n % 4 == 3 {
            0.0
        } else {
            tokens as f64 * 1.5e-7
        });
        let target = runs.join(&id);
        std::fs::create_dir_all(&target).expect("run dir");
        std::fs::write(
            target.join("record.json"),
            serde_json::to_vec_pretty(&r).expect("json"),
        )
        .expect("record");
        for file in ["events.jsonl", "changes.patch"] {
            if let Ok(bytes) = std::fs::read(dir.join(file)) {
                std::fs::write(target.join(file), bytes).expect("copy");
            }
        }
    }
}

/// The screenshots in docs/dashboard/: every view, light and dark, 1280 and 380 px wide, of
/// `pitroom demo --keep`'s runs plus one live run. Pictures for people, not a check, so it runs
/// only when asked: `cargo test -p pitroom --test all screenshots -- --ignored` (into
/// `$PITROOM_DASH_SCREENSHOTS`, default `docs/dashboard`).
#[test]
#[ignore = "takes the docs' screenshots; run with --ignored"]
fn screenshots_of_every_view_are_taken_for_the_docs() {
    let shots = std::env::var_os("PITROOM_DASH_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("docs/dashboard"));
    // A relative directory is taken from the workspace root (tests run in the crate's).
    let shots = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(shots);
    std::fs::create_dir_all(&shots).expect("screenshot dir");
    let shots = shots.canonicalize().expect("screenshot dir");
    let gates = tempfile::tempdir().expect("gates dir");
    let mut env = fake_env(scripts(gates.path()));
    // The pictures show times as a person sees them: a live run started now, not at the
    // test kit's fixed instant (months ago, to the browser's clock).
    env.real_clock();
    let work = env.dir("demo");
    let demo = env.run(&work, &["demo", "--keep"]);
    assert_exit(&demo, 0);
    let out = String::from_utf8_lossy(&demo.stdout).into_owned();
    let state = out
        .split_whitespace()
        .find_map(|w| w.strip_prefix("PITROOM_HOME="))
        .expect("demo --keep prints its state dir")
        .to_string();
    let project = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("sample project").map(str::trim))
        .expect("demo --keep prints its sample project")
        .to_string();
    env.set("PITROOM_HOME", state.clone());
    env.state = PathBuf::from(&state);
    // The run view shows the demo's own run of two repair rounds (an isolated run whose first
    // --verify failed and went back to the worker), not a sample made from one.
    let isolated = std::fs::read_dir(env.state.join("runs"))
        .expect("runs")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("record.json")).ok())
        .filter_map(|r| serde_json::from_slice::<Value>(&r).ok())
        .find(|r| {
            r["spec"]["mode"] == "isolate"
                && r["attempts"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|a| a["round"] == 2))
        })
        .and_then(|r| r["id"].as_str().map(str::to_string))
        .expect("the demo has an isolated run of two repair rounds");
    sample_history(&env.state, 48);
    let project = PathBuf::from(project);
    let live = env.run(
        &project,
        &[
            "--bg",
            "-m",
            "openrouter/qwen3-coder",
            "Map every error path of calc.py",
        ],
    );
    assert_exit(&live, 0);
    let live_id = String::from_utf8_lossy(&live.stdout).trim().to_string();
    // The live card shows its first tool call before the pictures are taken.
    let record = env.state.join("runs").join(&live_id).join("record.json");
    assert!(eventually(Duration::from_secs(20), || {
        std::fs::read(&record)
            .ok()
            .and_then(|r| serde_json::from_slice::<Value>(&r).ok())
            .is_some_and(|r| r["tally"]["tool_calls"] == 1)
    }));
    let server = Server::start(&env, &project);
    let views = json!([
        ["live", "#/", ".card"],
        ["run", format!("#/run/{isolated}"), "table.diff"],
        ["history", "#/history?q=divide", ".hit"],
        ["stats", "#/stats?since=all", "svg.chart rect"]
    ]);
    server.browse(
        "screens",
        &[
            ("VIEWS", views.to_string()),
            ("SHOTS", shots.display().to_string()),
        ],
    );
    let _ = env.run(&project, &["stop", &live_id]);
    drop(server);
    let root = Path::new(&state).parent().map(Path::to_path_buf);
    if let Some(root) = root.filter(|r| r.join("calc").is_dir()) {
        let _ = std::fs::remove_dir_all(root);
    }
}
