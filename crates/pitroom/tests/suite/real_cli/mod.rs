//! End-to-end tests on the real worker CLIs (the pinned versions, installed from npm by
//! `pitroom_testkit::real_cli`), each against its scripted fake model server on 127.0.0.1.
//!
//! One table-driven suite: each CLI is one [`RealCli`] value (in its own file, with the tests
//! that are truly its own), and the shared behaviours are written once in `shared.rs` and
//! stamped out per CLI by `real_cli_tests!`, so a test reads `real_cli::<cli>::<behaviour>`. A CLI that does not prove a shared behaviour says so, and
//! why, in its entry's `unproven`; `shared::every_cli_proves_each_shared_behaviour_or_says_why_not`
//! holds the two lists together. The fragments the CLIs' fake-server scripts share are in
//! `script.rs`. A new CLI is one more file and one more row of [`TABLE`].

use std::path::{Path, PathBuf};
use std::process::Output;

use pitroom_testkit::real_cli::NpmCli;
use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::{real_cli, FakeAnthropic, FakeGemini, FakeOpenAi, FakeResponses, TestEnv};
use serde_json::{json, Value};

pub use super::common::changed;
use super::common::{assert_exit, json_stdout, record, PITROOM};
use super::failfast;
use super::recorder::{Recorder, Recording};

/// Stamps out one `#[test]` per shared behaviour a CLI proves, each calling
/// `shared::<behaviour>(&CLI)`, and lists them in `PROVEN`: `every_cli` stands for the
/// behaviours every CLI of the table proves, followed by those only some do.
macro_rules! real_cli_tests {
    ($cli:path; every_cli $(, $more:ident)* $(,)?) => {
        real_cli_tests!(@stamp $cli;
            a_read_run_comes_back_verified_with_citations,
            a_write_run_records_the_workers_edits_and_reverts_byte_exact,
            a_write_attempt_in_read_mode_is_refused_and_the_tree_is_unchanged,
            a_git_commit_in_a_write_run_leaves_history_untouched,
            rate_limits_are_classified_within_the_retry_cap,
            unknown_model_bad_key_and_server_errors_are_classified,
            every_failure_shape_fails_classified_within_the_retry_cap,
            a_timeout_stops_the_worker_and_every_process_it_started,
            a_follow_up_resumes_the_same_session,
            an_isolated_edit_stays_in_its_copy_until_applied
            $(, $more)*
        );
    };
    (@stamp $cli:path; $($behaviour:ident),*) => {
        /// The shared behaviours this CLI proves; the rest are in its entry's `unproven`.
        pub const PROVEN: &[&str] = &[$(stringify!($behaviour)),*];
        $(
            #[test]
            fn $behaviour() {
                super::shared::$behaviour(&$cli);
            }
        )*
    };
}

pub mod claude;
pub mod codex;
pub mod gemini;
pub mod kilo;
pub mod opencode;
pub mod qwen;
mod script;
mod shared;

/// Every real CLI of the suite, with the shared behaviours its file stamps out.
pub const TABLE: [(&RealCli, &[&str]); 6] = [
    (&opencode::CLI, opencode::PROVEN),
    (&codex::CLI, codex::PROVEN),
    (&claude::CLI, claude::PROVEN),
    (&gemini::CLI, gemini::PROVEN),
    (&qwen::CLI, qwen::PROVEN),
    (&kilo::CLI, kilo::PROVEN),
];

