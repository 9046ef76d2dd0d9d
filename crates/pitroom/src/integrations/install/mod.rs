//! `pitroom install` / `uninstall`: the skills for hosts without the plugin, linked where each
//! host looks, the MCP registration printed, the Claude Code status line and the review gate's Stop hook only when asked.
//!
//! Rules: never overwrite a file Pitroom did not write (refuse, naming it; `--force` moves it
//! aside into Pitroom's data dir and `uninstall` puts it back); record every directory, file
//! and link made in a manifest, so `uninstall` removes exactly those and the home is
//! byte-identical to before. The skills themselves are written from the binary into Pitroom's
//! data dir (`$XDG_DATA_HOME/pitroom/skills`), and the hosts' skill dirs get symlinks to them.
//!
//! The parts: [`layout`] says where things go and which hosts are here; [`plan`] works out
//! what install wants and what to do about what is there; [`apply`] makes it, with
//! [`settings`] for Claude Code's status line and review gate; [`manifest`] records what was made;
//! [`uninstall`](mod@uninstall) reverses it; [`doctor`] reports skills that would load twice.

mod apply;
mod doctor;
mod layout;
mod manifest;
mod plan;
mod settings;
mod uninstall;

use clap::{Args, ValueEnum};
use pitroom_core::exit::Exit;

use crate::commands::Outcome;
use crate::error::CliError;
use crate::output;

pub(crate) use doctor::{doctor_skills, double_loads};
pub(crate) use layout::{Host, Layout};
pub(crate) use manifest::{hash, Entry, Manifest};
pub(crate) use uninstall::uninstall;

use apply::apply_steps;
use manifest::save_manifest;
use plan::{print_done, print_plan, print_registrations, step_for, wanted, Step, Want};

#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The agent host: claude, codex, gemini, cursor or all (default: every host found in your
    /// home directory or on PATH).
    #[arg(long, value_enum)]
    pub host: Option<HostArg>,
    /// Also set Claude Code's status line (`statusLine` in ~/.claude/settings.json).
    #[arg(long)]
    pub statusline: bool,
    /// Also add the stop-time review gate: a `Stop` hook in ~/.claude/settings.json running
    /// `pitroom hook review-gate`. When Claude Code ends a turn with uncommitted work not yet
    /// reviewed, one `review --uncommitted` runs and its findings go back to Claude, which
    /// continues; the same change is never reviewed twice, one round per turn, at most
    /// `review_gate_max_rounds` (default 3) per session, and a failed review never blocks.
    #[arg(long)]
    pub review_gate: bool,
    /// Print what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace files Pitroom did not write; the originals are kept and `uninstall` restores them.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct UninstallArgs {
    /// Print what would be removed; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HostArg {
    Claude,
    Codex,
    Gemini,
    Cursor,
    All,
}

pub(crate) fn install(args: InstallArgs) -> Outcome {
    let layout = Layout::from_env(&crate::commands::env_lookup).map_err(CliError::refused)?;
    let hosts = pick_hosts(&layout, args.host).map_err(CliError::refused)?;
    if args.statusline && !hosts.contains(&Host::Claude) {
        return Err(CliError::usage(
            "the status line is Claude Code's: add --host claude (or all)",
        ));
    }
    if args.review_gate && !hosts.contains(&Host::Claude) {
        return Err(CliError::usage(
            "--review-gate writes Claude Code's settings: add --host claude (or all); for Codex, see docs/review-gate.md",
        ));
    }
    let mut manifest = Manifest::load(&layout.manifest())
        .map_err(CliError::refused)?
        .unwrap_or_default();
    let settings = settings::SettingsWant {
        statusline: args.statusline,
        review_gate: args.review_gate,
    };
    let wants = wanted(&layout, &hosts, settings);
    let steps: Vec<(Want, Step)> = wants
        .into_iter()
        .map(|w| {
            let step = step_for(&w, &manifest);
            (w, step)
        })
        .collect();
    let foreign: Vec<&Want> = steps
        .iter()
        .filter(|(_, s)| *s == Step::Foreign)
        .map(|(w, _)| w)
        .collect();
    if !foreign.is_empty() && !args.force {
        let paths: Vec<String> = foreign
            .iter()
            .map(|w| format!("\n  {}", layout.show(w.path())))
            .collect();
        return Err(CliError::refused(format!(
            "refusing to replace what Pitroom did not write:{}",
            paths.concat()
        ))
        .with_hint(
            "move them away, or re-run with --force (the originals are kept in Pitroom's data dir and `pitroom uninstall` puts them back)",
        ));
    }
    if args.dry_run {
        print_plan(&layout, &steps);
        print_registrations(&hosts, settings);
        return Ok(Exit::Ok);
    }
    let result = apply_steps(&layout, &steps, &mut manifest);
    manifest.version = 1;
    manifest.pitroom = env!("CARGO_PKG_VERSION").into();
    for h in &hosts {
        if !manifest.hosts.contains(h) {
            manifest.hosts.push(*h);
        }
    }
    // Saved even after a failure part-way, so `uninstall` can remove what was made.
    let saved = save_manifest(&layout, &mut manifest);
    if let Err(e) = result.and(saved) {
        return Err(CliError::refused(format!(
            "{e}; what was made so far is recorded, and `pitroom uninstall` removes it"
        )));
    }
    print_done(&layout, &hosts, &steps);
    print_registrations(&hosts, settings);
    for twice in double_loads(&layout) {
        output::warning(twice);
    }
    Ok(Exit::Ok)
}

/// The hosts to install for: the one asked, all, or those found.
pub(crate) fn pick_hosts(layout: &Layout, asked: Option<HostArg>) -> Result<Vec<Host>, String> {
    let host = |h| Ok(vec![h]);
    match asked {
        Some(HostArg::Claude) => host(Host::Claude),
        Some(HostArg::Codex) => host(Host::Codex),
        Some(HostArg::Gemini) => host(Host::Gemini),
        Some(HostArg::Cursor) => host(Host::Cursor),
        Some(HostArg::All) => Ok(Host::ALL.to_vec()),
        None => {
            let found: Vec<Host> = Host::ALL
                .into_iter()
                .filter(|h| layout.host_present(*h))
                .collect();
            if found.is_empty() {
                Err(format!(
                    "no agent host found (looked for {} and for claude, codex, gemini, cursor-agent on PATH); pick one with --host claude|codex|gemini|cursor|all",
                    [".claude", ".codex", ".gemini", ".cursor"]
                        .map(|d| format!("~/{d}"))
                        .join(", ")
                ))
            } else {
                Ok(found)
            }
        }
    }
}
