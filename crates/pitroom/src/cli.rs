//! The command line, as clap sees it.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// `--help`'s epilogue: the exit codes (from the one table in `pitroom_core::exit`) and the
/// bare-task shorthand.
fn after_help() -> String {
    format!(
        "{}\nA bare task means `run`: pitroom \"Which files read the session cookie?\"",
        pitroom_core::exit::table()
    )
}

/// The program's name as clap prints it (`--version`, usage lines).
const NAME: &str = "pitroom";

/// What `pitroom --version` (or `-V`) on its own prints, without building the command tree:
/// clap builds the whole tree for it (twice, with [`with_default_command`]), which is most of
/// the user-space time of that call. Other arguments (`run --version` included) are clap's.
/// A test holds this line to clap's own.
pub(crate) fn version_only(args: &[OsString]) -> Option<String> {
    match args {
        [_, flag] if flag == "--version" || flag == "-V" => {
            Some(format!("{NAME} {}\n", env!("CARGO_PKG_VERSION")))
        }
        _ => None,
    }
}

#[derive(Debug, Parser)]
#[command(
    name = NAME,
    version,
    about = "Hand bounded work to cheap worker agent CLIs; get back a verified answer, the exact diff and a receipt.",
    after_help = after_help(),
    propagate_version = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Start one worker on a task and print its report (foreground unless --bg).
    Run(Box<RunArgs>),
    /// Start several background runs as one group (one per task); follow with watch/wait -g.
    Crew(Box<CrewArgs>),
    /// Follow runs live: a table for people, one JSON object per line for agents (--json).
    Watch(WatchArgs),
    /// Show a run: its report, or its raw events, patch or record.
    Show(ShowArgs),
    /// List recent runs.
    Ls(LsArgs),
    /// A run's progress or final report, or a group's table. Exit 75 while any is still running.
    Status(StatusArgs),
    /// Block until runs are done (at most --timeout); exit 75 if any is still running.
    Wait(WaitArgs),
    /// Undo exactly a write run's edits (checked first; refused if the files changed since).
    Revert(RunRefArgs),
    /// Stop running and queued runs (each worker's whole process tree ends; what it did is kept).
    Stop(StopArgs),
    /// Land an isolated run's patch in your tree (checked first, all or nothing).
    Apply(ApplyArgs),
    /// Remove an isolated run's copy (its patch is kept).
    Discard(RunRefArgs),
    /// Targets cooling down after a rate limit, and until when; --clear forgets them.
    Cooldown(CooldownArgs),
    /// Check the set-up: git, the state dir, the worker CLIs, and which safety layers hold.
    Doctor(DoctorArgs),
    /// What every worker offers, or one worker: its models as its CLI lists them, with your own
    /// providers and the usage from the history.
    Models(ModelsArgs),
    /// Print every effective setting and where it came from.
    Config(ConfigArgs),
    /// Search past runs (tasks, answers, steps); `history stats` per worker and model.
    History(crate::commands::history::HistoryArgs),
    /// What delegating saved: totals over 7 days, 30 days and all time; --card writes an SVG.
    Savings(crate::commands::history::SavingsArgs),
    /// Remove old run directories (a dry run unless --yes; unapplied isolated patches stay).
    Clean(crate::commands::history::CleanArgs),
    /// Try Pitroom with no worker CLI and no key: a scripted worker walks a sample project
    /// through read, isolate, review + apply, write + revert, a crew, a repair round, a race
    /// and savings; with --worker opencode|kilo|qwen|claude, your real CLI does (the first
    /// five stages and savings), against a scripted model on 127.0.0.1.
    Demo(DemoArgs),
    /// A second model reviews a run's change (or a commit range) and gives a verdict.
    Review(ReviewArgs),
    /// Where a markdown plan stands, rebuilt from the runs (`plan status`); notes on it.
    Plan(PlanArgs),
    /// MCP server on stdio: the same operations as tools, for agent hosts (see docs/mcp.md).
    Mcp(McpArgs),
    /// A local page of every run on 127.0.0.1: live cards, steps, answers, diffs, history and
    /// stats (see docs/dashboard.md).
    Dash(DashArgs),
    /// Link the skills where agent hosts look, print the MCP registration; --statusline sets
    /// Claude Code's status line, --review-gate adds its stop-time review gate. Never replaces a
    /// file Pitroom did not write.
    Install(crate::integrations::install::InstallArgs),
    /// Remove exactly what `install` made (it keeps a manifest).
    Uninstall(crate::integrations::install::UninstallArgs),
    /// Host hooks: `hook session-start` introduces Pitroom at the start of a session; `hook
    /// review-gate` reviews unreviewed uncommitted work when the agent's turn ends.
    Hook(crate::integrations::HookArgs),
    /// PostToolUse hook: a card per run a shell command started, ended or applied (stdin: the
    /// host's payload).
    HookCard,
    /// One status line for an agent host: workers running, this week's estimated saving.
    Statusline(crate::integrations::StatuslineArgs),
    /// Print a shell completion script: bash, zsh or fish.
    Completions(crate::integrations::completions::CompletionsArgs),
    #[command(name = "__supervise", hide = true)]
    Supervise(SuperviseArgs),
}

