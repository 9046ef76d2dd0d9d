//! `pitroom run` (and a bare task), plus the hidden background supervisor.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use pitroom_core::config::{Config, FlagValues, Source};
use pitroom_core::duration::parse_duration;
use pitroom_core::home::WriterLock;
use pitroom_core::slots::Ticket;
use pitroom_core::target::Target;
use pitroom_core::{exit, report, Engine, Prepared, RunRecord, RunSpec, Silent};
use pitroom_workers::{Mode, WorkerDef};

use crate::cli::{ModelsArgs, RunArgs, SuperviseArgs};
use crate::output::{self, Progress};

pub(super) fn engine() -> Result<Engine, i32> {
    let exe = std::env::current_exe().map_err(|e| {
        output::error(format!("cannot find the pitroom executable itself: {e}"));
        exit::REFUSED
    })?;
    Ok(Engine {
        home: super::home(),
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
        exe,
    })
}

pub fn run(args: RunArgs) -> i32 {
    match build_spec(&args) {
        Ok(spec) => start(spec, args.bg, args.json),
        Err(code) => code,
    }
}

fn start(spec: RunSpec, background: bool, json: bool) -> i32 {
    let engine = match engine() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let prepared = match engine.prepare(spec) {
        Ok(p) => p,
        Err(e) => {
            output::error(&e);
            return e.exit_code();
        }
    };
    if background {
        // No report will follow: say now what the report would have said.
        for w in &prepared.record.warnings {
            output::warning(w);
        }
        return match engine.spawn_background(prepared) {
            Ok(record) => {
                print_started(&record, json);
                exit::OK
            }
            Err(e) => {
                output::error(&e);
                e.exit_code()
            }
        };
    }
    let mut progress = Progress::new(!json);
    let mut record = engine.execute(prepared, &mut progress);
    progress.finish();
    super::history::settle_run(&engine.home, &mut record);
    if json {
        output::json(&record);
    } else {
        print!("{}", report::render(&record, output::stdout_color()));
    }
    record.exit_code()
}

fn print_started(record: &RunRecord, json: bool) {
    if json {
        output::json(record);
    } else {
        println!("{}", record.id);
        eprintln!(
            "pitroom: started run {id} in the background; follow it with: pitroom wait {id}   (or: pitroom status {id})",
            id = record.id
        );
    }
}

/// Turns flags, environment and config into a run specification.
pub(super) fn build_spec(args: &RunArgs) -> Result<RunSpec, i32> {
    if let Some(t) = &args.timeout {
        if let Err(why) = parse_duration(t) {
            output::error(format!("-t {why}"));
            return Err(exit::USAGE);
        }
    }
    let mut flags = FlagValues::default();
    if let Some(w) = &args.worker {
        flags.set("worker", "-W", w);
    }
    if let Some(m) = &args.model {
        flags.set("model", "-m", m);
    }
    if let Some(t) = &args.timeout {
        flags.set("timeout", "-t", t);
    }
    if args.web {
        flags.set("web", "--web", "true");
    }
    if !args.link.is_empty() {
        flags.set("link", "--link", args.link.join(","));
    }
    let config = Config::load(&super::env_lookup, &flags).map_err(|e| {
        output::error(e);
        exit::REFUSED
    })?;
    for w in &config.warnings {
        output::warning(w);
    }
    let task = read_task(args)?;
    let custom = custom_workers(&config);
    let parent = match &args.continue_run {
        Some(given) => Some(load_parent(given)?),
        None => None,
    };
    let requested_mode = if args.write {
        Some(Mode::Write)
    } else if args.isolate {
        Some(Mode::Isolate)
    } else if args.read {
        Some(Mode::Read)
    } else {
        None
    };
    let (mode, backend, model, effort, dir) = match &parent {
        Some(p) => {
            if requested_mode.is_some_and(|m| m != p.spec.mode) {
                output::error(format!(
                    "a follow-up keeps the rules of run {}: it is a {} run",
                    p.id,
                    p.spec.mode.as_str()
                ));
                return Err(exit::USAGE);
            }
            (
                p.spec.mode,
                p.spec.backend.clone(),
                args.model.clone().or_else(|| p.spec.model.clone()),
                args.effort.clone().or_else(|| p.spec.effort.clone()),
                p.spec.dir.clone(),
            )
        }
        None => {
            let target = resolve_target(&config, args.tier.as_deref(), &custom)?;
            let dir = resolve_dir(args.dir.as_ref())?;
            (
                requested_mode.unwrap_or(Mode::Read),
                target.backend,
                target.model,
                args.effort.clone().or(target.effort),
                dir,
            )
        }
    };
    let parent_id = parent.map(|p| p.id);
    Ok(RunSpec {
        task,
        mode,
        backend,
        model,
        effort,
        web: config.flag("web"),
        dir,
        timeout_secs: config
            .duration("timeout")
            .map(|d| d.as_secs_f64())
            .unwrap_or(1800.0),
        watchdog_secs: config
            .duration("watchdog")
            .map(|d| d.as_secs_f64())
            .unwrap_or(60.0),
        background: args.bg,
        allow_non_git: args.allow_non_git,
        parent: parent_id.clone(),
        primary: config.text("primary").unwrap_or_else(|| "sonnet".into()),
        price: config.text("price"),
        group: args.group.clone(),
        link: if mode == Mode::Isolate {
            config.list("link")
        } else {
            Vec::new()
        },
        verify: args.verify.clone(),
        verify_timeout_secs: config
            .duration("verify_timeout")
            .map(|d| d.as_secs_f64())
            .unwrap_or(900.0),
        fallback: if args.no_fallback || parent_id.is_some() {
            // A follow-up continues one worker's session: it never moves to another.
            Vec::new()
        } else {
            fallback_targets(&config, &custom)
        },
        custom_workers: custom,
        sandbox_writable: config
            .list("sandbox_writable")
            .iter()
            .map(|p| expand_home(p))
            .collect(),
        max_parallel: config
            .count("max_parallel")
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(pitroom_core::slots::DEFAULT_MAX_PARALLEL),
    })
}

