//! One module per command.

mod apply;
mod config;
mod doctor;
mod revert;
mod run;
mod show;
mod wait;

use pitroom_core::{exit, Home, RunRecord};

use crate::output;

use crate::cli::{Cli, Command};

/// Runs the parsed command and returns the process exit code.
pub fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run::run(*args),
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