/// One real worker CLI: how it is installed, which fake server it talks to, how the user's
/// provider is set up for it, and the facts the shared behaviours check it against.
pub struct RealCli {
    /// The worker name (`-W`) and Pitroom's backend name.
    pub worker: &'static str,
    /// The pinned npm package (`suite/facts.rs` holds it equal to the adapter's facts).
    pub pinned: NpmCli,
    /// Installs the pinned CLI (or takes its override) and returns its binary.
    pub install: fn() -> Result<PathBuf, String>,
    /// The API of its fake model server.
    pub api: Api,
    /// The fake server's script.
    pub script: fn() -> Value,
    /// The user's own provider set-up.
    pub provider: Provider,
    /// How long its runs get, and how its model stalls.
    pub timing: Timing,
    /// The most model requests one failing run may send under Pitroom's retry cap.
    pub retry_cap: usize,
    /// What a read run of `Where can divide fail?` comes back with.
    pub read: ReadFacts,
    /// Tasks that try to write in read mode (each must be refused).
    pub read_mode_writes: &'static [&'static str],
    /// Stderr lines that prove a refusal the CLI reports only there (Codex's sandbox).
    pub refusal_on_stderr: &'static [&'static str],
    /// A write run whose worker tries `git commit`.
    pub git_commit: Option<GitCommit>,
    /// A write run whose worker reads a secret file.
    pub secret_read: Option<SecretRead>,
    /// Rate and usage limits, each classified.
    pub rate_limits: &'static [ModelError],
    /// Unknown model, bad key and server errors, each classified.
    pub other_errors: &'static [ModelError],
    /// The failure matrix (`suite::failfast`), each shape within `retry_cap`.
    pub failure_shapes: FailureMatrix,
    /// A model `pitroom models <cli>` lists through the real CLI.
    pub listed_model: Option<ListedModel>,
    /// Where `--effort xhigh` shows in the first model request (a JSON pointer).
    pub effort_at: Option<&'static str>,
    /// Checks of one CLI's own (sandbox, profile, policy, settings), run inside the shared
    /// behaviours so they cost no extra run.
    pub checks: Checks,
    /// The shared behaviours this CLI does not prove, and why.
    pub unproven: &'static [Unproven],
    /// How its streams are recorded as the adapter's parser fixtures ([`record_fixtures`]).
    pub fixtures: Fixtures,
}

/// How [`record_fixtures`] records a CLI's streams: the cases, how each is run and what of its
/// stderr and exit the fixture keeps.
pub struct Fixtures {
    /// `(name, args)` of each case, after [`FIRST_FIXTURES`] when `first` is set.
    pub cases: &'static [(&'static str, &'static [&'static str])],
    pub first: bool,
    /// Appended to each case as `-t <timeout>`, when set.
    pub timeout: Option<&'static str>,
    /// Whether the fake model server's port is written as `PORT` (its ids and URLs hold it).
    pub port: bool,
    /// Which stderr lines the fixture keeps (the ones the adapter reads).
    pub keep_stderr: fn(&str) -> bool,
    /// Whether `<name>.exit` keeps the worker's exit code (the adapter classifies by it).
    pub exit_codes: bool,
    /// What the world needs before the first case (a secret file, a variable).
    pub prepare: fn(&mut World),
}

/// Records `cli`'s real streams as its adapter's parser fixtures
/// (`pitroom-workers/tests/fixtures/<worker>/`): each CLI's ignored `record_<cli>_fixtures`
/// test calls this, run by hand when its pinned version changes.
pub fn record_fixtures(cli: &'static RealCli) {
    let how = &cli.fixtures;
    let mut w = World::new(cli);
    (how.prepare)(&mut w);
    let cases = if how.first {
        [FIRST_FIXTURES, how.cases].concat()
    } else {
        how.cases.to_vec()
    };
    let port = how.port.then(|| w.server.port());
    w.record_fixtures(
        &cases,
        Recording {
            timeout: how.timeout,
            port,
            keep_stderr: how.keep_stderr,
            exit_codes: how.exit_codes,
        },
    );
}

impl RealCli {
    /// The variable that points Pitroom at the binary: `PITROOM_<CLI>_BIN`.
    pub fn bin_var(&self) -> String {
        format!("PITROOM_{}_BIN", self.worker.to_uppercase())
    }
}

/// A CLI's failure matrix (`suite::failfast`): the shapes every fake plays with the same
/// scenarios (`ff429after`, `ff429`, `ff404`, `ff500`, `ff503`), the quota shape of the CLI's
/// API among them, and any shapes only that API has.
pub struct FailureMatrix {
    /// The API's own quota (or usage limit) 429: `(name, scenario, failure)`.
    pub quota: failfast::Shape,
    /// Further shapes of the API's own.
    pub more: &'static [failfast::Shape],
}

