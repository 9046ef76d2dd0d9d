//! `pitroom install` / `uninstall` on a scratch home: what goes where, what is never touched,
//! and that uninstall leaves the home byte-identical.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use pitroom_testkit::TestEnv;
use serde_json::Value;

use super::common::assert_str_has;
use super::common::{assert_exit, assert_stdout_has, json_stdout, text, PITROOM};

/// Everything under `root`: each path with its kind and bytes (or link target).
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(root).expect("inside").to_path_buf();
        let meta = std::fs::symlink_metadata(&path).expect("metadata");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("link");
            out.insert(rel, format!("link → {}", target.display()));
        } else if meta.is_dir() {
            out.insert(rel, "dir".into());
            walk(root, &path, out);
        } else {
            let bytes = std::fs::read(&path).expect("file");
            out.insert(rel, format!("file {}", String::from_utf8_lossy(&bytes)));
        }
    }
}

/// A scratch home with some of the user's own things in it, and the XDG data dir left to its
/// default (inside the home), so every byte install writes lands under the home.
struct Home {
    env: TestEnv,
}

impl Home {
    fn new() -> Home {
        let env = TestEnv::new(Path::new(PITROOM));
        let claude = env.home.join(".claude");
        std::fs::create_dir_all(claude.join("skills/my-own-skill")).expect("claude dir");
        std::fs::write(claude.join("skills/my-own-skill/SKILL.md"), "mine\n").expect("own skill");
        std::fs::write(claude.join("CLAUDE.md"), "user notes\n").expect("notes");
        std::fs::create_dir_all(env.home.join(".local/share/other")).expect("data dir");
        std::fs::write(env.home.join(".local/share/other/keep"), "x").expect("other data");
        Home { env }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.env.pitroom(&self.env.home, args);
        cmd.env_remove("XDG_DATA_HOME");
        cmd.output().expect("pitroom runs")
    }

    /// `pitroom ARGS` in the home, asserting it exits `code`.
    fn run_expecting(&self, args: &[&str], code: i32) -> Output {
        let out = self.run(args);
        assert_exit(&out, code);
        out
    }

    /// `pitroom uninstall` succeeds and leaves the home as it was `before`.
    fn assert_uninstall_restores(&self, before: &BTreeMap<PathBuf, String>) {
        self.run_expecting(&["uninstall"], 0);
        assert_eq!(&self.snapshot(), before);
    }

    /// A `pitroom-review` skill of someone else's where install would link its own.
    fn foreign_skill(&self) -> PathBuf {
        let skill = self.path(".claude/skills/pitroom-review");
        std::fs::create_dir_all(&skill).expect("foreign skill dir");
        std::fs::write(skill.join("SKILL.md"), "someone else's\n").expect("foreign skill");
        skill
    }

    /// The user's `~/.claude/settings.json`.
    fn claude_settings(&self) -> Value {
        serde_json::from_slice(
            &std::fs::read(self.path(".claude/settings.json")).expect("settings"),
        )
        .expect("json")
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.env.home.join(rel)
    }

    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        snapshot(&self.env.home)
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn repo_skill(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../skills")
            .join(name)
            .join("SKILL.md"),
    )
    .expect("repository skill")
}

#[test]
fn install_then_uninstall_leaves_the_home_byte_identical() {
    let home = Home::new();
    let before = home.snapshot();
    let out = home.run_expecting(&["install", "--host", "all", "--statusline"], 0);

    let store = home.path(".local/share/pitroom/skills/using-pitroom");
    for dir in [
        ".claude/skills/using-pitroom",
        ".agents/skills/using-pitroom",
    ] {
        assert_eq!(std::fs::read_link(home.path(dir)).expect("a link"), store);
        assert_eq!(
            std::fs::read_to_string(home.path(dir).join("SKILL.md")).expect("skill through link"),
            repo_skill("using-pitroom")
        );
    }
    let settings = home.claude_settings();
    assert_eq!(settings["statusLine"]["command"], "pitroom statusline");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("claude mcp add"),
        "MCP registration printed: {stdout}"
    );
    assert_stdout_has(&out, "[mcp_servers.pitroom]");
    assert!(home.path(".claude/skills/my-own-skill/SKILL.md").is_file());

    home.assert_uninstall_restores(&before);
}

