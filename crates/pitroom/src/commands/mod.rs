//! One module per command.

mod apply;
mod config;
mod cooldown;
mod crew;
mod doctor;
pub(crate) mod history;
mod revert;
mod run;
mod show;
mod wait;
mod watch;

use pitroom_core::{exit, Home, RunRecord};

use crate::output;

use crate::cli::{Cli, Command};

/// Runs the parsed command and returns the process exit code.
pub fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Crew(args) => crew::crew(*args),
        Command::Watch(args) => watch::watch(args),
        Command::Supervise(args) => run::supervise(args),
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
    }
}

/// The caller's environment as a lookup function.
pub fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub fn home() -> Home {
    Home::locate(&env_lookup)
}

/// Resolves a run reference (id, prefix, `last`, or the latest) and loads its settled record;
/// on failure, prints one line and returns the exit code.
pub fn load_run(home: &Home, given: Option<&str>) -> Result<RunRecord, i32> {
    let id = home.resolve(given).map_err(|e| {
        output::error(e);
        exit::USAGE
    })?;
    home.load_settled(&id).map_err(|e| {
        output::error(e);
        exit::REFUSED
    })
}

/// The runs a command works on: the given ones, a group's, or the latest run.
pub fn resolve_runs(home: &Home, runs: &[String], group: Option<&str>) -> Result<Vec<String>, i32> {
    if let Some(group) = group {
        let ids = home.group_ids(group);
        if ids.is_empty() {
            output::error(format!(
                "group {group} has no runs; start some with: pitroom crew -g {group} \"task\" …"
            ));
            return Err(exit::USAGE);
        }
        return Ok(ids);
    }
    if runs.is_empty() {
        return home.resolve(None).map(|id| vec![id]).map_err(|e| {
            output::error(e);
            exit::USAGE
        });
    }
    let mut ids = Vec::new();
    for given in runs {
        let id = home.resolve(Some(given)).map_err(|e| {
            output::error(e);
            exit::USAGE
        })?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Loads settled records; a record that cannot be read is reported and skipped.
pub fn load_runs(home: &Home, ids: &[String]) -> Vec<RunRecord> {
    ids.iter()
        .filter_map(|id| match home.load_settled(id) {
            Ok(r) => Some(r),
            Err(e) => {
                output::warning(e);
                None
            }
        })
        .collect()
}
