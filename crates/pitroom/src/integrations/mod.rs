//! Working with agent hosts: the shipped skills, the host packages generated from one source,
//! the hooks (`hook session-start`, `hook review-gate`, `hook-card`), the status line, `install`/`uninstall`, and
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
    /// Stop: the stop-time review gate. When the agent's turn ends with uncommitted work in
    /// the payload's `cwd` that this session has not had reviewed, runs one `review
    /// --uncommitted` (at most 10 minutes) and, if the reviewer found issues, prints
    /// `{"decision":"block","reason":FINDINGS}` so the agent continues with them. Silent when
    /// the turn was already continued once (`stop_hook_active`), the change was reviewed before,
    /// the session had `review_gate_max_rounds` reviews, the review is clean or it failed.
    /// See docs/review-gate.md.
    ReviewGate {
        /// Only when the config key `review_gate` is true (what the plugins' hook runs, so the
        /// gate stays opt-in); `pitroom install --review-gate` writes the hook without it.
        #[arg(long)]
        if_enabled: bool,
    },
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
        HookEvent::ReviewGate { if_enabled } => hook::review_gate(if_enabled),
    }
}
