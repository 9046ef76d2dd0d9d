//! A run request from any front end, and its resolution into a `RunSpec`: flags over the
//! environment over the config file over the defaults of `pitroom_core::config`'s key table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_core::budget::{dollars, Budget};
use pitroom_core::config::{Config, FlagValues, Source};
use pitroom_core::duration::parse_duration;
use pitroom_core::receipt::WorkerPrices;
use pitroom_core::record::ChainTarget;
use pitroom_core::slots::Lane;
use pitroom_core::target::Target;
use pitroom_core::RunSpec;
use pitroom_workers::{Mode, WorkerDef};

use crate::{Service, ServiceError};

/// The backend a target without one names.
pub const DEFAULT_BACKEND: &str = "opencode";

/// What a front end asks for: the CLI's `run` flags, an MCP `pitroom_run` call's arguments.
/// `None` means "as configured".
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub task: String,
    pub mode: Option<Mode>,
    /// `backend[:model][#effort]`.
    pub worker: Option<String>,
    pub model: Option<String>,
    pub tier: Option<String>,
    pub effort: Option<String>,
    /// The directory to work in; `None` is the process's current directory.
    pub dir: Option<PathBuf>,
    /// A duration (`90`, `20m`, `1h`).
    pub timeout: Option<String>,
    pub web: bool,
    pub background: bool,
    /// The run to follow up (an id, a prefix or `last`).
    pub continue_run: Option<String>,
    pub allow_non_git: bool,
    pub group: Option<String>,
    pub link: Vec<String>,
    pub verify: Option<String>,
    /// `--attempts`: rounds the worker gets to make `verify` pass.
    pub attempts: Option<u32>,
    pub no_fallback: bool,
    /// `--no-hold`: start even when every target is cooling down, rather than wait.
    pub no_hold: bool,
    /// Files to attach (`-f`): relative ones are taken from the run's directory.
    pub files: Vec<PathBuf>,
    /// The plan step this run carries out: the plan file and the step's number.
    pub plan: Option<(PathBuf, u32)>,
    /// `--max-usd`: the run's own spending cap in USD.
    pub max_usd: Option<f64>,
    /// `--max-tokens`: the run's own cap in worker tokens.
    pub max_tokens: Option<u64>,
    /// `crew --max-usd`: the cap of the whole crew (the run's group) in USD.
    pub crew_max_usd: Option<f64>,
    /// `crew --max-tokens`: the cap of the whole crew in worker tokens.
    pub crew_max_tokens: Option<u64>,
}

/// A resolved request: the spec, and what the caller should show as warnings (bad config
/// entries, ignored worker sections).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub spec: RunSpec,
    pub warnings: Vec<String>,
}

impl Service {
    /// The effective configuration with `flags` on top, and the warnings it raised.
    pub fn config(&self, flags: &FlagValues) -> Result<Config, ServiceError> {
        Config::load(&|name| self.env_var(name), flags)
            .map_err(|e| ServiceError::refused(e.to_string()))
    }

