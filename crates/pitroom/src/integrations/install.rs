//! `pitroom install` / `uninstall`: the skills for hosts without the plugin, linked where each
//! host looks, the MCP registration printed, the Claude Code status line only when asked.
//!
//! Rules: never overwrite a file Pitroom did not write (refuse, naming it; `--force` moves it
//! aside into Pitroom's data dir and `uninstall` puts it back); record every directory, file
//! and link made in a manifest, so `uninstall` removes exactly those and the home is
//! byte-identical to before. The skills themselves are written from the binary into Pitroom's
//! data dir (`$XDG_DATA_HOME/pitroom/skills`), and the hosts' skill dirs get symlinks to them.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use pitroom_core::exit;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::skills::SKILLS;
use crate::output;

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The agent host: claude, codex, gemini, cursor or all (default: every host found in your
    /// home directory or on PATH).
    #[arg(long, value_enum)]
    pub host: Option<HostArg>,
    /// Also set Claude Code's status line (`statusLine` in ~/.claude/settings.json).
    #[arg(long)]
    pub statusline: bool,
    /// Print what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace files Pitroom did not write; the originals are kept and `uninstall` restores them.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Print what would be removed; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostArg {
    Claude,
    Codex,
    Gemini,
    Cursor,
    All,
}

/// An agent host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    Claude,
    Codex,
    Gemini,
    Cursor,
}

impl Host {
    pub const ALL: [Host; 4] = [Host::Claude, Host::Codex, Host::Gemini, Host::Cursor];

    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
            Host::Cursor => "cursor",
        }
    }

    /// The host's directory in the home and its CLI, either of which says it is here.
    fn traces(self) -> (&'static str, &'static str) {
        match self {
            Host::Claude => (".claude", "claude"),
            Host::Codex => (".codex", "codex"),
            Host::Gemini => (".gemini", "gemini"),
            Host::Cursor => (".cursor", "cursor-agent"),
        }
    }
}

/// Where things go, from the environment.
#[derive(Debug, Clone)]
pub struct Layout {
    pub home: PathBuf,
    /// Pitroom's data dir: the skills, the manifest, the backups.
    pub data: PathBuf,
    /// Claude Code's config dir (`$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    pub claude: PathBuf,
    /// `~/.agents/skills`: read by Codex, Gemini CLI and Cursor.
    pub agents_skills: PathBuf,
    /// The caller's PATH, to find host CLIs.
    pub path: String,
}

impl Layout {
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Layout, String> {
        let home = env("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or("HOME is not set; set it to your home directory")?;
        let data = env("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(|d| PathBuf::from(d).join("pitroom"))
            .unwrap_or_else(|| home.join(".local/share/pitroom"));
        let claude = env("CLAUDE_CONFIG_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".claude"));
        Ok(Layout {
            agents_skills: home.join(".agents/skills"),
            home,
            data,
            claude,
            path: env("PATH").unwrap_or_default(),
        })
    }

    pub fn manifest(&self) -> PathBuf {
        self.data.join("install.json")
    }

    fn skill_store(&self) -> PathBuf {
        self.data.join("skills")
    }

    /// Where `host` looks for user skills.
    pub fn skills_dir(&self, host: Host) -> PathBuf {
        match host {
            Host::Claude => self.claude.join("skills"),
            Host::Codex | Host::Gemini | Host::Cursor => self.agents_skills.clone(),
        }
    }

    fn settings(&self) -> PathBuf {
        self.claude.join("settings.json")
    }

    /// A path with the home shown as `~`, for messages.
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }

    fn host_present(&self, host: Host) -> bool {
        let (dir, cli) = host.traces();
        let dir = match host {
            Host::Claude => self.claude.clone(),
            _ => self.home.join(dir),
        };
        dir.is_dir() || std::env::split_paths(&self.path).any(|d| d.join(cli).is_file())
    }
}

/// One thing `install` made, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A directory that did not exist.
    Dir { path: PathBuf },
    /// A file written where there was none; `hash` of what was written.
    File { path: PathBuf, hash: String },
    /// A symlink made where there was nothing.
    Link { path: PathBuf, target: PathBuf },
    /// A file Pitroom did not write, rewritten with `--force`; the original is at `backup`.
    Edited {
        path: PathBuf,
        backup: PathBuf,
        hash: String,
    },
    /// Something Pitroom did not make, moved to `backup` with `--force` to make room.
    MovedAside { path: PathBuf, backup: PathBuf },
}

impl Entry {
    fn path(&self) -> &Path {
        match self {
            Entry::Dir { path }
            | Entry::File { path, .. }
            | Entry::Link { path, .. }
            | Entry::Edited { path, .. }
            | Entry::MovedAside { path, .. } => path,
        }
    }
}

/// The install manifest: what `uninstall` removes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub pitroom: String,
    pub hosts: Vec<Host>,
    pub entries: Vec<Entry>,
}