/// The CLIs described in the config (`[workers.<name>]`). A section that does not parse is
/// skipped with a warning naming the field; one that shadows a built-in worker is ignored.
fn custom_workers(config: &Config) -> BTreeMap<String, WorkerDef> {
    let mut workers = BTreeMap::new();
    for (name, value) in config.table("workers") {
        if pitroom_workers::KNOWN_BACKENDS.contains(&name.as_str()) {
            output::warning(format!(
                "[workers.{name}] ignored: {name} is a built-in worker; pick another name"
            ));
            continue;
        }
        match WorkerDef::from_value(&name, &value) {
            Ok(def) => {
                workers.insert(name, def);
            }
            Err(why) => output::warning(format!("{why}; that worker is unavailable")),
        }
    }
    workers
}

/// The worker target with its model: flag > environment > file, and the per-backend default
/// model from `models` last (none means the CLI's own default).
fn resolve_target(
    config: &Config,
    tier: Option<&str>,
    custom: &BTreeMap<String, WorkerDef>,
) -> Result<Target, i32> {
    let worker_is_flag = matches!(config.source("worker"), Source::Flag(_));
    let tiered = match tier {
        Some(name) if !worker_is_flag => Some(config.map_value("tiers", name).ok_or_else(|| {
            output::error(format!(
                "no tier `{name}` in the config; define it, e.g. [tiers] {name} = \"opencode:provider/model\" (see pitroom config)"
            ));
            exit::USAGE
        })?),
        _ => None,
    };
    let worker = tiered
        .or_else(|| config.text("worker"))
        .unwrap_or_else(|| "opencode".into());
    let names: Vec<&str> = custom.keys().map(String::as_str).collect();
    let mut target = Target::parse_known(&worker, "opencode", &names).map_err(|e| {
        output::error(e);
        exit::USAGE
    })?;
    let model = config.text("model");
    let explicit_target = worker_is_flag || tier.is_some();
    target.model = match config.source("model") {
        Source::Flag(_) => model,
        _ if explicit_target && target.model.is_some() => target.model,
        _ if model.is_some() => model,
        _ => target
            .model
            .or_else(|| config.map_value("models", &target.backend)),
    };
    Ok(target)
}

/// The configured fallback targets, each with its backend's default model from `models`;
/// targets that do not parse are skipped with a warning.
fn fallback_targets(config: &Config, custom: &BTreeMap<String, WorkerDef>) -> Vec<String> {
    let names: Vec<&str> = custom.keys().map(String::as_str).collect();
    let mut targets = Vec::new();
    for given in config.list("fallback") {
        match Target::parse_known(&given, "opencode", &names) {
            Ok(mut t) => {
                if t.model.is_none() {
                    t.model = config.map_value("models", &t.backend);
                }
                targets.push(t.display());
            }
            Err(why) => output::warning(format!("fallback target `{given}` skipped: {why}")),
        }
    }
    targets
}

/// `~/x` → `$HOME/x`, for paths in the config.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

fn resolve_dir(given: Option<&PathBuf>) -> Result<PathBuf, i32> {
    let dir = match given {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| {
            output::error(format!("cannot read the current directory: {e}"));
            exit::REFUSED
        })?,
    };
    dir.canonicalize().map_err(|e| {
        output::error(format!(
            "{}: {e}; pass an existing directory with -d",
            dir.display()
        ));
        exit::USAGE
    })
}