    /// Turns a request into a run specification.
    pub fn resolve(&self, request: &RunRequest) -> Result<Resolved, ServiceError> {
        if let Some(t) = &request.timeout {
            parse_duration(t).map_err(|why| ServiceError::usage(format!("-t {why}")))?;
        }
        let config = self.config(&flag_values(request))?;
        let mut warnings = config.warnings.clone();
        let (plan_ref, task, plan_tier) = match &request.plan {
            Some((path, number)) => {
                let (plan_ref, task, worker) =
                    crate::plan::step_task(path, *number, &request.task)?;
                let tier = worker.filter(|tier| {
                    let known = config.map_value("tiers", tier).is_some();
                    if !known {
                        warnings.push(format!(
                            "the plan asks for the `{tier}` worker, but the config has no such tier; using the default worker ([tiers] {tier} = \"backend:model\")"
                        ));
                    }
                    known
                });
                (Some(plan_ref), task, tier)
            }
            None => (None, request.task.clone(), None),
        };
        pitroom_core::run::check_task(&task)?;
        let tier = request.tier.clone().or(if request.worker.is_none() {
            plan_tier
        } else {
            None
        });
        let custom = custom_workers(&config, &mut warnings);
        let parent = match &request.continue_run {
            Some(given) => Some(self.continuable(given)?),
            None => None,
        };
        let (mode, backend, model, effort, dir) = match &parent {
            Some(p) => {
                if request.mode.is_some_and(|m| m != p.spec.mode) {
                    return Err(ServiceError::usage(format!(
                        "a follow-up keeps the rules of run {}: it is a {} run",
                        p.id,
                        p.spec.mode.as_str()
                    )));
                }
                (
                    p.spec.mode,
                    // The session it continues is the last target's that ran.
                    p.backend().to_string(),
                    request
                        .model
                        .clone()
                        .or_else(|| p.model().map(str::to_string)),
                    request.effort.clone().or_else(|| p.spec.effort.clone()),
                    p.spec.dir.clone(),
                )
            }
            None => {
                let target = resolve_target(&config, tier.as_deref(), &custom)?;
                (
                    request.mode.unwrap_or(Mode::Read),
                    target.backend,
                    target.model,
                    request.effort.clone().or(target.effort),
                    resolve_dir(request.dir.as_deref())?,
                )
            }
        };
        let attachments = attachments(&request.files, &dir)?;
        let parent_id = parent.map(|p| p.id);
        let fallback = if request.no_fallback || parent_id.is_some() {
            // A follow-up continues one worker's session: it never moves to another.
            Vec::new()
        } else {
            fallback_targets(&config, &custom, &mut warnings)
        };
        // Every duration and text below has its default in the config's key table (which a
        // test holds usable): a value is always there.
        let limit = |key: &str| config.duration(key).unwrap_or_default();
        let lane = lane_of(&config, &backend, model.as_deref(), &mut warnings);
        let spec = RunSpec {
            task,
            mode,
            backend,
            model,
            effort,
            web: config.flag("web"),
            dir,
            timeout: limit("timeout"),
            watchdog: limit("watchdog"),
            background: request.background,
            allow_non_git: request.allow_non_git,
            parent: parent_id,
            primary: config.text("primary").unwrap_or_default(),
            price: config.text("price"),
            // Bad entries are reported with the config's other warnings.
            worker_prices: Some(WorkerPrices::from_config(&config).0),
            group: request.group.clone(),
            link: if mode == Mode::Isolate {
                config.list("link")
            } else {
                Vec::new()
            },
            verify: request.verify.clone(),
            verify_timeout: limit("verify_timeout"),
            attempts: repair_rounds(&config, request, mode)?,
            max_hold: if request.no_hold {
                Duration::ZERO
            } else {
                limit("max_hold")
            },
            fallback,
            custom_workers: custom,
            sandbox_writable: config
                .list("sandbox_writable")
                .iter()
                .map(|p| expand_home(p, self.env_var("HOME")))
                .collect(),
            max_parallel: config
                .count("max_parallel")
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(pitroom_core::slots::DEFAULT_MAX_PARALLEL),
            lane,
            attachments,
            review_of: None,
            plan: plan_ref,
            race: false,
            // A foreground run's report is the news; a background one tells when it ends.
            notify: request.background && config.flag("notify"),
            budget: self.budget(&config, request)?,
        };
        Ok(Resolved { spec, warnings })
    }

    /// The parent of a follow-up: finished, and with a worker session to continue.
    fn continuable(&self, given: &str) -> Result<pitroom_core::RunRecord, ServiceError> {
        let parent = self.load(Some(given))?;
        let id = &parent.id;
        parent.ensure_finished().map_err(ServiceError::refused)?;
        if parent.session.is_none() {
            return Err(ServiceError::refused(format!(
                "run {id} has no worker session to continue (the worker never started one)"
            )));
        }
        Ok(parent)
    }
}

