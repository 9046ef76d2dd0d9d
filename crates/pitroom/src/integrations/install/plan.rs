//! What `install` wants for the chosen hosts, what to do about what is already at each path,
//! and the messages that say so (the dry-run plan, the summary, the MCP registrations).

use std::path::{Path, PathBuf};

use super::settings::{settings_text, SettingsWant};
use super::{hash, Entry, Host, Layout, Manifest};
use crate::integrations::skills::SKILLS;
use crate::output::say;

/// What install wants at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Want {
    File {
        path: PathBuf,
        contents: Vec<u8>,
    },
    Link {
        path: PathBuf,
        target: PathBuf,
    },
    /// Claude Code's settings with `statusLine` and/or the review gate's Stop hook set.
    Settings {
        path: PathBuf,
        want: SettingsWant,
    },
}

impl Want {
    pub(super) fn path(&self) -> &Path {
        match self {
            Want::File { path, .. } | Want::Link { path, .. } | Want::Settings { path, .. } => path,
        }
    }
}

/// What to do about one wanted item, given what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Already exactly so (ours from an earlier install, or identical and left unrecorded).
    Keep,
    /// Nothing there: make it.
    Make,
    /// Ours from an earlier install, to be refreshed (a newer binary's skill text).
    Refresh,
    /// Something Pitroom did not make is there.
    Foreign,
}

/// Everything install wants for these hosts: the skill files, a link per skill and skills
/// dir, and the settings when the status line or the review gate is asked for.
pub(super) fn wanted(layout: &Layout, hosts: &[Host], settings: SettingsWant) -> Vec<Want> {
    let mut wants = Vec::new();
    for skill in SKILLS {
        wants.push(Want::File {
            path: layout.skill_store().join(skill.name).join("SKILL.md"),
            contents: skill.text.as_bytes().to_vec(),
        });
    }
    let mut dirs: Vec<PathBuf> = hosts.iter().map(|h| layout.skills_dir(*h)).collect();
    dirs.dedup();
    for dir in dirs {
        for skill in SKILLS {
            wants.push(Want::Link {
                path: dir.join(skill.name),
                target: layout.skill_store().join(skill.name),
            });
        }
    }
    if settings.statusline || settings.review_gate {
        wants.push(Want::Settings {
            path: layout.settings(),
            want: settings,
        });
    }
    wants
}

pub(super) fn step_for(want: &Want, manifest: &Manifest) -> Step {
    let path = want.path();
    let present = std::fs::symlink_metadata(path).is_ok();
    match (manifest.owns(path), want) {
        (Some(Entry::File { hash: h, .. }), Want::File { contents, .. }) => {
            match std::fs::read(path) {
                Ok(now) if hash(&now) == hash(contents) => Step::Keep,
                Ok(now) if hash(&now) == *h => Step::Refresh,
                // Changed by someone since Pitroom wrote it: theirs now.
                Ok(_) => Step::Foreign,
                Err(_) => Step::Make,
            }
        }
        (Some(Entry::Link { target: t, .. }), Want::Link { target, .. }) if t == target => {
            match std::fs::read_link(path) {
                Ok(now) if now == *target => Step::Keep,
                Ok(_) => Step::Foreign,
                Err(_) if !present => Step::Make,
                Err(_) => Step::Foreign,
            }
        }
        (owner, Want::Settings { want: settings, .. }) if present => {
            let Ok(now) = std::fs::read(path) else {
                return Step::Foreign;
            };
            let ours = matches!(
                owner,
                Some(Entry::File { hash: h, .. } | Entry::Edited { hash: h, .. }) if hash(&now) == *h
            );
            match settings_text(Some(&now), *settings) {
                // Already so (ours, or set by hand): leave it as it is.
                Ok(wanted) if wanted == now => Step::Keep,
                // Ours and untouched since: add what this install asks for.
                _ if ours => Step::Refresh,
                _ => Step::Foreign,
            }
        }
        _ if !present => Step::Make,
        (_, Want::Link { target, .. })
            if std::fs::read_link(path).ok().as_ref() == Some(target) =>
        {
            // The same link, made by hand or by a lost install: leave it, and do not record it.
            Step::Keep
        }
        _ => Step::Foreign,
    }
}

pub(super) fn print_plan(layout: &Layout, steps: &[(Want, Step)]) {
    say!("pitroom install --dry-run: nothing is changed");
    for (want, step) in steps {
        let what = match (want, step) {
            (_, Step::Keep) => continue,
            (Want::File { .. }, Step::Refresh) => "refresh",
            (Want::File { .. }, _) => "write",
            (Want::Link { .. }, _) => "link",
            (Want::Settings { want, .. }, _) => settings_label(*want),
        };
        let aside = if *step == Step::Foreign {
            " (moving the existing one aside: --force)"
        } else {
            ""
        };
        match want {
            Want::Link { path, target } => say!(
                "  {what} {} → {}{aside}",
                layout.show(path),
                layout.show(target)
            ),
            _ => say!("  {what} {}{aside}", layout.show(want.path())),
        }
    }
}

fn settings_label(want: SettingsWant) -> &'static str {
    match (want.statusline, want.review_gate) {
        (true, true) => "set statusLine and the review gate's Stop hook in",
        (false, true) => "set the review gate's Stop hook in",
        _ => "set statusLine in",
    }
}

pub(super) fn print_done(layout: &Layout, hosts: &[Host], steps: &[(Want, Step)]) {
    let made = steps.iter().filter(|(_, s)| *s != Step::Keep).count();
    let names: Vec<&str> = hosts.iter().map(|h| h.name()).collect();
    if made == 0 {
        say!("pitroom: already installed for {}", names.join(", "));
    } else {
        say!("pitroom: installed for {}", names.join(", "));
    }
    let mut dirs: Vec<PathBuf> = hosts.iter().map(|h| layout.skills_dir(*h)).collect();
    dirs.dedup();
    for dir in dirs {
        say!(
            "  {} skills linked in {} (→ {})",
            SKILLS.len(),
            layout.show(&dir),
            layout.show(&layout.skill_store())
        );
    }
    for (want, step) in steps {
        if let (Want::Settings { want, .. }, Step::Make | Step::Refresh | Step::Foreign) =
            (want, step)
        {
            if want.statusline {
                say!("  status line set in {}", layout.show(&layout.settings()));
            }
            if want.review_gate {
                say!(
                    "  review gate set in {}: a Stop hook runs `pitroom hook review-gate` (docs/review-gate.md)",
                    layout.show(&layout.settings())
                );
            }
        }
    }
    say!("  undo with: pitroom uninstall");
}

/// The MCP registration for each host (Pitroom never edits the hosts' own config files).
pub(super) fn print_registrations(hosts: &[Host], settings: SettingsWant) {
    for host in hosts {
        if let Ok(snippet) = pitroom_mcp::hosts::config_for(host.name()) {
            say!(
                "\nMCP for {} (optional; the skills work without it):",
                host.name()
            );
            for line in snippet.lines() {
                say!("  {line}");
            }
        }
    }
    if hosts.contains(&Host::Claude) {
        let mut hints = Vec::new();
        if !settings.statusline {
            hints.push("Status line: pitroom install --host claude --statusline");
        }
        if !settings.review_gate {
            hints.push("Review gate at the end of each turn (opt-in): pitroom install --host claude --review-gate");
        }
        if !hints.is_empty() {
            say!("\n{}", hints.join("\n"));
        }
    }
}