fn load_parent(given: &str) -> Result<RunRecord, i32> {
    let home = super::home();
    let id = home.resolve(Some(given)).map_err(|e| {
        output::error(e);
        exit::USAGE
    })?;
    let parent = home.load_settled(&id).map_err(|e| {
        output::error(e);
        exit::REFUSED
    })?;
    if parent.state.is_active() {
        output::error(format!(
            "run {id} is still running; wait for it first: pitroom wait {id}"
        ));
        return Err(exit::REFUSED);
    }
    if parent.session.is_none() {
        output::error(format!(
            "run {id} has no worker session to continue (the worker never started one)"
        ));
        return Err(exit::REFUSED);
    }
    Ok(parent)
}

/// The task from argv, `--task-file`, or stdin when it is exactly `-`.
fn read_task(args: &RunArgs) -> Result<String, i32> {
    let task = if let Some(file) = &args.task_file {
        std::fs::read_to_string(file).map_err(|e| {
            output::error(format!("--task-file {}: {e}", file.display()));
            exit::USAGE
        })?
    } else if args.task.len() == 1 && args.task[0] == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            output::error(format!("reading the task from stdin: {e}"));
            exit::USAGE
        })?;
        text
    } else {
        args.task.join(" ")
    };
    if task.trim().is_empty() {
        output::error(
            "the task is empty; give it as an argument, with --task-file, or as - to read stdin",
        );
        return Err(exit::USAGE);
    }
    Ok(task)
}

/// `pitroom __supervise ID`: carries out a run prepared by `run --bg`.
pub fn supervise(args: SuperviseArgs) -> i32 {
    let engine = match engine() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let record = match engine.home.load(&args.id) {
        Ok(r) => r,
        Err(e) => {
            output::error(e);
            return exit::REFUSED;
        }
    };
    // SAFETY: the descriptor was handed down by `run --bg` for exactly this purpose.
    let lock = args
        .lock_fd
        .map(|fd| unsafe { WriterLock::from_raw_fd(fd) });
    let ticket = args.ticket_fd.map(|fd| {
        let slots = engine.slots(&record.spec);
        // SAFETY: the descriptor was handed down by the process that queued the run.
        unsafe { Ticket::from_raw_fd(fd, &slots, &record.id) }
    });
    let record = engine.execute(
        Prepared {
            record,
            lock,
            ticket,
        },
        &mut Silent,
    );
    let mut record = record;
    super::history::settle_run(&engine.home, &mut record);
    record.exit_code()
}

/// `pitroom models [worker]`: what the worker's CLI offers.
pub fn models(args: ModelsArgs) -> i32 {
    let config = match Config::load(&super::env_lookup, &FlagValues::default()) {
        Ok(c) => c,
        Err(e) => {
            output::error(e);
            return exit::REFUSED;
        }
    };
    if args.all {
        return all_models(args.json);
    }
    let worker = args
        .worker
        .or_else(|| config.text("worker"))
        .unwrap_or_else(|| "opencode".into());
    let backend = match Target::parse(&worker, "opencode") {
        Ok(t) => t.backend,
        Err(e) => {
            output::error(e);
            return exit::USAGE;
        }
    };
    let engine = match engine() {
        Ok(e) => e,
        Err(code) => return code,
    };
    match engine.list_models(&backend) {
        Ok(models) => {
            super::history::print_models(&backend, &models, args.json);
            exit::OK
        }
        Err(e) => {
            output::error(&e);
            e.exit_code()
        }
    }
}

/// `pitroom models --all`: every backend with an adapter, its models as its CLI lists them, or
/// the reason it cannot (not installed, no listing). Exit 0 as long as the listing itself ran.
fn all_models(json: bool) -> i32 {
    let engine = match engine() {
        Ok(e) => e,
        Err(code) => return code,
    };
    let mut rows = Vec::new();
    for backend in pitroom_workers::KNOWN_BACKENDS {
        let listed = engine.list_models(backend);
        if json {
            rows.push(match listed {
                Ok(models) => serde_json::json!({"worker": backend, "models": models}),
                Err(e) => {
                    serde_json::json!({"worker": backend, "models": [], "error": e.to_string()})
                }
            });
        } else {
            match listed {
                Ok(models) => super::history::print_models(backend, &models, false),
                Err(e) => println!("{backend}: {e}"),
            }
        }
    }
    if json {
        output::json(&serde_json::json!({"workers": rows}));
    }
    exit::OK
}
