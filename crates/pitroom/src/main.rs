//! `pitroom`: the command-line front end. One module per command; all printing goes through
//! `output`; exit codes come from `pitroom_core::exit`.

mod cli;
mod commands;
mod output;

use std::ffi::OsString;

use clap::Parser;

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    // The keeper starts often and must start fast: no clap, no config.
    if pitroom_proc::is_keeper_invocation(args.get(1).map(OsString::as_os_str)) {
        std::process::exit(pitroom_proc::keeper_main(&args[2..]));
    }
    let cli = match cli::Cli::try_parse_from(cli::with_default_command(args)) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                pitroom_core::exit::USAGE
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(commands::dispatch(cli));
}
