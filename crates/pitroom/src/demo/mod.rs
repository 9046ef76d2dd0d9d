//! `pitroom demo`: the first run that works on a fresh machine, with no worker CLI and no model
//! key. A sample project carried in the binary is laid out in a temporary directory and walked
//! through the real pipeline — every stage runs the real `pitroom` commands as child processes,
//! with a state dir of their own — while the worker is [`worker`], this binary replaying a fixed
//! script in OpenCode's stream format.
//!
//! `pitroom demo --worker <cli>` runs the same stages with the user's real worker CLI instead,
//! pointed (through a provider config in the demo's temporary HOME) at [`model_server`], a
//! scripted model served on 127.0.0.1 from this process: no model, no key, no token spent.
//!
//! - [`stages`]: the stages in order, each with its header and commands;
//! - [`scripts`]: what the scripted worker (and the scripted model) does and answers in each stage;
//! - [`model_server`]: the scripted model, in the OpenAI chat-completions protocol;
//! - [`real`]: the real CLIs `--worker` drives, and their provider configs;
//! - [`run`]: running one child command, bounded in time and stopped on Ctrl-C.

mod model_server;
mod real;
mod run;
mod scripts;
mod stages;
pub(crate) mod worker;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pitroom_core::home::supervisor_alive;
use pitroom_core::{exit, Home};

use crate::output::say;

use crate::cli::DemoArgs;
use crate::output;
use model_server::ModelServer;
use real::RealWorker;
use run::{bounded, Bounded};

const CALC: &str = include_str!("sample/calc.py");
const TESTS: &str = include_str!("sample/test_calc.py");
const README: &str = include_str!("sample/README.md");

/// The model name the records show: there is no model.
const MODEL: &str = "pitroom/scripted";
/// How long one child command may take before it is stopped.
const LIMIT: Duration = Duration::from_secs(60);
/// `watch` has a `--timeout 60` of its own; this bound is only the backstop.
const WATCH_LIMIT: Duration = Duration::from_secs(75);
/// A real CLI starts slower than the scripted worker (a cold start of Node or Bun, its own
/// database), and a crew runs three at once: the bounds with `--worker`.
const REAL_LIMIT: Duration = Duration::from_secs(240);
const REAL_WATCH_LIMIT: Duration = Duration::from_secs(255);

/// The user's own uncommitted edit, which no worker patch may contain.
const OWN_EDIT: &str = "\nMy notes (uncommitted): check divide() before the release.\n";

/// Set by SIGINT, SIGTERM or SIGHUP: the running command is stopped and the demo cleans up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