/// How a run works on the tree: `run` and `crew` take the same flags.
#[derive(Debug, Args)]
pub(crate) struct ModeFlags {
    /// Read-only research (the default): the tree must be unchanged afterwards.
    #[arg(short = 'r', long, group = "mode")]
    pub read: bool,
    /// Edit in place; `pitroom revert` undoes exactly the worker's edits (a crew: one task
    /// only, one writer per repository).
    #[arg(short = 'w', long, group = "mode")]
    pub write: bool,
    /// Edit a private copy of the current state; `pitroom apply` (`-g NAME` for a crew) lands
    /// the patch.
    #[arg(short = 'i', long, group = "mode")]
    pub isolate: bool,
}

/// Which worker runs, where, and within what limits: `run` and `crew` take the same flags.
#[derive(Debug, Args)]
pub(crate) struct WorkerOptions {
    /// Worker target: backend[:model][#effort], e.g. opencode or opencode:provider/model.
    #[arg(short = 'W', long = "worker", value_name = "TARGET")]
    pub worker: Option<String>,
    /// Model for the worker (overrides the target's).
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Use the target configured for this tier (`[tiers]` in the config: cheap, standard,
    /// capable, review, or your own names); -W wins over it.
    #[arg(long, value_name = "NAME")]
    pub tier: Option<String>,
    /// Reasoning effort (low, medium, high, …) where the worker supports it.
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<String>,
    /// Directory to work in (default: the current one).
    #[arg(short = 'd', long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Time limit (per run): seconds or 90s, 20m, 1h (default 30m).
    #[arg(short = 't', long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Allow the worker's web tools.
    #[arg(long)]
    pub web: bool,
    /// Allow a write run outside a git repository (no patch, no revert).
    #[arg(long)]
    pub allow_non_git: bool,
    /// Isolate: make ignored paths (node_modules, target, …) available in the copy, as copies
    /// the worker cannot write through. Comma-separated.
    #[arg(long, value_name = "PATHS", value_delimiter = ',')]
    pub link: Vec<String>,
    /// A command to run after the worker, in its directory (a build, the tests); if it fails,
    /// the run fails with exit 6.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Rounds the worker gets to make --verify pass (1-10, default 1): a failed check goes back
    /// to the worker with its output, in the same session where its CLI can resume one.
    #[arg(long, value_name = "N", requires = "verify")]
    pub attempts: Option<u32>,
    /// Do not move to the configured fallback targets when a worker is unavailable.
    #[arg(long)]
    pub no_fallback: bool,
    /// Start at once even when every target is cooling down after a rate limit, instead of
    /// waiting (held, up to `max_hold`, default 30m) for the earliest to reset.
    #[arg(long)]
    pub no_hold: bool,
}

/// What a crew's `--max-usd` is, as `crew --help` says it.
const CREW_CAP: &str = "Cap the whole crew's spend (USD, its runs together, at your worker_prices): once reached, its running runs stop and its queued ones never start, all over_budget (exit 1) with their work kept. A target without a price is refused (see docs/budgets.md)";

/// The spend caps of `run` (the run's) and `crew` (its runs' together).
#[derive(Debug, Args)]
pub(crate) struct SpendCaps {
    /// Stop the run once its worker has spent this much (USD, e.g. 0.50), counted from its
    /// usage at your worker_prices; it ends over_budget (exit 1) with its work kept. A target
    /// without a price is refused (see docs/budgets.md).
    #[arg(long, value_name = "USD")]
    pub max_usd: Option<f64>,
    /// Stop once the worker has used this many tokens, every kind its CLI counts (for a crew,
    /// its runs together), as --max-usd stops.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The task. `-` reads it from stdin (stdin is read only then).
    pub task: Vec<String>,
    /// Read the task from a file.
    #[arg(long, value_name = "FILE", conflicts_with = "task")]
    pub task_file: Option<PathBuf>,
    #[command(flatten)]
    pub mode: ModeFlags,
    #[command(flatten)]
    pub worker: WorkerOptions,
    /// Run in the background: print the run id at once; follow with status/wait.
    #[arg(long)]
    pub bg: bool,
    /// Follow up in the same worker session (a run id, a prefix, or `last`).
    #[arg(long = "continue", value_name = "RUN")]
    pub continue_run: Option<String>,
    /// Put the run in a group (for watch/wait/status/stop/apply -g).
    #[arg(short = 'g', long = "group", value_name = "NAME")]
    pub group: Option<String>,
    /// Attach a file to the task: its path and (up to 64 KiB) its contents go into the
    /// worker's prompt. Repeatable; secret-looking files are refused.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Tie the run to a step of a markdown plan (`### Task N: title` sections); without a
    /// task, the step's own text is the task, and its `**Worker:** tier` picks the worker.
    #[arg(long, value_name = "PLAN.md", requires = "step")]
    pub plan: Option<PathBuf>,
    /// The plan step (its task number).
    #[arg(long, value_name = "N", requires = "plan")]
    pub step: Option<u32>,
    /// Race the task: one isolated run per target at once (2-5 targets, comma-separated, or a
    /// count of the configured chain); the winner is what `apply` lands (see docs/race.md).
    #[arg(long, value_name = "TARGETS|N", value_delimiter = ',', conflicts_with_all = ["bg", "continue_run", "group", "worker"])]
    pub race: Vec<String>,
    /// With --race: have each contender with changes reviewed before the winner is picked.
    #[arg(long, requires = "race")]
    pub review: bool,
    #[command(flatten)]
    pub caps: SpendCaps,
    /// Print the run record as JSON instead of the report.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(mut_arg("max_usd", |a| a.help(CREW_CAP)))]
pub(crate) struct CrewArgs {
    /// The tasks, one per argument.
    pub tasks: Vec<String>,
    /// Read the tasks from a file; tasks are separated by lines of `---`.
    #[arg(long, value_name = "FILE", conflicts_with = "tasks")]
    pub task_file: Option<PathBuf>,
    #[command(flatten)]
    pub mode: ModeFlags,
    /// The group's name (default: crew-<date>-<time>).
    #[expect(rustdoc::invalid_html_tags, reason = "--help shows it verbatim")]
    #[arg(short = 'g', long = "group", value_name = "NAME")]
    pub group: Option<String>,
    #[command(flatten)]
    pub worker: WorkerOptions,
    #[command(flatten)]
    pub caps: SpendCaps,
    /// Cap each run of the crew on its own (USD), as `run --max-usd` does; a crew cap given
    /// too holds as well, and the first reached stops the run.
    #[arg(long, value_name = "USD")]
    pub each_max_usd: Option<f64>,
    /// Cap each run's tokens on its own, as `run --max-tokens` does.
    #[arg(long, value_name = "N")]
    pub each_max_tokens: Option<u64>,
    /// Print the group and its runs as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// Runs to follow (ids, prefixes or `last`; default: the latest run's group, else the
    /// runs still active).
    #[arg(conflicts_with = "group")]
    pub runs: Vec<String>,
    #[arg(short = 'g', long = "group", value_name = "NAME")]
    pub group: Option<String>,
    /// One JSON object per line (queued, started, progress, fallback, done…, all-done).
    #[arg(long, conflicts_with = "brief")]
    pub json: bool,
    /// One line per finished run instead of the live table.
    #[arg(long)]
    pub brief: bool,
    /// Give up after this long and exit 75.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// Run id, unique prefix, or `last` (default: the latest run).
    pub run: Option<String>,
    /// The record as JSON.
    #[arg(long, group = "what")]
    pub json: bool,
    /// The raw event stream.
    #[arg(long, group = "what")]
    pub events: bool,
    /// The patch of the run's changes.
    #[arg(long, group = "what")]
    pub patch: bool,
    /// The report followed by the worker's stderr.
    #[arg(long, group = "what")]
    pub full: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LsArgs {
    /// Only runs still queued or running.
    #[arg(long)]
    pub running: bool,
    /// Only the runs of this group.
    #[arg(short = 'g', long = "group", value_name = "NAME")]
    pub group: Option<String>,
    /// How many runs to list (newest last).
    #[arg(short = 'n', long, default_value_t = 20)]
    pub limit: usize,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Runs (ids, prefixes or `last`; default: the latest run).
    #[arg(conflicts_with = "group")]
    pub runs: Vec<String>,
    /// Every run of this group, as a table.
    #[arg(short = 'g', long = "group", value_name = "NAME")]
    pub group: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct WaitArgs {
    /// Runs (ids, prefixes or `last`; default: the latest run).
    #[arg(conflicts_with = "group")]
    pub runs: Vec<String>,
    /// Every run of this group.
    #[arg(short = 'g', long = "group", value_name = "NAME")]
    pub group: Option<String>,
    /// Return as soon as any of the runs has finished.
    #[arg(long)]
    pub any: bool,
    /// Give up after this long and exit 75 (sized for agents with 10-minute tool limits).
    #[arg(long, default_value = "540", value_name = "DURATION")]
    pub timeout: String,
    /// One line instead of the report.
    #[arg(long)]
    pub brief: bool,
    #[arg(long)]
    pub json: bool,
}

/// A run and `--json`: what `revert` and `discard` take.
#[derive(Debug, Args)]
pub(crate) struct RunRefArgs {
    pub run: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ApplyArgs {
    /// Run id, unique prefix, or `last` (default: the latest run).
    #[arg(conflicts_with = "group")]
    pub run: Option<String>,
    /// Apply deletions too (refused otherwise, listing them).
    #[arg(long)]
    pub allow_delete: bool,
    /// Apply files that `show --patch` shows with `[REDACTED]`: their real bytes land, secret
    /// and all (refused otherwise, listing them).
    #[arg(long)]
    pub allow_redacted: bool,
    /// Apply binary content (a new executable, a file with a NUL byte), which no preview
    /// shows (refused otherwise, listing each file and whether it is executable or a #! script).
    #[arg(long)]
    pub allow_binary: bool,
    /// Apply every unapplied isolated run of the group, in start order; stop at the first conflict.
    #[arg(short = 'g', long = "group", value_name = "NAME")]
    pub group: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StopArgs {
    #[arg(conflicts_with = "group")]
    pub run: Option<String>,
    /// Stop every running and queued run of this group.
    #[arg(short = 'g', long = "group", value_name = "NAME")]
    pub group: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CooldownArgs {
    /// Forget every cooldown (the targets are tried again at once).
    #[arg(long)]
    pub clear: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    #[arg(long)]
    pub json: bool,
    /// Also send each worker a real read-only task in a temporary repository (it must answer
    /// PITROOM-PROBE-OK): ok or why not, the time and the model used. Exit 3 if the default
    /// worker (or a worker named) fails.
    #[arg(long)]
    pub probe: bool,
    /// The workers to probe, as backend[:model][#effort] (default: the configured worker and
    /// the fallback targets).
    #[arg(value_name = "WORKER", requires = "probe")]
    pub workers: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ModelsArgs {
    /// The worker backend (default: every backend Pitroom has an adapter for).
    #[arg(conflicts_with = "all")]
    pub worker: Option<String>,
    /// Every backend, each as its CLI lists them (or why not): the same as no worker.
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Keep the demo's sample project and state dir (their paths are printed), to look at the
    /// runs afterwards with PITROOM_HOME=<state dir> pitroom ls.
    #[expect(rustdoc::invalid_html_tags, reason = "--help shows it verbatim")]
    #[arg(long)]
    pub keep: bool,
    /// Run the same tour with a real worker CLI instead of the built-in scripted worker: the
    /// installed CLI (found on PATH or through PITROOM_<CLI>_BIN) is pointed, through a
    /// provider config in the demo's temporary HOME, at a scripted model server Pitroom starts
    /// on 127.0.0.1, so it reads and edits through its own tools without a key or a token.
    /// Supported: opencode, kilo, qwen (OpenAI chat completions) and claude (Anthropic
    /// Messages).
    #[expect(rustdoc::invalid_html_tags, reason = "--help shows it verbatim")]
    #[arg(long, value_name = "CLI")]
    pub worker: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ReviewArgs {
    /// The run whose change to review (id, prefix or `last`; default: the latest run).
    #[arg(conflicts_with_all = ["range", "base", "uncommitted"])]
    pub run: Option<String>,
    /// Review a commit range instead, A..B (its commits and diff from the merge base).
    #[arg(long, value_name = "A..B", conflicts_with_all = ["base", "uncommitted"])]
    pub range: Option<String>,
    /// Review the branch instead: HEAD from its merge base with REF (e.g. main).
    #[arg(long, value_name = "REF", conflicts_with = "uncommitted")]
    pub base: Option<String>,
    /// Review the uncommitted work in the tree instead: changes to tracked files and new
    /// files, against HEAD (secret-looking files left out).
    #[arg(long)]
    pub uncommitted: bool,
    /// What the reviewer should look at most closely, e.g. "error handling".
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
    /// Several reviewers at once, on the same package (2-5 targets, comma-separated): their
    /// verdicts merge into the strictest (see docs/review.md).
    #[arg(long, value_name = "TARGETS", value_delimiter = ',', conflicts_with_all = ["worker", "tier", "bg"])]
    pub panel: Vec<String>,
    /// The reviewer: backend[:model][#effort] (default: the `review` tier, else `standard` or
    /// `capable`, else a fallback target, on another backend than the implementer).
    #[arg(short = 'W', long = "worker", value_name = "TARGET")]
    pub worker: Option<String>,
    /// Use the reviewer configured for this tier.
    #[arg(long, value_name = "NAME", conflicts_with = "worker")]
    pub tier: Option<String>,
    /// Repository of a --range, --base or --uncommitted review (default: the current directory).
    #[arg(short = 'd', long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Time limit: seconds or 90s, 20m, 1h (default 30m).
    #[arg(short = 't', long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Run in the background: print the review's run id at once.
    #[arg(long)]
    pub bg: bool,
    /// Print the review's record as JSON (its `verdict` field; a panel's seats and merged
    /// verdict) instead of the report.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DashArgs {
    /// Start the server in the background and return once it answers (it stops itself after
    /// an hour without a request and without an open page).
    #[arg(long, conflicts_with = "stop")]
    pub detach: bool,
    /// The port on 127.0.0.1 (default 7878, or a free one if that is taken; 0 = any free port).
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Open the page with the system's opener (xdg-open / open).
    #[arg(long, conflicts_with = "stop")]
    pub open: bool,
    /// Stop the running dashboard server.
    #[arg(long)]
    pub stop: bool,
    /// Print the address (and pid) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: the detached server itself.
    #[arg(long, hide = true)]
    pub serve_detached: bool,
    /// Internal (tests): the idle limit of a detached server, in seconds.
    #[arg(long, hide = true, value_name = "SECS")]
    pub idle_stop: Option<u64>,
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    #[command(subcommand)]
    pub command: PlanCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PlanCommand {
    /// Each step of the plan: its runs, the last state, the worker's STATUS line, the last
    /// review verdict, rounds, applied or not, and the latest note.
    Status {
        /// The plan's markdown file.
        plan: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Keep a note on the plan (or a step), outside the repository.
    Note {
        plan: PathBuf,
        /// The note.
        #[arg(required = true)]
        text: Vec<String>,
        /// The step it is about.
        #[arg(long, value_name = "N")]
        step: Option<u32>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Print the registration snippet for a host instead of serving: claude, codex, gemini or
    /// cursor (with what each needs to pass the workers' keys through).
    #[arg(long, value_name = "HOST")]
    pub print_config: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct SuperviseArgs {
    pub id: String,
    #[arg(long)]
    pub lock_fd: Option<i32>,
    #[arg(long)]
    pub ticket_fd: Option<i32>,
}

/// A first word that is not a command means `run`: `pitroom "task"`, `pitroom -w "task"`.
pub(crate) fn with_default_command(mut args: Vec<OsString>) -> Vec<OsString> {
    use clap::CommandFactory;
    let first = args.get(1).and_then(|a| a.to_str()).unwrap_or("");
    let is_command = first == "help"
        || Cli::command()
            .get_subcommands()
            .any(|c| c.get_name() == first);
    let leave =
        args.len() < 2 || is_command || matches!(first, "-h" | "--help" | "-V" | "--version");
    if !leave {
        args.insert(1, "run".into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Cli {
        let args = std::iter::once("pitroom")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect();
        Cli::try_parse_from(with_default_command(args)).expect("parses")
    }

    #[test]
    fn a_bare_task_means_run() {
        match parse(&["Which files read the cookie?"]).command {
            Command::Run(r) => assert_eq!(r.task, vec!["Which files read the cookie?"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bare_flags_mean_run_too() {
        assert!(matches!(parse(&["-w", "fix it"]).command, Command::Run(r) if r.mode.write));
    }

    #[test]
    fn commands_are_not_tasks() {
        assert!(matches!(parse(&["ls"]).command, Command::Ls(_)));
        assert!(matches!(parse(&["apply"]).command, Command::Apply(_)));
        assert!(matches!(parse(&["discard"]).command, Command::Discard(_)));
        assert!(matches!(
            parse(&["wait", "--timeout", "5"]).command,
            Command::Wait(_)
        ));
    }

    #[test]
    fn modes_are_exclusive() {
        for pair in [["-r", "-w"], ["-r", "-i"], ["-w", "-i"]] {
            let args = ["pitroom", "run", pair[0], pair[1], "x"]
                .map(OsString::from)
                .to_vec();
            let kind = Cli::try_parse_from(args).map(|_| ()).map_err(|e| e.kind());
            assert_eq!(
                kind,
                Err(clap::error::ErrorKind::ArgumentConflict),
                "{pair:?}"
            );
        }
        // Each alone parses: the conflict, not the flag, is what is refused.
        for mode in ["-r", "-w", "-i"] {
            let args = ["pitroom", "run", mode, "x"].map(OsString::from).to_vec();
            assert!(Cli::try_parse_from(args).is_ok(), "{mode}");
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn the_version_fast_path_prints_exactly_what_clap_prints() {
        for argv0 in ["pitroom", "/usr/local/bin/pitroom"] {
            for flag in ["--version", "-V"] {
                let args: Vec<OsString> = vec![argv0.into(), flag.into()];
                let clap = Cli::try_parse_from(with_default_command(args.clone()))
                    .expect_err("--version ends parsing");
                assert_eq!(clap.kind(), clap::error::ErrorKind::DisplayVersion);
                assert_eq!(
                    version_only(&args),
                    Some(clap.to_string()),
                    "{argv0} {flag}"
                );
            }
        }
    }

    #[test]
    fn the_version_fast_path_leaves_everything_else_to_clap() {
        for words in [
            &["pitroom"][..],
            &["pitroom", "run", "--version"],
            &["pitroom", "--version", "extra"],
            &["pitroom", "--versions"],
            &["pitroom", "-v"],
        ] {
            let args: Vec<OsString> = words.iter().map(OsString::from).collect();
            assert_eq!(version_only(&args), None, "{words:?}");
        }
    }
}