impl Service {
    /// The caps a run is held to: its flags', its crew's and the config's `budget.daily_usd`,
    /// with today's spend so far. A day whose spend has reached its cap refuses the run.
    fn budget(&self, config: &Config, request: &RunRequest) -> Result<Budget, ServiceError> {
        let usd = |flag: &str, given: Option<f64>| match given {
            Some(cap) if !(cap.is_finite() && cap > 0.0) => Err(ServiceError::usage(format!(
                "{flag} {cap}: give a cap in USD above zero, e.g. {flag} 0.50"
            ))),
            _ => Ok(given),
        };
        let tokens = |flag: &str, given: Option<u64>| match given {
            Some(0) => Err(ServiceError::usage(format!(
                "{flag} 0: give a cap above zero, e.g. {flag} 200000"
            ))),
            _ => Ok(given),
        };
        // A wrong flag is the request's fault (exit 2) whatever the day's spend.
        let max_usd = usd("--max-usd", request.max_usd)?;
        let max_tokens = tokens("--max-tokens", request.max_tokens)?;
        let group_max_usd = usd("crew --max-usd", request.crew_max_usd)?;
        let group_max_tokens = tokens("crew --max-tokens", request.crew_max_tokens)?;
        let daily = daily_cap(config)?;
        let spent_today = match daily {
            Some(_) => self.spent_today()?,
            None => 0.0,
        };
        if let Some(cap) = daily.filter(|cap| spent_today >= *cap) {
            return Err(ServiceError::refused(format!(
                "today's spend ({} by the history, UTC) has reached budget.daily_usd ({}); no run starts until tomorrow, unless you raise the cap in your config: budget.daily_usd = N (see pitroom savings)",
                dollars(spent_today),
                dollars(cap)
            )));
        }
        Ok(Budget {
            max_usd,
            max_tokens,
            group_max_usd,
            group_max_tokens,
            daily_usd: daily,
            spent_today_usd: if daily.is_some() { spent_today } else { 0.0 },
        })
    }
}

/// The config's `budget.daily_usd` (the `[budget]` table's `daily_usd`), checked.
pub fn daily_cap(config: &Config) -> Result<Option<f64>, ServiceError> {
    let table = config.table("budget");
    let Some(value) = table.get("daily_usd") else {
        return Ok(None);
    };
    match value.as_f64() {
        Some(cap) if cap.is_finite() && cap > 0.0 => Ok(Some(cap)),
        _ => Err(ServiceError::refused(format!(
            "budget.daily_usd = {value} in the config is not a cap in USD above zero; write e.g. budget.daily_usd = 5.0 (or remove it)"
        ))),
    }
}

/// The targets given for a race or a panel (`a,b,c`), trimmed, each once, in their order.
pub(crate) fn distinct_targets(given: &[String]) -> Vec<String> {
    let mut targets: Vec<String> = Vec::new();
    for target in given.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
        if !targets.iter().any(|t| t == target) {
            targets.push(target.to_string());
        }
    }
    targets
}

/// The most rounds a run may have: each is a full worker session, and a check that fails ten
/// times over is not one more round away from passing.
pub const MAX_ATTEMPTS: u64 = 10;

/// How many rounds the worker gets to make `--verify` pass: the flag's or the config's
/// `attempts`. Only an edit run with a check has rounds to give; `--attempts` anywhere else is
/// refused, while the config's value simply does not apply there.
fn repair_rounds(config: &Config, request: &RunRequest, mode: Mode) -> Result<u32, ServiceError> {
    let rounds = config.count("attempts").unwrap_or(1);
    if !(1..=MAX_ATTEMPTS).contains(&rounds) {
        return Err(ServiceError::usage(format!(
            "attempts must be between 1 and {MAX_ATTEMPTS}, not {rounds}"
        )));
    }
    if let Some(given) = request.attempts.filter(|n| *n > 1) {
        if request.verify.is_none() {
            return Err(ServiceError::usage(format!(
                "--attempts {given} repairs a failed --verify; give the check too: --verify CMD"
            )));
        }
        if !mode.may_edit() {
            return Err(ServiceError::usage(format!(
                "--attempts {given} sends a failed check back for the worker to fix, and a read run cannot change anything; use -w or -i"
            )));
        }
    }
    let applies = request.verify.is_some() && mode.may_edit();
    Ok(if applies { rounds as u32 } else { 1 })
}

