//! Working with agent hosts: the shipped skills, the host packages generated from one source,
//! the hooks (`hook session-start`, `hook-card`), the status line, `install`/`uninstall`, and
//! shell completions. See docs/agents.md.

pub(crate) mod card;
pub(crate) mod completions;
pub(crate) mod hook;
pub(crate) mod install;
#[cfg(test)]
pub(crate) mod packages;
pub(crate) mod skill_commands;
pub(crate) mod skills;
pub(crate) mod statusline;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub(crate) struct HookArgs {
    #[command(subcommand)]
    pub event: HookEvent,
}

#[derive(Debug, Subcommand)]
pub(crate) enum HookEvent {
    /// SessionStart: print the using-pitroom text as the host's additionalContext (silent
    /// inside a Pitroom worker).
    SessionStart,
}

#[derive(Debug, Args)]
pub(crate) struct StatuslineArgs {
    /// Your own status command: run with the same JSON on stdin; its line comes first.
    #[arg(long, value_name = "CMD")]
    pub then: Option<String>,
}

pub(crate) fn hook(args: HookArgs) -> i32 {
    match args.event {
        HookEvent::SessionStart => hook::session_start(),
    }
}
