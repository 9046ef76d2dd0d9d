//! One module per command. Each returns an [`Outcome`]; [`dispatch`] alone turns it into the
//! process exit code, printing a failure on the way ([`CliError::report`]).

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
mod race;
mod revert;
mod review;
mod run;
mod show;
mod wait;
mod watch;

use pitroom_core::exit::Exit;
use pitroom_core::{Home, RunRecord};
use pitroom_service::{Selector, Service};

use crate::cli::{Cli, Command};
use crate::error::CliError;
use crate::output;

/// What a command returns: how the process ends (a run's outcome included), or the failure
/// that ended it, not printed yet.
pub(crate) type Outcome = Result<Exit, CliError>;

/// Runs the parsed command and returns the process exit code: the one place a command's
/// outcome becomes one.
pub(crate) fn dispatch(cli: Cli) -> i32 {
    let outcome = match cli.command {
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
        Command::Install(args) => crate::integrations::install::install(args),
        Command::Uninstall(args) => crate::integrations::install::uninstall(args),
        // These speak to a person watching a tour or to a host, not through a command's
        // outcome: the demo's 130 after Ctrl-C is no `Exit`, and a hook, the status line and
        // the completion script answer in their host's terms (a hook's exit code is its
        // verdict), so each returns its own code.
        Command::Demo(args) => return crate::demo::demo(args),
        Command::Hook(args) => return crate::integrations::hook(args),
        Command::HookCard => return crate::integrations::hook::hook_card(),
        Command::Statusline(args) => return crate::integrations::statusline::statusline(args),
        Command::Completions(args) => return crate::integrations::completions::completions(args),
    };
    exit_code(outcome)
}

/// The process exit code of a command's outcome; a failure is printed here, once.
fn exit_code(outcome: Outcome) -> i32 {
    match outcome {
        Ok(exit) => exit,
        Err(e) => e.report(),
    }
    .code()
}

/// The caller's environment as a lookup function.
pub(crate) fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub(crate) fn home() -> Home {
    Home::locate(&env_lookup)
}

/// The run library for this process.
pub(crate) fn service() -> Result<Service, CliError> {
    Ok(Service::from_process()?)
}

/// The selected runs' records; a record that cannot be read is reported and skipped.
pub(crate) fn load_selected(service: &Service, selector: &Selector) -> Vec<RunRecord> {
    let (records, problems) = service.status(selector);
    for p in problems {
        output::warning(p);
    }
    records
}

pub(crate) use pitroom_service::probe::fresh_temp_dir;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_exits_with_its_code_and_a_failure_with_its_kinds() {
        assert_eq!(exit_code(Ok(Exit::Ok)), 0);
        assert_eq!(exit_code(Ok(Exit::Timeout)), 4);
        assert_eq!(exit_code(Ok(Exit::VerifyFailed)), 6);
        assert_eq!(exit_code(Err(CliError::usage("bad flag"))), 2);
        assert_eq!(exit_code(Err(CliError::refused("busy"))), 3);
    }
}