/// The request's flags as config overrides, named as the CLI spells them.
fn flag_values(request: &RunRequest) -> FlagValues {
    let mut flags = FlagValues::default();
    if let Some(w) = &request.worker {
        flags.set("worker", "-W", w);
    }
    if let Some(m) = &request.model {
        flags.set("model", "-m", m);
    }
    if let Some(t) = &request.timeout {
        flags.set("timeout", "-t", t);
    }
    if request.web {
        flags.set("web", "--web", "true");
    }
    if !request.link.is_empty() {
        flags.set("link", "--link", request.link.join(","));
    }
    if let Some(n) = request.attempts {
        flags.set("attempts", "--attempts", n.to_string());
    }
    flags
}

/// The CLIs described in the config (`[workers.<name>]`). A section that does not parse is
/// skipped with a warning naming the field; one that shadows a built-in worker is ignored.
pub fn custom_workers(config: &Config, warnings: &mut Vec<String>) -> BTreeMap<String, WorkerDef> {
    let mut workers = BTreeMap::new();
    for (name, value) in config.table("workers") {
        if pitroom_workers::KNOWN_BACKENDS.contains(&name.as_str()) {
            warnings.push(format!(
                "[workers.{name}] ignored: {name} is a built-in worker; pick another name"
            ));
            continue;
        }
        match WorkerDef::from_value(&name, &value) {
            Ok(def) => {
                workers.insert(name, def);
            }
            Err(why) => warnings.push(format!("{why}; that worker is unavailable")),
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
) -> Result<Target, ServiceError> {
    let worker_is_flag = matches!(config.source("worker"), Source::Flag(_));
    let tiered = match tier {
        Some(name) if !worker_is_flag => Some(config.map_value("tiers", name).ok_or_else(|| {
            ServiceError::usage(format!(
                "no tier `{name}` in the config; define it, e.g. [tiers] {name} = \"opencode:provider/model\" (see pitroom config)"
            ))
        })?),
        _ => None,
    };
    let worker = tiered
        .or_else(|| config.text("worker"))
        .unwrap_or_else(|| DEFAULT_BACKEND.into());
    let names: Vec<&str> = custom.keys().map(String::as_str).collect();
    let mut target = Target::parse_known(&worker, DEFAULT_BACKEND, &names)
        .map_err(|e| ServiceError::usage(e.to_string()))?;
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

/// The lane of a run asking for `backend[:model]`: the `max_parallel_per` entry for
/// `backend:model`, else for `backend` (a target of its own wins over its backend's). An entry
/// that is not a count of at least 1 is left out, with a warning.
fn lane_of(
    config: &Config,
    backend: &str,
    model: Option<&str>,
    warnings: &mut Vec<String>,
) -> Option<Lane> {
    let table = config.table("max_parallel_per");
    for (key, value) in &table {
        if value.as_u64().is_none_or(|n| n == 0) {
            warnings.push(format!(
                "max_parallel_per.\"{key}\" = {value} is not a count of at least 1; it is ignored"
            ));
        }
    }
    let exact = model.map(|m| format!("{backend}:{m}"));
    let lane = [exact.as_deref(), Some(backend)]
        .into_iter()
        .flatten()
        .find_map(|key| {
            let slots = table.get(key)?.as_u64().filter(|n| *n > 0)?;
            Some(Lane {
                key: key.to_string(),
                slots: usize::try_from(slots).unwrap_or(usize::MAX),
            })
        });
    lane
}

/// The configured fallback targets, each with its backend's default model from `models`;
/// targets that do not parse are skipped with a warning.
fn fallback_targets(
    config: &Config,
    custom: &BTreeMap<String, WorkerDef>,
    warnings: &mut Vec<String>,
) -> Vec<ChainTarget> {
    let names: Vec<&str> = custom.keys().map(String::as_str).collect();
    let mut targets = Vec::new();
    for given in config.list("fallback") {
        match Target::parse_known(&given, DEFAULT_BACKEND, &names) {
            Ok(mut t) => {
                if t.model.is_none() {
                    t.model = config.map_value("models", &t.backend);
                }
                targets.push(ChainTarget {
                    backend: t.backend,
                    model: t.model,
                });
            }
            Err(why) => warnings.push(format!("fallback target `{given}` skipped: {why}")),
        }
    }
    targets
}

/// `~/x` → `$HOME/x`, for paths in the config.
fn expand_home(path: &str, home: Option<String>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// The attached files, absolute: each must exist, be a file and not look like a secret.
fn attachments(files: &[PathBuf], dir: &Path) -> Result<Vec<PathBuf>, ServiceError> {
    let mut paths = Vec::new();
    for given in files {
        let path = if given.is_absolute() {
            given.clone()
        } else {
            dir.join(given)
        };
        let shown = given.display();
        if pitroom_core::secrets::is_secret_path(&path.to_string_lossy()) {
            return Err(ServiceError::refused(format!(
                "-f {shown} looks like a secret file; it is never handed to a worker"
            )));
        }
        if !path.is_file() {
            return Err(ServiceError::usage(format!(
                "-f {shown}: no such file (relative paths are taken from {}); attach an existing file",
                dir.display()
            )));
        }
        paths.push(path.canonicalize().unwrap_or(path));
    }
    Ok(paths)
}

fn resolve_dir(given: Option<&Path>) -> Result<PathBuf, ServiceError> {
    let dir = match given {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| {
            ServiceError::refused(format!("cannot read the current directory: {e}"))
        })?,
    };
    dir.canonicalize().map_err(|e| {
        ServiceError::usage(format!(
            "{}: {e}; pass an existing directory with -d",
            dir.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_relative_config_path_is_expanded() {
        assert_eq!(
            expand_home("~/.cargo", Some("/home/u".into())),
            PathBuf::from("/home/u/.cargo")
        );
        assert_eq!(
            expand_home("/abs", Some("/home/u".into())),
            PathBuf::from("/abs")
        );
        assert_eq!(expand_home("~/x", None), PathBuf::from("~/x"));
    }

    /// The config of a file holding `toml`, with nothing from the environment or flags.
    fn config_of(toml: &str) -> Config {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.toml");
        std::fs::write(&path, toml).expect("config written");
        let path = path.display().to_string();
        Config::load(
            &|name| (name == "PITROOM_CONFIG").then(|| path.clone()),
            &FlagValues::default(),
        )
        .expect("loads")
    }

    #[test]
    fn the_daily_cap_is_a_number_above_zero_in_the_budget_table() {
        assert_eq!(daily_cap(&config_of("")).ok(), Some(None));
        for (toml, cap) in [
            ("[budget]\ndaily_usd = 5.5\n", 5.5),
            ("budget.daily_usd = 2\n", 2.0),
        ] {
            assert_eq!(daily_cap(&config_of(toml)).ok(), Some(Some(cap)), "{toml}");
        }
        for bad in [
            "budget.daily_usd = 0\n",
            "budget.daily_usd = -1.0\n",
            "budget.daily_usd = \"5\"\n",
        ] {
            let refused = daily_cap(&config_of(bad)).expect_err(bad).to_string();
            assert!(
                refused.contains("write e.g. budget.daily_usd = 5.0"),
                "{refused}"
            );
        }
    }

    #[test]
    fn fallback_targets_are_resolved_once_with_their_models_and_a_typo_is_skipped_with_why() {
        let config = config_of(
            "fallback = [\"codex\", \"ollama/qwen3:8b\", \"cladue\", \"claude:sonnet#high\"]\n[models]\ncodex = \"gpt-5\"\n",
        );
        let mut warnings = Vec::new();
        let targets = fallback_targets(&config, &BTreeMap::new(), &mut warnings);
        let shown: Vec<String> = targets.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["codex:gpt-5", "opencode:ollama/qwen3:8b", "claude:sonnet"]
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("fallback target `cladue` skipped: "),
            "{warnings:?}"
        );
    }

    #[test]
    fn request_flags_override_the_config_under_the_cli_spelling() {
        let request = RunRequest {
            worker: Some("codex".into()),
            timeout: Some("90s".into()),
            link: vec!["node_modules".into(), "target".into()],
            ..RunRequest::default()
        };
        let flags = flag_values(&request);
        assert!(flags.values.contains(&("worker", "-W", "codex".into())));
        assert!(flags.values.contains(&("timeout", "-t", "90s".into())));
        assert!(flags
            .values
            .contains(&("link", "--link", "node_modules,target".into())));
    }
}
