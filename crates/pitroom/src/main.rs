//! `pitroom`: the command-line front end. One module per command or family of commands
//! (`commands/`); all printing goes through `output`; a command ends with an `Exit`
//! (`pitroom_core::exit`) or a `CliError` (`error`), which `commands::dispatch` alone turns
//! into the exit code.

// The printer (`output`) owns stdout and stderr; the few other writers say why they may.
#![warn(clippy::print_stdout, clippy::print_stderr)]
// A binary exports nothing: `pub` inside it would only mislead about who may call what.
#![warn(unreachable_pub)]

mod cli;
mod commands;
mod demo;
mod error;
mod integrations;
mod output;

use std::ffi::OsString;
use std::io::Write;

use clap::Parser;
use pitroom_core::exit::Exit;

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    // Inside a worker, `git`, the floor programs and git's `reference-transaction` hook link to
    // `pitroom-guard`; to this binary when that one is missing (the same roles, one copy).
    if let Some(code) = pitroom_guard::roles::run(&args) {
        std::process::exit(code);
    }
    // `pitroom demo`'s scripted worker is this binary too, linked as `pitroom-scripted-worker`.
    if demo::worker::is_scripted_worker(args.first()) {
        std::process::exit(demo::worker::main(&args[1..]));
    }
    // The keeper and the init start often and must start fast: no clap, no config.
    if let Some(code) = pitroom_proc::internal_main(&args) {
        std::process::exit(code);
    }
    // Like other command-line tools, end quietly when the reader of our output goes away
    // (`pitroom history --json | head`) instead of panicking on a broken pipe. (Child processes
    // start with the default disposition either way.)
    // SAFETY: setting a signal disposition at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    if let Some(line) = cli::version_only(&args) {
        std::process::exit(print_version(&line).code());
    }
    // What a best-effort step could not do: into the run's log, and warnings to stderr.
    pitroom_core::log::init();
    let cli = match cli::Cli::try_parse_from(cli::with_default_command(args)) {
        Ok(cli) => cli,
        Err(e) => {
            let exit = if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Ok
            };
            let _ = e.print();
            std::process::exit(exit.code());
        }
    };
    std::process::exit(commands::dispatch(cli));
}

/// Prints the version line; a failure when stdout cannot take it.
fn print_version(line: &str) -> Exit {
    let mut out = std::io::stdout().lock();
    match out.write_all(line.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Exit::Ok,
        Err(_) => Exit::Failed,
    }
}
