//! A hermetic environment for running the `pitroom` binary in tests: its own state dir, home,
//! XDG dirs and git config, so no test sees the developer's settings or leaves anything behind;
//! and a fixed clock and run-id seed, so ids, times, reports and `--json` are the same on every
//! run (the snapshot tests rely on it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The variable that fixes Pitroom's stamping clock (`pitroom_core::clock::TIMESTAMP_ENV`; the
/// test kit depends on no Pitroom crate, and the `pitroom` suite checks the two names agree).
pub const TIMESTAMP_VAR: &str = "PITROOM_TIMESTAMP";

/// The variable that seeds a run id's salt (`pitroom_core::clock::RANDOMNESS_SEED_ENV`).
pub const RANDOMNESS_SEED_VAR: &str = "PITROOM_RANDOMNESS_SEED";

/// The time every command of a [`TestEnv`] stamps its records and ids with.
pub const FIXED_TIMESTAMP: &str = "2026-01-02T03:04:05Z";

/// The run-id seed every command of a [`TestEnv`] gets.
pub const RANDOMNESS_SEED: &str = "0";

/// A temporary world for one test.
pub struct TestEnv {
    _root: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub state: PathBuf,
    pub bin: PathBuf,
    extra: Vec<(String, String)>,
    fixed_clock: bool,
}

impl TestEnv {
    /// A new environment for the `pitroom` executable at `bin`.
    pub fn new(bin: &Path) -> TestEnv {
        let root = tempfile::Builder::new()
            .prefix("pitroom-test-")
            .tempdir()
            .expect("temp dir");
        let base = root.path().to_path_buf();
        let home = base.join("home");
        let state = base.join("state");
        for d in [
            &home,
            &state,
            &base.join("xdg-config"),
            &base.join("xdg-data"),
        ] {
            std::fs::create_dir_all(d).expect("test dirs");
        }
        let gitconfig = base.join("gitconfig");
        std::fs::write(
            &gitconfig,
            "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        )
        .expect("gitconfig");
        TestEnv {
            _root: root,
            root: base,
            home,
            state,
            bin: bin.to_path_buf(),
            extra: Vec::new(),
            fixed_clock: true,
        }
    }

    /// Sets a variable for every command this environment builds.
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.extra.retain(|(k, _)| k != key);
        self.extra.push((key.to_string(), value.into()));
    }

    /// Lets commands stamp records and ids with the wall clock and a random salt, for a test
    /// that compares stamps with real time (how long a run lived, what a `--since` window of
    /// records made elsewhere holds).
    pub fn real_clock(&mut self) {
        self.fixed_clock = false;
    }

    /// A command for `pitroom ARGS` in `dir`, with a clean environment.
    pub fn pitroom(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args).current_dir(dir);
        self.apply(&mut cmd);
        cmd
    }

    /// Applies the hermetic environment to any command (git, a fake server…).
    pub fn apply(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env(
                "PATH",
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
            )
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.root.join("xdg-config"))
            .env("XDG_DATA_HOME", self.root.join("xdg-data"))
            .env("PITROOM_HOME", &self.state)
            .env("PITROOM_CONFIG", self.root.join("pitroom.toml"))
            .env("GIT_CONFIG_GLOBAL", self.root.join("gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .env("LANG", "C.UTF-8");
        if self.fixed_clock {
            cmd.env(TIMESTAMP_VAR, FIXED_TIMESTAMP)
                .env(RANDOMNESS_SEED_VAR, RANDOMNESS_SEED);
        }
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
    }

    /// Runs `pitroom ARGS` in `dir` and returns its output.
    pub fn run(&self, dir: &Path, args: &[&str]) -> Output {
        self.pitroom(dir, args).output().expect("pitroom runs")
    }

    /// Runs `pitroom ARGS` in `dir` and asserts it exits with `code`; returns its output.
    #[track_caller]
    pub fn run_expecting(&self, dir: &Path, args: &[&str], code: i32) -> Output {
        let out = self.run(dir, args);
        assert_exit(&out, code);
        out
    }

    /// Runs `pitroom ARGS` in `dir`, asserts it succeeds and returns its stdout as JSON.
    #[track_caller]
    pub fn run_json(&self, dir: &Path, args: &[&str]) -> serde_json::Value {
        json_stdout(&self.run_expecting(dir, args, 0))
    }

    /// Runs git in `dir` with this environment; panics on failure.
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.args(args).current_dir(dir);
        self.apply(&mut cmd);
        let out = cmd.output().expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A fresh directory inside this environment.
    pub fn dir(&self, name: &str) -> PathBuf {
        let d = self.root.join(name);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }
}

/// Stdout of an output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stderr of an output as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code of an output; -1 when a signal ended it.
pub fn exit_code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// Both streams of an output, labelled: what a failed assertion shows.
pub fn transcript(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts an output's exit code, showing both streams when it is another.
#[track_caller]
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(exit_code(out), code, "{}", transcript(out));
}

/// Asserts an output's stderr contains `needle`, showing both streams when it does not.
#[track_caller]
pub fn assert_stderr_has(out: &Output, needle: &str) {
    assert_stream_has(out, "stderr", &stderr(out), needle);
}

/// Asserts an output's stdout contains `needle`, showing both streams when it does not.
#[track_caller]
pub fn assert_stdout_has(out: &Output, needle: &str) {
    assert_stream_has(out, "stdout", &stdout(out), needle);
}

/// Asserts `text`, the output's stream `name`, contains `needle`, showing both streams when it
/// does not.
#[track_caller]
fn assert_stream_has(out: &Output, name: &str, text: &str, needle: &str) {
    assert!(
        text.contains(needle),
        "{needle:?} not in {name}:\n{}",
        transcript(out)
    );
}

/// An output's stdout parsed as JSON; panics with both streams when it is not JSON.
#[track_caller]
pub fn json_stdout(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", transcript(out)))
}