impl FailureMatrix {
    /// The matrix with `quota` as its quota shape and nothing more.
    pub const fn with_quota(quota: failfast::Shape) -> FailureMatrix {
        FailureMatrix { quota, more: &[] }
    }

    /// Every shape, in the order they are walked.
    pub fn shapes(&self) -> Vec<failfast::Shape> {
        let mut shapes = vec![
            ("429 with retry-after", "ff429after", "rate_limited"),
            ("429 without retry-after", "ff429", "rate_limited"),
            self.quota,
            ("404 unknown model", "ff404", "model_unavailable"),
            ("500", "ff500", "other"),
            ("503", "ff503", "rate_limited"),
        ];
        shapes.extend_from_slice(self.more);
        shapes
    }
}

/// The wire API a fake model server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// OpenAI chat completions (`FakeOpenAi`).
    ChatCompletions,
    /// OpenAI Responses (`FakeResponses`).
    Responses,
    /// Anthropic Messages (`FakeAnthropic`).
    Anthropic,
    /// Gemini `generateContent` (`FakeGemini`).
    Gemini,
}

/// How a user has their provider set up for a CLI.
pub struct Provider {
    /// Their config file, if the provider lives in one.
    pub config: Option<ConfigFile>,
    /// Their environment.
    pub env: &'static [(&'static str, Setting)],
    /// The CLI needs Node 22 first on `PATH`.
    pub node22: bool,
    /// Any traffic that is not the fake model fails fast instead of leaving the machine.
    pub offline: bool,
}

/// A config file of the user's.
pub struct ConfigFile {
    /// Its path under the test environment's root (`home/…` or `xdg-config/…`).
    pub path: &'static str,
    /// Its contents, given the fake server's base URL.
    pub contents: fn(&str) -> String,
}

/// The value of an environment variable of the user's.
pub enum Setting {
    Is(&'static str),
    /// The fake server's base URL.
    BaseUrl,
}

/// What a read run comes back with.
pub struct ReadFacts {
    /// `in_place` (read-only under Landlock) or `copy`.
    pub view: &'static str,
    pub usage: Usage,
    /// The CLI prices its usage (`receipt.cost` > 0), or reports no cost (null).
    pub priced: bool,
    /// What the CLI's session ids look like.
    pub session: fn(&str) -> bool,
    /// The model the requests asked for, when the user's config pins it.
    pub asked_model: Option<&'static str>,
    /// The model the record names, when it is not the one asked for (provider-qualified).
    pub reported_model: Option<&'static str>,
    /// Tools the read profile offers the model, and tools it must not.
    pub offered: &'static [&'static str],
    pub withheld: &'static [&'static str],
}

/// The usage of the read run as the record tallies it.
pub struct Usage {
    pub input: u64,
    pub cache_read: u64,
    pub output: Option<u64>,
    pub reasoning: Option<u64>,
}

impl Usage {
    /// The read script's two calls as most CLIs count them: (1000-200)+(1500-1000) input,
    /// 200+1000 cached, output and reasoning not checked.
    pub const TWO_CALLS_CACHED: Usage = Usage {
        input: 1300,
        cache_read: 1200,
        output: None,
        reasoning: None,
    };
}

/// How long a CLI's runs get, and how its model stalls.
pub struct Timing {
    /// The time limit of an ordinary run (`-t`).
    pub timeout: &'static str,
    /// The time limit of a run whose model never answers (it ends as a timeout however far
    /// the CLI got by then).
    pub stall_limit: &'static str,
    /// The scenario of a run whose model stops answering after its CLI has started a session.
    pub resumable_stall: Stall,
}

impl Timing {
    /// Ninety seconds a run; a model that never answers its first request, given 15 s.
    pub const HANG_AFTER_15S: Timing = Timing {
        timeout: "90s",
        stall_limit: "15s",
        resumable_stall: Stall::HANG,
    };
}

/// A fake-server scenario whose model stops answering at one of its steps.
pub struct Stall {
    pub scenario: &'static str,
    /// The step (0 first) whose request the server never answers: once it has arrived, the
    /// CLI has sent its conversation, so its session is saved.
    pub waits_at: usize,
}

impl Stall {
    /// The model never answers the first request.
    pub const HANG: Stall = Stall {
        scenario: "hang",
        waits_at: 0,
    };
}