pub(crate) fn demo(args: DemoArgs) -> i32 {
    let started = Instant::now();
    // SAFETY: installed at start-up; the handler only stores to an atomic (async-signal-safe).
    // Child processes start with default dispositions (the standard library resets SIGPIPE).
    unsafe {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(
                signal,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let real = match args.worker.as_deref().map(RealWorker::find).transpose() {
        Ok(real) => real,
        Err((code, why)) => {
            output::error(why);
            return code;
        }
    };
    let mut demo = match Demo::set_up(real) {
        Ok(d) => d,
        Err(why) => {
            output::error(format!("demo: {why}"));
            return exit::REFUSED;
        }
    };
    demo.intro();
    let outcome = demo.stages();
    let code = match &outcome {
        Ok(()) => {
            what_next(demo.real.as_ref().map(|r| r.worker.backend));
            exit::OK
        }
        Err(why) => {
            output::error(format!("demo: {why}"));
            if INTERRUPTED.load(Ordering::SeqCst) {
                130
            } else {
                1
            }
        }
    };
    if args.keep {
        demo.kept();
    } else {
        demo.clean_up();
    }
    let took = started.elapsed().as_secs_f64();
    match outcome {
        Ok(()) => say!("\npitroom demo: done in {took:.1}s"),
        Err(_) => say!("\npitroom demo: stopped after {took:.1}s"),
    }
    code
}

/// The demo's temporary world.
struct Demo {
    root: PathBuf,
    /// The HOME (and XDG dirs under it) of the demo's commands with `--worker`.
    home_dir: PathBuf,
    project: PathBuf,
    state: PathBuf,
    scripts: PathBuf,
    logs: PathBuf,
    config: PathBuf,
    gitconfig: PathBuf,
    worker: PathBuf,
    exe: PathBuf,
    commands: usize,
    stage: String,
    /// With `--worker`: the real CLI and the scripted model it talks to.
    real: Option<Real>,
}

/// The real CLI of `--worker`, the scripted model server it is pointed at, and the variables
/// that point it there.
struct Real {
    worker: RealWorker,
    server: ModelServer,
    env: Vec<(String, String)>,
}

impl Demo {
    /// Makes the temporary directories, the worker link (or, for a real CLI, the scripted
    /// model server and the CLI's config), and the sample repository.
    fn set_up(real: Option<RealWorker>) -> Result<Demo, String> {
        let exe = std::env::current_exe().map_err(|e| {
            format!("could not find the pitroom binary itself ({e}); run it by its full path")
        })?;
        let root = crate::commands::fresh_temp_dir("pitroom-demo-")?;
        let mut demo = Demo {
            home_dir: root.join("home"),
            project: root.join("calc"),
            state: root.join("state"),
            scripts: root.join("scripts"),
            logs: root.join("logs"),
            config: root.join("config.toml"),
            gitconfig: root.join("gitconfig"),
            worker: root.join("bin").join(worker::WORKER_NAME),
            root,
            exe,
            commands: 0,
            stage: String::new(),
            real: None,
        };
        if let Err(why) = demo.lay_out().and_then(|()| demo.connect(real)) {
            if let Err(e) = std::fs::remove_dir_all(&demo.root) {
                output::warning(format!("could not remove {}: {e}", demo.root.display()));
            }
            return Err(why);
        }
        Ok(demo)
    }

    fn lay_out(&self) -> Result<(), String> {
        for dir in [&self.project, &self.state, &self.scripts, &self.logs] {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        }
        if let Some(bin) = self.worker.parent() {
            std::fs::create_dir_all(bin)
                .map_err(|e| format!("could not create {}: {e}", bin.display()))?;
        }
        std::os::unix::fs::symlink(&self.exe, &self.worker).map_err(|e| {
            format!(
                "could not link the scripted worker {} to {}: {e}",
                self.worker.display(),
                self.exe.display()
            )
        })?;
        write(
            &self.config,
            "# pitroom demo: an empty config of its own, so yours is not used.\n",
        )?;
        write(&self.gitconfig, "")?;
        write(&self.project.join("calc.py"), CALC)?;
        write(&self.project.join("test_calc.py"), TESTS)?;
        write(&self.project.join("README.md"), README)?;
        self.git(&["init", "-q"])?;
        self.git(&["add", "-A"])?;
        self.git(&["commit", "-q", "-m", "calc: the sample project"])?;
        write(
            &self.project.join("README.md"),
            &format!("{README}{OWN_EDIT}"),
        )
    }

    /// With a real CLI: starts the scripted model server and writes the CLI's config into the
    /// demo's HOME.
    fn connect(&mut self, real: Option<RealWorker>) -> Result<(), String> {
        let Some(worker) = real else {
            return Ok(());
        };
        for dir in [".config", ".local/share", ".local/state", ".cache"] {
            let dir = self.home_dir.join(dir);
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        }
        let server = ModelServer::start()?;
        let env = worker.configure(&self.home_dir.join(".config"), &server)?;
        self.real = Some(Real {
            worker,
            server,
            env,
        });
        Ok(())
    }

    /// How long one command may take, and `watch`'s backstop.
    fn limits(&self) -> (Duration, Duration) {
        if self.real.is_some() {
            (REAL_LIMIT, REAL_WATCH_LIMIT)
        } else {
            (LIMIT, WATCH_LIMIT)
        }
    }

    /// Runs git in the sample project, with no user or system config.
    fn git(&self, args: &[&str]) -> Result<(), String> {
        let mut cmd = Command::new("git");
        cmd.args([
            "-c",
            "user.name=pitroom-demo",
            "-c",
            "user.email=demo@pitroom.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(&self.project);
        self.hermetic(&mut cmd);
        let log = self.logs.join("git.log");
        let (status, text) = bounded(cmd, &log, LIMIT).map_err(|e| match e {
            Bounded::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                "git was not found on PATH; the demo needs git (install it, e.g. apt install git)"
                    .to_string()
            }
            other => format!("git {}: {}", args.join(" "), other.describe()),
        })?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "git {} failed ({status}): {}",
                args.join(" "),
                text.trim()
            ))
        }
    }

    /// Keeps the user's own settings out: git's global and system config and every `GIT_*`
    /// variable (but where git's helpers live), every `PITROOM_*`.
    fn hermetic(&self, cmd: &mut Command) {
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with(pitroom_env::PREFIX) || (k.starts_with("GIT_") && k != "GIT_EXEC_PATH")
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("GIT_CONFIG_GLOBAL", &self.gitconfig)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1");
    }

    /// The environment of a `pitroom` command: the demo's state dir, config and worker. A real
    /// CLI gets the demo's HOME and XDG dirs, where its config points it at the scripted model,
    /// and none of the user's own settings for it.
    fn env(&self, cmd: &mut Command, script: Option<&Path>) {
        self.hermetic(cmd);
        cmd.env(pitroom_env::PITROOM_HOME, &self.state)
            .env(pitroom_env::PITROOM_CONFIG, &self.config);
        let Some(real) = &self.real else {
            cmd.env(pitroom_env::worker_bin("opencode"), &self.worker);
            if let Some(script) = script {
                cmd.env(worker::SCRIPT_ENV, script);
            }
            return;
        };
        for (key, _) in std::env::vars_os() {
            if real::is_worker_setting(&key.to_string_lossy()) {
                cmd.env_remove(&key);
            }
        }
        let home = &self.home_dir;
        cmd.env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env(real.worker.bin_var(), &real.worker.bin)
            .envs(real.env.iter().map(|(k, v)| (k, v)));
    }

    fn intro(&self) {
        if let Some(real) = &self.real {
            self.intro_real(real);
            return;
        }
        let name = worker::WORKER_NAME;
        say!(
            "pitroom demo: the real pitroom commands on a sample project, with a scripted worker."
        );
        say!("Only the worker is a stand-in: this binary, started as {name}, replays");
        say!("a fixed script in OpenCode's stream format. No model, no key, nothing leaves this machine.");
        self.say_places();
        say!(
            "  worker          PITROOM_OPENCODE_BIN={}",
            self.worker.display()
        );
        say!("  config          PITROOM_CONFIG={}", self.config.display());
    }

    /// The sample project and the state dir, as both intros show them.
    fn say_places(&self) {
        say!();
        say!("  sample project  {}", self.project.display());
        say!(
            "                  (a git repository; README.md has an uncommitted edit of \"yours\")"
        );
        say!(
            "  state dir       PITROOM_HOME={}  (your own runs are not touched)",
            self.state.display()
        );
    }

    fn intro_real(&self, real: &Real) {
        let cli = real.worker.backend;
        say!("pitroom demo: the real pitroom commands on a sample project, with your real {cli} as the worker.");
        say!("Only the model is a stand-in: a scripted model server in this process, on 127.0.0.1, answers");
        say!("{cli} from a fixed script. Not a model: no key, no token spent.");
        self.say_places();
        say!(
            "  worker          {}={}  (the real CLI)",
            real.worker.bin_var(),
            real.worker.bin.display()
        );
        let url = match real.worker.backend {
            "claude" => real.server.anthropic_url(),
            _ => real.server.base_url(),
        };
        say!(
            "  model           {} at {url}  (scripted, not a model)",
            real.worker.model()
        );
        say!(
            "  worker's HOME   HOME={}  (its config and state; yours are not touched)",
            self.home_dir.display()
        );
        say!("  config          PITROOM_CONFIG={}", self.config.display());
    }

    fn kept(&mut self) {
        self.settle();
        say!();
        say!("Kept (--keep):");
        say!("  sample project  {}", self.project.display());
        say!("  state dir       PITROOM_HOME={}", self.state.display());
        say!("Look around with:");
        say!("  PITROOM_HOME={} pitroom ls", self.state.display());
        say!(
            "  PITROOM_HOME={} pitroom show last --full",
            self.state.display()
        );
        say!("Remove it all with: rm -rf {}", self.root.display());
    }

    /// Waits (at most a few seconds) until no run's supervisor is alive, so nothing writes into
    /// the state dir while it is removed; a run still going then is stopped.
    fn settle(&mut self) {
        let left = self.wait_for_supervisors(Duration::from_secs(5));
        if left.is_empty() {
            return;
        }
        for id in &left {
            self.commands += 1;
            let log = self.logs.join(format!("{:02}-stop.log", self.commands));
            let mut cmd = Command::new(&self.exe);
            cmd.args(["stop", id.as_str()]).current_dir(&self.project);
            self.env(&mut cmd, None);
            let _ = bounded(cmd, &log, Duration::from_secs(10));
        }
        self.wait_for_supervisors(Duration::from_secs(3));
    }

    /// Waits at most `limit` until no run's supervisor is alive; returns the runs whose
    /// supervisor still is.
    fn wait_for_supervisors(&self, limit: Duration) -> Vec<String> {
        let home = self.home();
        let deadline = Instant::now() + limit;
        loop {
            let left: Vec<String> = home
                .run_ids()
                .into_iter()
                .filter(|id| home.load(id).is_ok_and(|r| supervisor_alive(&home, &r)))
                .collect();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The demo's state dir, as the commands it runs see it.
    fn home(&self) -> Home {
        let state = self.state.display().to_string();
        Home::locate(&|k: &str| (k == pitroom_env::PITROOM_HOME).then(|| state.clone()))
    }

    fn clean_up(&mut self) {
        self.settle();
        if let Err(e) = std::fs::remove_dir_all(&self.root) {
            output::warning(format!(
                "could not remove the demo's directory {}: {e}; remove it by hand",
                self.root.display()
            ));
        }
    }
}

fn what_next(real: Option<&str>) {
    say!();
    if let Some(cli) = real {
        say!("What next: {cli} with its own model on your own code");
        say!("  pitroom doctor                  # checks git, the state dir, the worker CLIs, the safety layers");
        say!("  cd your-project && pitroom -W {cli} \"Where can divide fail?\"");
        return;
    }
    say!("What next: a real worker on your own code");
    say!("  npm i -g opencode-ai            # OpenCode, the default worker; its free models need no key");
    say!("  pitroom doctor                  # checks git, the state dir, the worker CLIs, the safety layers");
    say!("  cd your-project && pitroom \"Where can divide fail?\"");
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("could not write {}: {e}", path.display()))
}
