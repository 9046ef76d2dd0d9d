//! Recording a real CLI's streams as the parser fixtures of `pitroom-workers`
//! (`tests/fixtures/<cli>/`): each case is run through Pitroom, and its event log, the stderr
//! lines worth keeping and (when asked) the worker's exit code are written with temp paths and
//! the fake server's port replaced, so fixtures do not change from one recording to the next.
//! The recorders are ignored tests, run by hand when a pinned CLI changes; set
//! `PITROOM_RECORD_ONLY=<name>` to record one case.

use std::path::{Path, PathBuf};
use std::process::Output;

use pitroom_testkit::TestEnv;

use super::common::record;

/// How one CLI's runs become fixtures.
pub struct Recorder<'a> {
    /// The fixture folder: `pitroom-workers/tests/fixtures/<cli>`.
    pub cli: &'static str,
    pub env: &'a TestEnv,
    pub repo: &'a Path,
    pub how: Recording,
}

/// What of a CLI's runs its fixtures keep, and how they are run.
pub struct Recording {
    /// Appended to each case as `-t <timeout>`, when set.
    pub timeout: Option<&'static str>,
    /// The fake model server's port, written as `PORT`.
    pub port: Option<u16>,
    /// Which stderr lines the fixture keeps (the ones the adapter reads).
    pub keep_stderr: fn(&str) -> bool,
    /// Whether `<name>.exit` keeps the worker's exit code (the adapter classifies by it).
    pub exit_codes: bool,
}

impl Recorder<'_> {
    /// Runs each `(name, args)` case with `run` and writes its fixture files.
    pub fn record(&self, cases: &[(&str, &[&str])], run: impl Fn(&[&str]) -> Output) {
        let out_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pitroom-workers/tests/fixtures")
            .join(self.cli);
        std::fs::create_dir_all(&out_dir).expect("fixture dir");
        let only = std::env::var("PITROOM_RECORD_ONLY").ok();
        for (name, args) in cases {
            if only.as_deref().is_some_and(|o| o != *name) {
                continue;
            }
            let mut all: Vec<&str> = args.to_vec();
            if let Some(timeout) = self.how.timeout {
                all.extend(["-t", timeout]);
            }
            let _ = run(&all);
            self.write_case(&out_dir, name);
        }
    }

    fn write_case(&self, out_dir: &Path, name: &str) {
        let r = record(self.env, self.repo);
        let run_dir: PathBuf = self
            .env
            .state
            .join("runs")
            .join(r["id"].as_str().expect("id"));
        let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
        let file = |ext: &str| out_dir.join(format!("{name}.{ext}"));
        std::fs::write(file("jsonl"), self.clean(&events)).expect("write");
        let stderr = std::fs::read_to_string(run_dir.join("stderr.log")).unwrap_or_default();
        let kept: String = stderr
            .lines()
            .filter(|l| (self.how.keep_stderr)(l))
            .map(|l| format!("{}\n", self.clean(l)))
            .collect();
        std::fs::write(file("stderr.txt"), kept).expect("write");
        if self.how.exit_codes {
            let exit = r["worker_exit"]
                .as_i64()
                .map(|c| c.to_string())
                .unwrap_or_default();
            std::fs::write(file("exit"), exit).expect("write");
        }
    }

    /// Absolute temp paths and the server's port make fixtures noisy; the parsers do not
    /// depend on them.
    fn clean(&self, text: &str) -> String {
        let text = text.replace(&self.env.root.display().to_string(), "$ROOT");
        match self.how.port {
            Some(port) => text.replace(&port.to_string(), "PORT"),
            None => text,
        }
    }
}