/// A write run that tries to commit.
pub struct GitCommit {
    pub task: &'static str,
    /// The CLI's permission profile denies the call (rather than the git guard failing it).
    pub denied_by_profile: bool,
}

impl GitCommit {
    /// The script's `gitcommit` scenario (`git commit -am sneaky` through the CLI's shell tool),
    /// which the CLI's permission profile denies.
    pub const REFUSED_BY_PROFILE: GitCommit = GitCommit {
        task: "commit scenario:gitcommit",
        denied_by_profile: true,
    };
}

/// A write run that reads `.env` (and, when `template`, `config/.env.example` too).
pub struct SecretRead {
    pub task: &'static str,
    pub template: bool,
    /// Without a template: the CLI's rules deny the read (a denied call), rather than its read
    /// tool failing on it.
    pub denied: bool,
}

impl SecretRead {
    /// The script's `secret` scenario: a read of `.env` alone, which the CLI's rules deny
    /// (`denied`) or its read tool fails.
    pub const fn env(denied: bool) -> SecretRead {
        SecretRead {
            task: "read the env scenario:secret",
            template: false,
            denied,
        }
    }
}

/// A read-mode task that tries the script's `edit` scenario (the worker's edit tools).
pub const EDIT_IN_READ_MODE: &str = "try to fix divide scenario:edit";
/// A read-mode task that tries the script's `shellwrite` scenario (a write through the shell).
pub const SHELL_WRITE_IN_READ_MODE: &str = "look around scenario:shellwrite";

/// One provider error: the scenario, the failure the record must carry, and what its error
/// message must say.
pub struct ModelError {
    pub scenario: &'static str,
    pub failure: &'static str,
    pub says: Option<&'static str>,
    /// The run sends at most the CLI's `retry_cap` model requests.
    pub capped: bool,
}

impl ModelError {
    /// `scenario` ends the run classified as `failure`.
    pub const fn is(scenario: &'static str, failure: &'static str) -> ModelError {
        ModelError {
            scenario,
            failure,
            says: None,
            capped: true,
        }
    }

    /// The script's `err404`: an unknown model.
    pub const UNKNOWN_MODEL: ModelError = ModelError::is("err404", "model_unavailable");
    /// The script's `err401`: a bad key.
    pub const BAD_KEY: ModelError = ModelError::is("err401", "auth");
    /// The script's `err500`: a server error.
    pub const SERVER_ERROR: ModelError = ModelError::is("err500", "other");

    /// `scenario` ends the run as `rate_limited`.
    pub const fn rate_limited(scenario: &'static str) -> ModelError {
        ModelError::is(scenario, "rate_limited")
    }

    /// With no bound on its requests: a `retry-after: 0` lets the CLI retry faster than
    /// Pitroom's cut counts its attempts (seen: 5 calls for a cap of 3).
    pub const fn uncapped(self) -> ModelError {
        ModelError {
            capped: false,
            ..self
        }
    }

    /// And the record's error says `what` (compared in lower case).
    pub const fn saying(self, what: &'static str) -> ModelError {
        ModelError {
            says: Some(what),
            ..self
        }
    }
}

/// The `other_errors` of a fake that plays all three: an unknown model, a bad key and a server
/// error.
pub const OTHER_ERRORS: &[ModelError] = &[
    ModelError::UNKNOWN_MODEL,
    ModelError::BAD_KEY,
    ModelError::SERVER_ERROR,
];

/// A model `pitroom models` lists, with an effort it must offer.
pub struct ListedModel {
    pub id: &'static str,
    pub effort: Option<&'static str>,
}

/// A CLI's own checks inside the shared runs.
pub struct Checks {
    /// After the read run: its record.
    pub read: fn(&World, &Value, &Output),
    /// After a write or isolated run: its record.
    pub write: fn(&World, &Value),
}

impl Checks {
    /// A CLI with nothing of its own to check.
    pub const NONE: Checks = Checks {
        read: |_, _, _| {},
        write: |_, _| {},
    };
}

/// A shared behaviour a CLI does not prove.
pub struct Unproven {
    pub behaviour: &'static str,
    pub why: &'static str,
}