#[test]
fn install_refuses_to_replace_foreign_files_names_them_and_changes_nothing() {
    let home = Home::new();
    home.foreign_skill();
    std::fs::write(
        home.path(".claude/settings.json"),
        r#"{"model": "opus", "statusLine": {"type": "command", "command": "my-status"}}"#,
    )
    .expect("settings");
    let before = home.snapshot();
    let out = home.run_expecting(&["install", "--host", "claude", "--statusline"], 3);
    let err = stderr(&out);
    assert!(err.contains("~/.claude/skills/pitroom-review"), "{err}");
    assert!(err.contains("~/.claude/settings.json"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(home.snapshot(), before, "nothing was written");
}

#[test]
fn install_force_keeps_the_originals_and_uninstall_puts_them_back() {
    let home = Home::new();
    let foreign_skill = home.foreign_skill();
    let original =
        r#"{"model": "opus", "statusLine": {"type": "command", "command": "my-status"}}"#;
    std::fs::write(home.path(".claude/settings.json"), original).expect("settings");
    let before = home.snapshot();

    home.run_expecting(
        &["install", "--host", "claude", "--statusline", "--force"],
        0,
    );
    assert!(
        std::fs::read_link(&foreign_skill).is_ok(),
        "replaced by the link"
    );
    let settings = home.claude_settings();
    assert_eq!(settings["model"], "opus", "the user's settings are kept");
    assert_eq!(
        settings["statusLine"]["command"],
        "pitroom statusline --then 'my-status'"
    );

    home.assert_uninstall_restores(&before);
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let home = Home::new();
    let before = home.snapshot();
    let out = home.run_expecting(&["install", "--host", "codex", "--dry-run"], 0);
    assert_stdout_has(&out, "link ~/.agents/skills/pitroom-crew");
    assert_eq!(home.snapshot(), before);
}

#[test]
fn a_second_install_changes_nothing_and_one_uninstall_removes_it_all() {
    let home = Home::new();
    let before = home.snapshot();
    home.run_expecting(&["install", "--host", "gemini"], 0);
    let installed = home.snapshot();
    let again = home.run_expecting(&["install", "--host", "gemini"], 0);
    assert!(String::from_utf8_lossy(&again.stdout).contains("already installed"));
    assert_eq!(home.snapshot(), installed);
    home.assert_uninstall_restores(&before);
    let nothing = home.run_expecting(&["uninstall"], 0);
    assert!(String::from_utf8_lossy(&nothing.stdout).contains("nothing to uninstall"));
}

#[test]
fn uninstall_leaves_a_skill_file_the_user_changed_since() {
    let home = Home::new();
    home.run_expecting(&["install", "--host", "claude"], 0);
    let edited = home.path(".local/share/pitroom/skills/pitroom-crew/SKILL.md");
    std::fs::write(&edited, "my edits\n").expect("edit");
    let out = home.run_expecting(&["uninstall"], 0);
    assert!(
        stderr(&out).contains("changed since install"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&edited).expect("kept"),
        "my edits\n"
    );
    assert!(!home.path(".claude/skills/pitroom-crew").exists());
}

#[test]
fn without_a_host_install_picks_the_hosts_found_or_says_what_it_looked_for() {
    let home = Home::new();
    // ~/.claude exists: Claude Code is found.
    let out = home.run_expecting(&["install", "--dry-run"], 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("~/.claude/skills/using-pitroom"));
    let bare = TestEnv::new(Path::new(PITROOM));
    let out = bare
        .pitroom(&bare.home, &["install"])
        .env("PATH", "/nonexistent")
        .output()
        .expect("runs");
    assert_exit(&out, 3);
    assert!(stderr(&out).contains("--host"), "{}", text(&out));
}

#[test]
fn doctor_warns_when_the_plugin_and_the_links_would_load_the_skills_twice() {
    let home = Home::new();
    home.run_expecting(&["install", "--host", "claude"], 0);
    let doctor = |home: &Home| -> Value {
        let out = home.run(&["doctor", "--json"]);
        let v = json_stdout(&out);
        v["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["check"] == "skills")
            .cloned()
            .expect("a skills check")
    };
    let quiet = doctor(&home);
    assert_eq!(quiet["ok"], true, "{quiet}");
    std::fs::write(
        home.path(".claude/settings.json"),
        r#"{"enabledPlugins": {"pitroom@pitroom": true}}"#,
    )
    .expect("plugin enabled");
    let twice = doctor(&home);
    assert_eq!(twice["ok"], false, "{twice}");
    assert_str_has(&twice, "/detail", "twice");
}

#[test]
fn a_fresh_machine_without_a_worker_cli_is_told_what_to_install_and_about_the_demo() {
    let env = TestEnv::new(Path::new(PITROOM));
    let bin = env.dir("bin");
    let git = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
        .expect("git on PATH");
    std::os::unix::fs::symlink(git, bin.join("git")).expect("git link");
    let repo = pitroom_testkit::repo::dirty_repo(&env, "repo");
    let out = env
        .pitroom(&repo, &["Which files read the session cookie?"])
        .env("PATH", &bin)
        .output()
        .expect("pitroom runs");
    assert_exit(&out, 3);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].contains("opencode not found on PATH"), "{err}");
    assert!(
        lines[0].contains("codex, claude, gemini, qwen, kilo"),
        "{err}"
    );
    assert!(lines[1].contains("npm i -g opencode-ai"), "{err}");
    assert!(lines[2].contains("pitroom demo"), "{err}");
}

#[test]
fn install_review_gate_adds_a_stop_hook_beside_the_users_own_and_uninstall_removes_it() {
    let home = Home::new();
    let original = r#"{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "my-notify"}]}]}}"#;
    std::fs::write(home.path(".claude/settings.json"), original).expect("settings");
    let before = home.snapshot();
    // The settings are the user's: refused without --force, named.
    let out = home.run_expecting(&["install", "--host", "claude", "--review-gate"], 3);
    let err = stderr(&out);
    assert!(err.contains("~/.claude/settings.json"), "{err}");
    assert_eq!(home.snapshot(), before, "nothing was written");

    let out = home.run_expecting(
        &["install", "--host", "claude", "--review-gate", "--force"],
        0,
    );
    assert_stdout_has(&out, "review gate set in ~/.claude/settings.json");
    let settings = home.claude_settings();
    assert_eq!(settings["model"], "opus", "the user's settings are kept");
    assert!(settings.get("statusLine").is_none(), "only what was asked");
    let stop = settings["hooks"]["Stop"].as_array().expect("Stop hooks");
    assert_eq!(stop.len(), 2, "{settings:#}");
    assert_eq!(stop[0]["hooks"][0]["command"], "my-notify");
    assert_eq!(stop[1]["hooks"][0]["command"], "pitroom hook review-gate");
    assert_eq!(stop[1]["hooks"][0]["timeout"], 900);

    // Again: nothing changes. Then the status line joins the same file.
    let installed = home.snapshot();
    home.run_expecting(&["install", "--host", "claude", "--review-gate"], 0);
    assert_eq!(home.snapshot(), installed);
    home.run_expecting(&["install", "--host", "claude", "--statusline"], 0);
    let settings = home.claude_settings();
    assert_eq!(settings["statusLine"]["command"], "pitroom statusline");
    assert_eq!(settings["hooks"]["Stop"].as_array().map(Vec::len), Some(2));

    home.assert_uninstall_restores(&before);
}

#[test]
fn install_review_gate_needs_claude_code() {
    let home = Home::new();
    let before = home.snapshot();
    let out = home.run_expecting(&["install", "--host", "codex", "--review-gate"], 2);
    let err = stderr(&out);
    assert!(err.contains("--host claude"), "{err}");
    assert_eq!(home.snapshot(), before);
    let plan = home.run_expecting(
        &["install", "--host", "claude", "--review-gate", "--dry-run"],
        0,
    );
    assert_stdout_has(
        &plan,
        "set the review gate's Stop hook in ~/.claude/settings.json",
    );
    let told = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(
        !told.contains("Review gate at the end"),
        "asked for: {told}"
    );
    assert_eq!(home.snapshot(), before);
    // Without it, install says how to add it.
    let plain = home.run_expecting(&["install", "--host", "claude", "--dry-run"], 0);
    assert_stdout_has(
        &plain,
        "Review gate at the end of each turn (opt-in): pitroom install --host claude --review-gate",
    );
}
