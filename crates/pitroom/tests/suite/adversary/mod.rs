//! The adversarial suite: a hostile worker — a CLI talked into it by a file or a web page —
//! attacks each of Pitroom's promises, class by class (`docs/safety.md`, "The adversary").
//! Every attack runs as the user that started the tests (root in CI) and, where the tests run
//! as root, again as an ordinary user (`nobody`): the floor must be the same for both. Each
//! test asserts what the attack was after is untouched — git state, the tree, HOME, the state
//! dir — and that the record says which layer held.

mod apply;
mod confidential;
mod git_config;
mod hiding;
mod ignored;
mod nesting;
mod object_store;
mod privilege;
mod snapshot;
mod state_dir;
mod verify;

use std::path::{Path, PathBuf};

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{fake_env, fake_worker, shell_calls, PITROOM};

/// Who starts Pitroom in one variant of an attack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum User {
    /// The user the tests run as (root in CI).
    Current,
    /// An ordinary user (`nobody`), when the tests run as root.
    Unprivileged,
}

/// The users each attack runs as: the current one, and an ordinary one where the tests can
/// switch to it (as root). Run as an ordinary user, the current user *is* the ordinary case.
pub fn users() -> Vec<User> {
    // SAFETY: geteuid has no failure mode.
    if unsafe { libc::geteuid() } == 0 {
        vec![User::Current, User::Unprivileged]
    } else {
        vec![User::Current]
    }
}

/// A test environment for `user` whose OpenCode is the fake worker running `script`.
pub fn attack_env(user: User, script: Value) -> Attack {
    let mut env = fake_env(script);
    let pitroom = match user {
        User::Current => PathBuf::from(PITROOM),
        User::Unprivileged => {
            let guard = Path::new(PITROOM).with_file_name("pitroom-guard");
            let worker = fake_worker();
            let bins =
                pitroom_testkit::env::reachable_by_others(&[Path::new(PITROOM), &guard, &worker]);
            env.run_unprivileged(bins[0].clone());
            env.set("PITROOM_OPENCODE_BIN", bins[2].display().to_string());
            bins[0].clone()
        }
    };
    let repo = dirty_repo(&env, "repo");
    Attack {
        env,
        repo,
        pitroom,
        user,
    }
}

/// One attack's world: its environment, the user's repository, and the pitroom binary the
/// worker could find.
pub struct Attack {
    pub env: TestEnv,
    pub repo: PathBuf,
    pub pitroom: PathBuf,
    pub user: User,
}

impl Attack {
    /// Sets the fake worker's script for the next run: each command through its shell tool,
    /// then an answer.
    pub fn script(&mut self, commands: &[String]) {
        let mut actions: Vec<Value> = commands.iter().map(|c| json!({ "sh": c })).collect();
        actions.push(json!({"text": "SUMMARY: tried"}));
        self.env
            .set("PITROOM_FAKE_SCRIPT", Value::Array(actions).to_string());
    }

    /// Runs pitroom with `args` in the repository; returns its exit code and its output.
    pub fn run(&self, args: &[&str]) -> (i32, String) {
        let out = self.env.run(&self.repo, args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    /// The latest run's record.
    pub fn record(&self) -> Value {
        super::common::record(&self.env, &self.repo)
    }

    /// The latest run's shell calls: (command, exit, output).
    pub fn shell_calls(&self) -> Vec<(String, i64, String)> {
        shell_calls(&self.env, &self.repo)
    }

    /// Everything the user's git state is: refs, HEAD, the index, config and hooks.
    pub fn git_state(&self) -> GitState {
        let git = self.repo.join(".git");
        let read = |p: &str| std::fs::read(git.join(p)).unwrap_or_default();
        GitState {
            refs: self.env.git(&self.repo, &["show-ref"]),
            head: read("HEAD"),
            index: read("index"),
            config: read("config"),
            hooks: list(&git.join("hooks")),
            top: list(&git),
        }
    }

    /// The CLI's shared state dir the latest run wrote in (one per mode and directory), as
    /// its sandbox report lists it.
    pub fn cli_state_dir(&self) -> PathBuf {
        let r = self.record();
        r["safety"]["landlock"]["writable"]
            .as_array()
            .expect("writable dirs")
            .iter()
            .filter_map(Value::as_str)
            .find(|w| w.contains("/workers/"))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("no CLI state dir among the writable dirs: {r:#}"))
    }

    /// Whether workers started by this variant's user get a private mount namespace here (the
    /// read-only `.git`, hidden files, masked sockets), as `pitroom doctor` run as that user
    /// says: a kernel may refuse unprivileged user namespaces (Ubuntu's AppArmor setting).
    pub fn mounts_available(&self) -> bool {
        let (_, doctor) = self.run(&["doctor"]);
        assert!(doctor.contains("landlock"), "doctor: {doctor}");
        !doctor.contains("no private mount namespace")
    }

    /// Where the variant's label goes in an assertion message.
    pub fn who(&self) -> String {
        format!("{:?}", self.user)
    }
}

/// The user's git state, compared whole before and after an attack.
#[derive(Debug, PartialEq, Eq)]
pub struct GitState {
    refs: String,
    head: Vec<u8>,
    index: Vec<u8>,
    config: Vec<u8>,
    hooks: Vec<String>,
    top: Vec<String>,
}

/// The names in `dir`, sorted.
pub fn list(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