/// A running fake model server.
pub enum Fake {
    ChatCompletions(FakeOpenAi),
    Responses(FakeResponses),
    Anthropic(FakeAnthropic),
    Gemini(FakeGemini),
}

impl Fake {
    fn start(api: Api, script: Value) -> std::io::Result<Fake> {
        Ok(match api {
            Api::ChatCompletions => Fake::ChatCompletions(FakeOpenAi::start(script)?),
            Api::Responses => Fake::Responses(FakeResponses::start(script)?),
            Api::Anthropic => Fake::Anthropic(FakeAnthropic::start(script)?),
            Api::Gemini => Fake::Gemini(FakeGemini::start(script)?),
        })
    }

    pub fn base_url(&self) -> String {
        match self {
            Fake::ChatCompletions(s) => s.base_url(),
            Fake::Responses(s) => s.base_url(),
            Fake::Anthropic(s) => s.base_url(),
            Fake::Gemini(s) => s.base_url(),
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            Fake::ChatCompletions(s) => s.port(),
            Fake::Responses(s) => s.port(),
            Fake::Anthropic(s) => s.port(),
            Fake::Gemini(s) => s.port(),
        }
    }

    /// The requests that consumed a script step (side calls such as titles left out).
    pub fn model_requests(&self) -> Vec<Value> {
        match self {
            Fake::ChatCompletions(s) => s.chat_requests(),
            Fake::Responses(s) => s.model_requests(),
            Fake::Anthropic(s) => s.model_requests(),
            Fake::Gemini(s) => s.model_requests(),
        }
    }

    /// The model a request asked for (Gemini names it in the URL, the others in the body).
    pub fn asked_model(&self, request: &Value) -> Option<String> {
        let model = match self {
            Fake::Gemini(_) => &request["model"],
            _ => &request["body"]["model"],
        };
        model.as_str().map(str::to_string)
    }

    /// The names of the tools a request offers the model.
    pub fn tools(&self, request: &Value) -> Vec<String> {
        let tools = request["body"]["tools"].as_array().into_iter().flatten();
        match self {
            Fake::ChatCompletions(_) => tools
                .filter_map(|t| t["function"]["name"].as_str())
                .map(str::to_string)
                .collect(),
            Fake::Responses(_) => tools
                .filter_map(|t| t["name"].as_str().or_else(|| t["type"].as_str()))
                .map(str::to_string)
                .collect(),
            Fake::Anthropic(_) => tools
                .filter_map(|t| t["name"].as_str())
                .map(str::to_string)
                .collect(),
            Fake::Gemini(_) => tools
                .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
                .filter_map(|d| d["name"].as_str())
                .map(str::to_string)
                .collect(),
        }
    }

    /// The user turns of a request's conversation, each as JSON text.
    pub fn user_turns(&self, request: &Value) -> Vec<String> {
        let turns = match self {
            Fake::ChatCompletions(_) | Fake::Anthropic(_) => &request["body"]["messages"],
            Fake::Responses(_) => &request["body"]["input"],
            Fake::Gemini(_) => &request["body"]["contents"],
        };
        turns
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "user")
            .map(Value::to_string)
            .collect()
    }
}

/// A repository with uncommitted work, a fake model server and a real CLI configured the way
/// its entry's user has it.
pub struct World {
    pub cli: &'static RealCli,
    pub env: TestEnv,
    pub server: Fake,
    pub repo: PathBuf,
}

impl World {
    pub fn new(cli: &'static RealCli) -> World {
        let bin = (cli.install)()
            .unwrap_or_else(|e| panic!("the pinned {} installs from npm: {e}", cli.worker));
        let server = Fake::start(cli.api, (cli.script)()).expect("fake server starts");
        let mut env = TestEnv::new(Path::new(PITROOM));
        env.set(&cli.bin_var(), bin.display().to_string());
        set_up_provider(&mut env, &cli.provider, &server.base_url());
        let repo = dirty_repo(&env, "repo");
        World {
            cli,
            env,
            server,
            repo,
        }
    }

    /// `pitroom ARGS` in the repository, as given.
    pub fn run(&self, args: &[&str]) -> Output {
        self.env.run(&self.repo, args)
    }

