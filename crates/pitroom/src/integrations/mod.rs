//! Working with agent hosts: the shipped skills, the host packages generated from one source,
//! the hooks (`hook session-start`, `hook-card`), the status line, `install`/`uninstall`, and
//! shell completions. See docs/agents.md.

pub mod card;
pub mod completions;
pub mod hook;
pub mod install;
#[cfg(test)]
pub mod packages;
pub mod skill_commands;
pub mod skills;
pub mod statusline;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub event: HookEvent,
}

#[derive(Debug, Subcommand)]
pub enum HookEvent {
    /// SessionStart: print the using-pitroom text as the host's additionalContext (silent
    /// inside a Pitroom worker).
    SessionStart,
}

#[derive(Debug, Args)]
pub struct StatuslineArgs {
    /// Your own status command: run with the same JSON on stdin; its line comes first.
    #[arg(long, value_name = "CMD")]
    pub then: Option<String>,
}

pub fn hook(args: HookArgs) -> i32 {
    match args.event {
        HookEvent::SessionStart => hook::session_start(),
    }
}
