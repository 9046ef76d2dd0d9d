//! One module per command.

mod apply;
mod config;
mod cooldown;
mod crew;
mod dash;
mod doctor;
pub(crate) mod history;
mod mcp;
mod plan;
mod probe;
mod revert;
mod review;
mod run;
mod show;
mod wait;
mod watch;

use pitroom_core::{Home, RunRecord};
use pitroom_service::{Selector, Service, ServiceError};

use crate::output;

use crate::cli::{Cli, Command};

/// Runs the parsed command and returns the process exit code.
pub(crate) fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Crew(args) => crew::crew(*args),
        Command::Watch(args) => watch::watch(args),
        Command::Supervise(args) => run::supervise(args),
        Command::Mcp(args) => mcp::mcp(args),
        Command::Plan(args) => plan::plan(args),
        Command::Dash(args) => dash::dash(args),
        Command::Review(args) => review::review(args),
        Command::Show(args) => show::show(args),
        Command::Ls(args) => show::ls(args),
        Command::Status(args) => wait::status(args),
        Command::Wait(args) => wait::wait(args),
        Command::Stop(args) => wait::stop(args),
        Command::Revert(args) => revert::revert(args),
        Command::Apply(args) => apply::apply(args),
        Command::Discard(args) => apply::discard(args),
        Command::Config(args) => config::config(args),
        Command::Models(args) => run::models(args),
        Command::Doctor(args) => doctor::doctor(args),
        Command::History(args) => history::history(args),
        Command::Savings(args) => history::savings(args),
        Command::Clean(args) => history::clean(args),
        Command::Cooldown(args) => cooldown::cooldown(args),
        Command::Demo(args) => crate::demo::demo(args),
        Command::Install(args) => crate::integrations::install::install(args),
        Command::Uninstall(args) => crate::integrations::install::uninstall(args),
        Command::Hook(args) => crate::integrations::hook(args),
        Command::HookCard => crate::integrations::hook::hook_card(),
        Command::Statusline(args) => crate::integrations::statusline::statusline(args),
        Command::Completions(args) => crate::integrations::completions::completions(args),
    }
}

/// The caller's environment as a lookup function.
pub(crate) fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub(crate) fn home() -> Home {
    Home::locate(&env_lookup)
}

/// The run library for this process; on failure, prints one line and returns the exit code.
pub(crate) fn service() -> Result<Service, i32> {
    Service::from_process().map_err(|e| fail(&e))
}

/// Prints a run-library error (what happened, then what to do) and returns its exit code.
pub(crate) fn fail(e: &ServiceError) -> i32 {
    output::error(&e.message);
    if let Some(hint) = &e.hint {
        output::hint(hint);
    }
    e.exit_code()
}

/// Resolves a run reference (id, prefix, `last`, or the latest) and loads its settled record;
/// on failure, prints one line and returns the exit code.
pub(crate) fn load_run(service: &Service, given: Option<&str>) -> Result<RunRecord, i32> {
    service.load(given).map_err(|e| fail(&e))
}

/// The runs a command works on: the given ones, a group's, or the latest run.
pub(crate) fn select(
    service: &Service,
    runs: &[String],
    group: Option<&str>,
) -> Result<Selector, i32> {
    service.select(runs, group).map_err(|e| fail(&e))
}

/// The selected runs' records; a record that cannot be read is reported and skipped.
pub(crate) fn load_selected(service: &Service, selector: &Selector) -> Vec<RunRecord> {
    let (records, problems) = service.status(selector);
    for p in problems {
        output::warning(p);
    }
    records
}