    /// `pitroom ARGS` in the repository, which must exit 0: its `--json` output.
    pub fn run_json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert_exit(&out, 0);
        json_stdout(&out)
    }

    /// `pitroom run -W <cli> ARGS`: a task, or `--continue …`.
    pub fn task(&self, args: &[&str]) -> Output {
        let mut all = vec!["run", "-W", self.cli.worker];
        all.extend(args);
        self.run(&all)
    }

    /// The latest run record.
    pub fn record(&self) -> Value {
        record(&self.env, &self.repo)
    }

    /// A file of a run's directory (`changes.patch`, `stderr.log`), empty when missing.
    pub fn run_file(&self, record: &Value, name: &str) -> String {
        let id = record["id"].as_str().expect("the record has an id");
        std::fs::read_to_string(self.env.state.join("runs").join(id).join(name)).unwrap_or_default()
    }

    /// Records each `(name, args)` case, run as a task of this world's CLI, as that CLI's parser
    /// fixtures (`pitroom-workers/tests/fixtures/<worker>/`).
    pub fn record_fixtures(&self, cases: &[(&str, &[&str])], how: Recording) {
        Recorder {
            cli: self.cli.worker,
            env: &self.env,
            repo: &self.repo,
            how,
        }
        .record(cases, |args| self.task(args));
    }

    /// The repository's path as the worker saw it.
    pub fn project(&self) -> String {
        self.repo
            .canonicalize()
            .expect("canonical")
            .display()
            .to_string()
    }
}

fn set_up_provider(env: &mut TestEnv, provider: &Provider, base_url: &str) {
    if provider.node22 {
        env.set(
            "PATH",
            real_cli::path_with_node22().expect("Node 22 installs from npm"),
        );
    }
    for (key, value) in provider.env {
        let value = match value {
            Setting::Is(v) => v.to_string(),
            Setting::BaseUrl => base_url.to_string(),
        };
        env.set(key, value);
    }
    if provider.offline {
        env.set("HTTPS_PROXY", "http://127.0.0.1:9");
        env.set("HTTP_PROXY", "http://127.0.0.1:9");
        env.set("NO_PROXY", "127.0.0.1,localhost");
    }
    if let Some(config) = &provider.config {
        let path = env.root.join(config.path);
        let dir = path.parent().expect("a config file has a folder");
        std::fs::create_dir_all(dir).expect("config dir");
        std::fs::write(&path, (config.contents)(base_url)).expect("config");
    }
}

/// The cases a fixture recording of a CLI with edit tools starts with (`World::record_fixtures`):
/// the read run, the write run, and the edit refused in read mode.
pub const FIRST_FIXTURES: &[(&str, &[&str])] = &[
    ("read", &["Where can divide fail?"]),
    ("write-edit", &["-w", "fix divide scenario:edit"]),
    ("read-edit-denied", &[EDIT_IN_READ_MODE]),
];

/// The failure matrix of the CLIs whose fake plays it with the same scenarios (the
/// OpenAI-shaped errors).
pub const OPENAI_SHAPES: FailureMatrix =
    FailureMatrix::with_quota(("insufficient_quota 429", "ffquota", "rate_limited"));

/// `script` with the fake's scenarios of [`OPENAI_SHAPES`] added, one per shape.
pub fn with_openai_shapes(mut script: Value) -> Value {
    let shapes = json!({
        "ff429after": [{"error": 429, "error_message": "Rate limit reached for requests", "headers": {"retry-after": "1"}}],
        "ff429": [{"error": 429, "error_message": "Rate limit reached for requests"}],
        "ffquota": [{"error": 429, "error_body": {"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}}],
        "ff404": [{"error": 404}],
        "ff500": [{"error": 500}],
        "ff503": [{"error": 503}],
    });
    let scenarios = script["scenarios"]
        .as_object_mut()
        .expect("a script has scenarios");
    for (name, steps) in shapes.as_object().expect("scenarios") {
        let clash = scenarios.insert(name.clone(), steps.clone());
        assert!(
            clash.is_none(),
            "{name} is a scenario of the failure matrix"
        );
    }
    script
}