impl Manifest {
    pub fn load(path: &Path) -> Result<Option<Manifest>, String> {
        match std::fs::read(path) {
            Ok(raw) => serde_json::from_slice(&raw).map(Some).map_err(|e| {
                format!(
                    "{} is not a Pitroom install manifest ({e}); move it away to start afresh",
                    path.display()
                )
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    fn owns(&self, path: &Path) -> Option<&Entry> {
        self.entries.iter().rev().find(|e| e.path() == path)
    }
}

/// A stable content hash (FNV-1a, 64 bits): enough to tell "still what we wrote" from "changed".
pub fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// What install wants at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Want {
    File {
        path: PathBuf,
        contents: Vec<u8>,
    },
    Link {
        path: PathBuf,
        target: PathBuf,
    },
    /// Claude Code's settings with `statusLine` set.
    Settings {
        path: PathBuf,
    },
}

impl Want {
    fn path(&self) -> &Path {
        match self {
            Want::File { path, .. } | Want::Link { path, .. } | Want::Settings { path } => path,
        }
    }
}

/// What to do about one wanted item, given what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// Already exactly so (ours from an earlier install, or identical and left unrecorded).
    Keep,
    /// Nothing there: make it.
    Make,
    /// Ours from an earlier install, to be refreshed (a newer binary's skill text).
    Refresh,
    /// Something Pitroom did not make is there.
    Foreign,
}

pub fn install(args: InstallArgs) -> i32 {
    let layout = match Layout::from_env(&crate::commands::env_lookup) {
        Ok(l) => l,
        Err(e) => return refuse(&e),
    };
    let hosts = match pick_hosts(&layout, args.host) {
        Ok(h) => h,
        Err(e) => return refuse(&e),
    };
    if args.statusline && !hosts.contains(&Host::Claude) {
        output::error("the status line is Claude Code's: add --host claude (or all)");
        return exit::USAGE;
    }
    let mut manifest = match Manifest::load(&layout.manifest()) {
        Ok(m) => m.unwrap_or_default(),
        Err(e) => return refuse(&e),
    };
    let wants = wanted(&layout, &hosts, args.statusline);
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
        output::error("refusing to replace what Pitroom did not write:");
        for w in &foreign {
            eprintln!("  {}", layout.show(w.path()));
        }
        output::hint(
            "move them away, or re-run with --force (the originals are kept in Pitroom's data dir and `pitroom uninstall` puts them back)",
        );
        return exit::REFUSED;
    }
    if args.dry_run {
        print_plan(&layout, &steps);
        print_registrations(&hosts, args.statusline);
        return exit::OK;
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
        output::error(format!(
            "{e}; what was made so far is recorded, and `pitroom uninstall` removes it"
        ));
        return exit::REFUSED;
    }
    print_done(&layout, &hosts, &steps);
    print_registrations(&hosts, args.statusline);
    for twice in double_loads(&layout) {
        output::warning(twice);
    }
    exit::OK
}

fn refuse(message: &str) -> i32 {
    output::error(message);
    exit::REFUSED
}

/// The hosts to install for: the one asked, all, or those found.
pub fn pick_hosts(layout: &Layout, asked: Option<HostArg>) -> Result<Vec<Host>, String> {
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

/// Everything install wants for these hosts: the skill files, a link per skill and skills
/// dir, and the settings when the status line is asked for.
fn wanted(layout: &Layout, hosts: &[Host], statusline: bool) -> Vec<Want> {
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
    if statusline {
        wants.push(Want::Settings {
            path: layout.settings(),
        });
    }
    wants
}

fn step_for(want: &Want, manifest: &Manifest) -> Step {
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
        (
            Some(Entry::File { hash: h, .. } | Entry::Edited { hash: h, .. }),
            Want::Settings { .. },
        ) => match std::fs::read(path) {
            Ok(now) if hash(&now) == *h => Step::Keep,
            Ok(_) => Step::Foreign,
            Err(_) => Step::Make,
        },
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

fn apply_steps(
    layout: &Layout,
    steps: &[(Want, Step)],
    manifest: &mut Manifest,
) -> Result<(), String> {
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
    for (want, step) in steps {
        match step {
            Step::Keep => {}
            Step::Make | Step::Refresh => make(layout, want, manifest, None)?,
            Step::Foreign => {
                let backup = layout
                    .data
                    .join("backups")
                    .join(&stamp)
                    .join(relative(layout, want.path()));
                make(layout, want, manifest, Some(backup))?;
            }
        }
    }
    Ok(())
}

/// The path below the home (or the root), for a backup's place.
fn relative(layout: &Layout, path: &Path) -> PathBuf {
    path.strip_prefix(&layout.home)
        .map(|p| Path::new("home").join(p))
        .unwrap_or_else(|_| Path::new("root").join(path.strip_prefix("/").unwrap_or(path)))
}

/// Makes one wanted item; with `backup`, what is there is first kept at that path.
fn make(
    layout: &Layout,
    want: &Want,
    manifest: &mut Manifest,
    backup: Option<PathBuf>,
) -> Result<(), String> {
    let path = want.path();
    if let Some(parent) = path.parent() {
        ensure_dir(parent, manifest)?;
    }
    if let Want::Settings { path } = want {
        return write_settings(layout, path, manifest, backup);
    }
    if let Some(backup) = &backup {
        if let Some(dir) = backup.parent() {
            ensure_dir(dir, manifest)?;
        }
        std::fs::rename(path, backup).map_err(|e| io_error("move aside", path, &e))?;
        manifest.entries.push(Entry::MovedAside {
            path: path.to_path_buf(),
            backup: backup.clone(),
        });
    }
    match want {
        Want::File { path, contents } => {
            let fresh = manifest.owns(path).is_none() || backup.is_some();
            std::fs::write(path, contents).map_err(|e| io_error("write", path, &e))?;
            let h = hash(contents);
            match manifest.entries.iter_mut().rev().find(|e| e.path() == path) {
                Some(Entry::File { hash, .. }) if !fresh => *hash = h,
                _ => manifest.entries.push(Entry::File {
                    path: path.clone(),
                    hash: h,
                }),
            }
        }
        Want::Link { path, target } => {
            std::os::unix::fs::symlink(target, path).map_err(|e| io_error("link", path, &e))?;
            manifest.entries.push(Entry::Link {
                path: path.clone(),
                target: target.clone(),
            });
        }
        Want::Settings { .. } => {}
    }
    Ok(())
}

/// Creates `dir` and any missing parents, recording each one made (outermost first).
fn ensure_dir(dir: &Path, manifest: &mut Manifest) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.exists() {
            break;
        }
        missing.push(d.to_path_buf());
        cur = d.parent();
    }
    for d in missing.into_iter().rev() {
        std::fs::create_dir(&d).map_err(|e| io_error("create", &d, &e))?;
        manifest.entries.push(Entry::Dir { path: d });
    }
    Ok(())
}

/// The status-line setting, and the command it runs (the user's own one kept behind `--then`).
pub fn statusline_setting(existing: Option<&Value>) -> Value {
    let theirs = existing
        .and_then(|s| s["command"].as_str())
        .filter(|c| !c.trim_start().starts_with("pitroom statusline"));
    let command = match theirs {
        Some(c) => format!("pitroom statusline --then {}", shell_quote(c)),
        None => "pitroom statusline".into(),
    };
    serde_json::json!({"type": "command", "command": command, "padding": 0, "refreshInterval": 5})
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn write_settings(
    layout: &Layout,
    path: &Path,
    manifest: &mut Manifest,
    backup: Option<PathBuf>,
) -> Result<(), String> {
    let original = match std::fs::read(path) {
        Ok(raw) => Some(raw),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(io_error("read", path, &e)),
    };
    let mut settings: Value = match &original {
        Some(raw) => serde_json::from_slice(raw).map_err(|e| {
            format!(
                "{} is not valid JSON ({e}); fix it, then run install again",
                layout.show(path)
            )
        })?,
        None => serde_json::json!({}),
    };
    let Some(object) = settings.as_object_mut() else {
        return Err(format!("{} does not hold a JSON object", layout.show(path)));
    };
    let line = statusline_setting(object.get("statusLine"));
    object.insert("statusLine".into(), line);
    let mut text = serde_json::to_vec_pretty(&settings).map_err(|e| e.to_string())?;
    text.push(b'\n');
    let h = hash(&text);
    match (original, backup) {
        (Some(raw), Some(backup)) => {
            if let Some(dir) = backup.parent() {
                ensure_dir(dir, manifest)?;
            }
            std::fs::write(&backup, &raw).map_err(|e| io_error("back up", &backup, &e))?;
            write_atomically(path, &text)?;
            manifest.entries.push(Entry::Edited {
                path: path.to_path_buf(),
                backup,
                hash: h,
            });
        }
        (Some(_), None) => {
            // Ours from an earlier install (the step said so): refresh its hash.
            write_atomically(path, &text)?;
            if let Some(Entry::File { hash, .. } | Entry::Edited { hash, .. }) =
                manifest.entries.iter_mut().rev().find(|e| e.path() == path)
            {
                *hash = h;
            }
        }
        (None, _) => {
            write_atomically(path, &text)?;
            manifest.entries.push(Entry::File {
                path: path.to_path_buf(),
                hash: h,
            });
        }
    }
    Ok(())
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    pitroom_core::record::write_atomic(path, bytes).map_err(|e| io_error("write", path, &e))
}

fn save_manifest(layout: &Layout, manifest: &mut Manifest) -> Result<(), String> {
    let path = layout.manifest();
    ensure_dir(&layout.data, manifest)?;
    let mut raw = serde_json::to_vec_pretty(manifest).map_err(|e| e.to_string())?;
    raw.push(b'\n');
    write_atomically(&path, &raw)
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> String {
    format!("could not {what} {}: {e}", path.display())
}

fn print_plan(layout: &Layout, steps: &[(Want, Step)]) {
    println!("pitroom install --dry-run: nothing is changed");
    for (want, step) in steps {
        let what = match (want, step) {
            (_, Step::Keep) => continue,
            (Want::File { .. }, Step::Refresh) => "refresh",
            (Want::File { .. }, _) => "write",
            (Want::Link { .. }, _) => "link",
            (Want::Settings { .. }, _) => "set statusLine in",
        };
        let aside = if *step == Step::Foreign {
            " (moving the existing one aside: --force)"
        } else {
            ""
        };
        match want {
            Want::Link { path, target } => println!(
                "  {what} {} → {}{aside}",
                layout.show(path),
                layout.show(target)
            ),
            _ => println!("  {what} {}{aside}", layout.show(want.path())),
        }
    }
}

fn print_done(layout: &Layout, hosts: &[Host], steps: &[(Want, Step)]) {
    let made = steps.iter().filter(|(_, s)| *s != Step::Keep).count();
    let names: Vec<&str> = hosts.iter().map(|h| h.name()).collect();
    if made == 0 {
        println!("pitroom: already installed for {}", names.join(", "));
    } else {
        println!("pitroom: installed for {}", names.join(", "));
    }
    let mut dirs: Vec<PathBuf> = hosts.iter().map(|h| layout.skills_dir(*h)).collect();
    dirs.dedup();
    for dir in dirs {
        println!(
            "  {} skills linked in {} (→ {})",
            SKILLS.len(),
            layout.show(&dir),
            layout.show(&layout.skill_store())
        );
    }
    if steps
        .iter()
        .any(|(w, s)| matches!(w, Want::Settings { .. }) && *s != Step::Keep)
    {
        println!("  status line set in {}", layout.show(&layout.settings()));
    }
    println!("  undo with: pitroom uninstall");
}

/// The MCP registration for each host (Pitroom never edits the hosts' own config files).
fn print_registrations(hosts: &[Host], statusline: bool) {
    for host in hosts {
        if let Ok(snippet) = pitroom_mcp::hosts::config_for(host.name()) {
            println!(
                "\nMCP for {} (optional; the skills work without it):",
                host.name()
            );
            for line in snippet.lines() {
                println!("  {line}");
            }
        }
    }
    if hosts.contains(&Host::Claude) && !statusline {
        println!("\nStatus line: pitroom install --host claude --statusline");
    }
}

pub fn uninstall(args: UninstallArgs) -> i32 {
    let layout = match Layout::from_env(&crate::commands::env_lookup) {
        Ok(l) => l,
        Err(e) => return refuse(&e),
    };
    let manifest = match Manifest::load(&layout.manifest()) {
        Ok(Some(m)) => m,
        Ok(None) => {
            println!(
                "pitroom: nothing to uninstall (no manifest at {})",
                layout.show(&layout.manifest())
            );
            return exit::OK;
        }
        Err(e) => return refuse(&e),
    };
    if args.dry_run {
        println!("pitroom uninstall --dry-run: nothing is changed");
        for entry in manifest.entries.iter().rev() {
            println!("  {}", describe(&layout, entry));
        }
        return exit::OK;
    }
    let manifest_path = layout.manifest();
    if let Err(e) = std::fs::remove_file(&manifest_path) {
        return refuse(&io_error("remove", &manifest_path, &e));
    }
    let mut left = 0;
    for entry in manifest.entries.iter().rev() {
        if let Err(why) = undo(entry) {
            output::warning(format!("left {}: {why}", layout.show(entry.path())));
            left += 1;
        }
    }
    if left == 0 {
        println!("pitroom: uninstalled; everything install made is gone");
    } else {
        println!(
            "pitroom: uninstalled; {left} path(s) changed since install were left as they are (see above)"
        );
    }
    exit::OK
}

fn describe(layout: &Layout, entry: &Entry) -> String {
    match entry {
        Entry::Dir { path } => format!("remove dir {}", layout.show(path)),
        Entry::File { path, .. } => format!("remove {}", layout.show(path)),
        Entry::Link { path, .. } => format!("remove link {}", layout.show(path)),
        Entry::Edited { path, backup, .. } => {
            format!("restore {} from {}", layout.show(path), layout.show(backup))
        }
        Entry::MovedAside { path, backup } => {
            format!("move {} back to {}", layout.show(backup), layout.show(path))
        }
    }
}

/// Reverses one entry, only if what is there is still what install made.
fn undo(entry: &Entry) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    match entry {
        Entry::Dir { path } => match std::fs::remove_dir(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(_) => Err("it holds files install did not make".into()),
        },
        Entry::File { path, hash: h } => match std::fs::read(path) {
            Ok(now) if hash(&now) == *h => std::fs::remove_file(path).map_err(io),
            Ok(_) => Err("changed since install".into()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.to_string()),
        },
        Entry::Link { path, target } => match std::fs::read_link(path) {
            Ok(now) if now == *target => std::fs::remove_file(path).map_err(io),
            Ok(_) => Err("now points elsewhere".into()),
            Err(_) if std::fs::symlink_metadata(path).is_err() => Ok(()),
            Err(_) => Err("no longer the link install made".into()),
        },
        Entry::Edited {
            path,
            backup,
            hash: h,
        } => match std::fs::read(path) {
            Ok(now) if hash(&now) == *h => std::fs::rename(backup, path).map_err(io),
            _ => Err(format!(
                "changed since install; the original is at {}",
                backup.display()
            )),
        },
        Entry::MovedAside { path, backup } => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(format!(
                    "something new is there; the original is at {}",
                    backup.display()
                ));
            }
            std::fs::rename(backup, path).map_err(io)
        }
    }
}

