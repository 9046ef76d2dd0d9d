//! One module per command.

mod config;
mod revert;
mod run;
mod show;
mod wait;

use pitroom_core::Home;

use crate::cli::{Cli, Command};

/// Runs the parsed command and returns the process exit code.
pub fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Supervise(args) => run::supervise(args),
        Command::Show(args) => show::show(args),
        Command::Ls(args) => show::ls(args),
        Command::Status(args) => wait::status(args),
        Command::Wait(args) => wait::wait(args),
        Command::Revert(args) => revert::revert(args),
        Command::Config(args) => config::config(args),
    }
}

/// The caller's environment as a lookup function.
pub fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub fn home() -> Home {
    Home::locate(&env_lookup)
}