/// `doctor`'s skills line: a warning when they would load twice, else where they are.
pub fn doctor_skills() -> (bool, String) {
    let layout = match Layout::from_env(&crate::commands::env_lookup) {
        Ok(l) => l,
        Err(e) => return (false, e),
    };
    let twice = double_loads(&layout);
    if !twice.is_empty() {
        return (false, twice.join("; "));
    }
    let installed = match Manifest::load(&layout.manifest()) {
        Ok(Some(m)) => m
            .hosts
            .iter()
            .map(|h| h.name())
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    };
    if installed.is_empty() {
        (
            true,
            "not linked (a host plugin, or `pitroom install`, adds them)".into(),
        )
    } else {
        (true, format!("linked for {installed} by `pitroom install`"))
    }
}

/// For `doctor`: places where the skills would load twice, one line each.
pub fn double_loads(layout: &Layout) -> Vec<String> {
    let linked =
        |dir: &Path| std::fs::symlink_metadata(dir.join(super::skills::INTRODUCTION)).is_ok();
    let mut out = Vec::new();
    if claude_plugin_installed(layout) && linked(&layout.skills_dir(Host::Claude)) {
        out.push(format!(
            "Claude Code loads the skills twice: from the pitroom plugin and from {}; run `pitroom uninstall` or disable the plugin",
            layout.show(&layout.skills_dir(Host::Claude))
        ));
    }
    if codex_plugin_installed(layout) && linked(&layout.agents_skills) {
        out.push(format!(
            "Codex lists the skills twice: from the pitroom plugin and from {}; run `pitroom uninstall` or remove the plugin",
            layout.show(&layout.agents_skills)
        ));
    }
    if layout.home.join(".gemini/extensions/pitroom").exists() && linked(&layout.agents_skills) {
        out.push(format!(
            "Gemini CLI has the skills from the pitroom extension and from {}; run `pitroom uninstall` or uninstall the extension",
            layout.show(&layout.agents_skills)
        ));
    }
    out
}

/// The plugin is enabled in the user's settings, or Claude Code recorded it as installed.
fn claude_plugin_installed(layout: &Layout) -> bool {
    let enabled = std::fs::read(layout.settings())
        .ok()
        .and_then(|raw| serde_json::from_slice::<Value>(&raw).ok())
        .and_then(|v| v["enabledPlugins"].as_object().cloned())
        .is_some_and(|m| {
            m.iter()
                .any(|(k, v)| k.starts_with("pitroom@") && v != &Value::Bool(false))
        });
    let recorded = std::fs::read_to_string(layout.claude.join("plugins/installed_plugins.json"))
        .is_ok_and(|t| t.contains("\"pitroom@"));
    enabled || recorded
}

fn codex_plugin_installed(layout: &Layout) -> bool {
    let cache = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| layout.home.join(".codex"))
        .join("plugins/cache");
    std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .any(|m| m.path().join("pitroom").exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_own_status_command_is_kept_behind_then() {
        let existing = serde_json::json!({"type": "command", "command": "~/bin/my line's"});
        let v = statusline_setting(Some(&existing));
        assert_eq!(
            v["command"],
            r"pitroom statusline --then '~/bin/my line'\''s'"
        );
        let ours = serde_json::json!({"command": "pitroom statusline"});
        assert_eq!(
            statusline_setting(Some(&ours))["command"],
            "pitroom statusline"
        );
        assert_eq!(statusline_setting(None)["refreshInterval"], 5);
    }

    #[test]
    fn the_content_hash_is_stable() {
        assert_eq!(hash(b""), "cbf29ce484222325");
        assert_ne!(hash(b"a"), hash(b"b"));
    }
}
