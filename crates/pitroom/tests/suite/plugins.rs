//! The committed host packages, checked by the real hosts at their pinned versions (installed
//! by the test kit): Claude Code's validator, Codex's plugin installer, Gemini CLI's extension
//! linker. Each host runs with a scratch HOME, so nothing reaches the developer's own set-up.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pitroom_testkit::real_cli;
use serde_json::Value;

use super::common::{assert_exit, code, fake_worker, text};

/// A scratch world holding the folders `names` (created); returns it and their paths.
fn scratch_world<const N: usize>(names: [&str; N]) -> (tempfile::TempDir, [PathBuf; N]) {
    let world = tempfile::tempdir().expect("scratch world");
    let dirs = names.map(|name| world.path().join(name));
    for d in &dirs {
        std::fs::create_dir_all(d).expect("dir");
    }
    (world, dirs)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// `gemini extensions link` of this repository, with consent, in the scratch `home`.
fn link_extension(gemini: &Path, home: &Path) -> Output {
    host(gemini, home)
        .args([
            "extensions",
            "link",
            &repo_root().display().to_string(),
            "--consent",
        ])
        .output()
        .expect("gemini runs")
}

const SKILL_COUNT: usize = 14;

/// A host CLI with a scratch home and no way off the machine.
fn host(program: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("HOME", home)
        .env(
            "PATH",
            real_cli::path_with_node22().expect("Node 22 installs from npm"),
        )
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .current_dir(home);
    cmd
}

/// `claude plugin validate --json [--strict] TARGET`, which must pass; returns its report.
fn validate(claude: &Path, home: &Path, strict: bool, target: &Path) -> Value {
    let out = host(claude, home)
        .args(["plugin", "validate", "--json"])
        .args(strict.then_some("--strict"))
        .arg(target)
        .output()
        .expect("claude runs");
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn claude_plugin_validate_accepts_the_plugin_and_the_marketplace() {
    let claude = real_cli::claude().expect("the pinned Claude Code installs from npm");
    let home = tempfile::tempdir().expect("scratch home");
    let root = repo_root();

    let report = validate(&claude, home.path(), true, &root.join("plugins/pitroom"));
    assert_eq!(report["success"], true, "{report:#}");
    assert_eq!(report["manifest"]["type"], "plugin", "{report:#}");
    let skills = report["provides"]["skills"].as_array().expect("skills");
    assert_eq!(skills.len(), SKILL_COUNT, "{report:#}");
    assert!(skills.iter().any(|s| s == "pitroom:using-pitroom"));
    let events: Vec<&str> = report["provides"]["hooks"]
        .as_array()
        .expect("hooks")
        .iter()
        .filter_map(|h| h["event"].as_str())
        .collect();
    assert_eq!(
        events,
        vec!["SessionStart", "PostToolUse", "Stop"],
        "{report:#}"
    );
    let gate = report["provides"]["hooks"][2]["command"]
        .as_str()
        .expect("the Stop hook's command");
    assert!(
        gate.contains("pitroom hook review-gate --if-enabled"),
        "{gate}"
    );
    assert_eq!(report["provides"]["mcpServers"][0]["name"], "pitroom");

    let marketplace = root.join(".claude-plugin/marketplace.json");
    let report = validate(&claude, home.path(), true, &marketplace);
    assert_eq!(report["manifest"]["type"], "marketplace", "{report:#}");

    // The repository root as a whole (what `claude plugin validate .` sees): it passes. Its one
    // warning is Gemini CLI's AfterTool event in the root hooks file, the extension's.
    let report = validate(&claude, home.path(), false, &root);
    assert_eq!(report["success"], true, "{report:#}");
}

/// `codex plugin marketplace add` (this repository) then `codex plugin add pitroom@pitroom`,
/// with the real Codex in a scratch home; returns the Codex home and the installed plugin's
/// directory in Codex's plugin cache.
fn install_codex_plugin(codex: &Path, home: &Path) -> (PathBuf, PathBuf) {
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).expect("codex home");
    let run = |args: &[&str]| {
        let out = host(codex, home)
            .env("CODEX_HOME", &codex_home)
            .args(args)
            .output()
            .expect("codex runs");
        assert_eq!(code(&out), 0, "codex {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&[
        "plugin",
        "marketplace",
        "add",
        &repo_root().display().to_string(),
    ]);
    run(&["plugin", "add", "pitroom@pitroom"]);
    let list = run(&["plugin", "list"]);
    assert!(
        list.lines()
            .any(|l| l.starts_with("pitroom@pitroom") && l.contains("installed, enabled")),
        "{list}"
    );
    let installed = codex_home.join("plugins/cache/pitroom/pitroom");
    let version_dir = std::fs::read_dir(&installed)
        .expect("the plugin's cache")
        .flatten()
        .next()
        .expect("one version")
        .path();
    (codex_home, version_dir)
}

/// Points the Codex of `codex_home` at the fake Responses `server`: the model provider goes into
/// the config `codex plugin add` wrote (it enables the plugin there), top-level keys first,
/// before its tables. The key is `FAKE_API_KEY`.
fn use_fake_model(codex_home: &Path, server: &pitroom_testkit::FakeResponses) {
    let config_path = codex_home.join("config.toml");
    let installed = std::fs::read_to_string(&config_path).expect("config.toml from plugin add");
    assert!(installed.contains("pitroom@pitroom"), "{installed}");
    let config = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\n{installed}\n\
         [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}\"\n\
         wire_api = \"responses\"\nenv_key = \"FAKE_API_KEY\"\n",
        server.base_url()
    );
    std::fs::write(&config_path, config).expect("config");
}

#[test]
fn codex_installs_the_plugin_from_the_repository_marketplace() {
    let codex = real_cli::codex().expect("the pinned Codex installs from npm");
    let home = tempfile::tempdir().expect("scratch home");
    let (_, version_dir) = install_codex_plugin(&codex, home.path());
    let skills = std::fs::read_dir(version_dir.join("skills"))
        .expect("skills copied")
        .count();
    assert_eq!(skills, SKILL_COUNT);
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(version_dir.join(".codex-plugin/plugin.json")).expect("manifest"),
    )
    .expect("json");
    assert!(version_dir
        .join(manifest["hooks"].as_str().expect("hooks path"))
        .is_file());
}

/// Each shipped skill's `name` and `description`, from its `SKILL.md` front matter (one-line
/// values, quoted or not).
fn shipped_skills() -> Vec<(String, String)> {
    let mut skills: Vec<(String, String)> = std::fs::read_dir(repo_root().join("skills"))
        .expect("skills dir")
        .flatten()
        .map(|entry| {
            let text = std::fs::read_to_string(entry.path().join("SKILL.md")).expect("SKILL.md");
            let field = |key: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(|v| v.trim().trim_matches('"').to_string())
                    .unwrap_or_else(|| panic!("{key} in {}", entry.path().display()))
            };
            (field("name:"), field("description:"))
        })
        .collect();
    skills.sort();
    assert_eq!(skills.len(), SKILL_COUNT);
    skills
}

/// The text of every `input` message of a Responses request with this role.
fn messages_of(body: &Value, role: &str) -> Vec<String> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == role)
        .flat_map(|item| item["content"].as_array().into_iter().flatten())
        .filter_map(|c| c["text"].as_str().map(str::to_string))
        .collect()
}

/// Real Codex with the plugin installed from the repository marketplace, headless
/// (`codex exec`) against the fake Responses server: the model's first request lists every
/// plugin skill (Codex 0.171 offers skills as a `<skills_instructions>` developer message of
/// `- plugin:name: description (file: …)` lines, bodies read on demand from the plugin cache),
/// and its MCP server's tools are offered too.
#[test]
fn codex_with_the_installed_plugin_offers_its_skills_to_the_model() {
    let codex = real_cli::codex().expect("the pinned Codex installs from npm");
    let (world, [home, project]) = scratch_world(["home", "project"]);
    let (codex_home, version_dir) = install_codex_plugin(&codex, &home);
    let server = pitroom_testkit::FakeResponses::start(serde_json::json!({"scenarios": {
        "default": [{"text": "Noted."}]}}))
    .expect("fake server starts");
    use_fake_model(&codex_home, &server);
    // The plugin's MCP server is `pitroom mcp`, found on PATH.
    let bin = world.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(super::common::PITROOM, bin.join("pitroom")).expect("link");
    let out = host(&codex, &home)
        .current_dir(&project)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                real_cli::path_with_node22().expect("node")
            ),
        )
        .env("CODEX_HOME", &codex_home)
        .env("FAKE_API_KEY", "sk-fake")
        .args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--color",
            "never",
        ])
        .arg("Say hello.")
        .output()
        .expect("codex runs");
    assert_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Noted."));

    let requests = server.model_requests();
    let body = &requests.first().expect("a model request")["body"];
    let developer = messages_of(body, "developer");
    let skills = developer
        .iter()
        .find(|m| m.contains("<skills_instructions>"))
        .unwrap_or_else(|| panic!("no skills message: {developer:#?}"));
    // The plugin's skills root is the installed copy in Codex's plugin cache.
    let root = skills
        .lines()
        .find(|l| l.contains(&version_dir.join("skills").display().to_string()))
        .and_then(|l| l.strip_prefix("- `")?.split('`').next())
        .unwrap_or_else(|| panic!("no skill root for the plugin: {skills}"));
    for (name, description) in shipped_skills() {
        let entry = format!("- pitroom:{name}: {description} (file: {root}/{name}/SKILL.md)");
        assert!(
            skills.lines().any(|l| l == entry),
            "{entry}\nnot offered in:\n{skills}"
        );
    }
    assert!(
        developer
            .iter()
            .any(|m| m.contains("<plugins_instructions>")),
        "{developer:#?}"
    );
    // The plugin's MCP server started: its tools are offered as a deferred namespace, described
    // by the server's own instructions.
    assert!(
        developer.iter().any(|m| m.starts_with("<tools>")
            && m.lines()
                .any(|l| l.starts_with("- mcp__pitroom: Pitroom hands bounded work"))),
        "no pitroom MCP tools: {developer:#?}"
    );
}

#[test]
fn gemini_extensions_link_accepts_the_extension_with_its_context_mcp_server_and_skills() {
    let gemini = real_cli::gemini().expect("the pinned Gemini CLI installs from npm");
    let home = tempfile::tempdir().expect("scratch home");
    let out = link_extension(&gemini, home.path());
    assert_exit(&out, 0);
    let said = text(&out);
    assert!(said.contains("\"pitroom\" linked successfully"), "{said}");

    let out = host(&gemini, home.path())
        .args(["extensions", "list"])
        .output()
        .expect("gemini runs");
    assert_exit(&out, 0);
    let list = text(&out);
    assert!(list.contains("pitroom (0.1.0)"), "{list}");
    assert!(list.contains("gemini-context.md"), "{list}");
    assert!(list.contains("MCP servers:\n  pitroom"), "{list}");
    for skill in ["using-pitroom:", "pitroom-crew:", "pitroom-land-change:"] {
        assert!(list.contains(skill), "{skill} missing: {list}");
    }
}

/// Real Gemini CLI with the extension linked (this repository), headless (`gemini -p`) against
/// the fake Gemini API: the first request's session context carries the extension's context
/// file word for word (Gemini CLI 0.61 puts it in the first user turn, under
/// `<extension_context>`, not in the system instruction); the system instruction lists the
/// extension's skills; the extension's MCP server starts and its tools are declared.
#[test]
fn gemini_headless_run_with_the_linked_extension_carries_its_context_to_the_model() {
    let gemini = real_cli::gemini().expect("the pinned Gemini CLI installs from npm");
    let (_world, [home, project, bin]) = scratch_world(["home", "project", "bin"]);
    let root = repo_root();
    let out = link_extension(&gemini, &home);
    assert_exit(&out, 0);
    let server = pitroom_testkit::FakeGemini::start(serde_json::json!({
        "aux": {"text": "Fake aux"},
        "scenarios": {"default": [{"text": "Noted."}]}}))
    .expect("fake server starts");
    // API-key auth for the fake server, and nothing that would call home.
    let settings = serde_json::json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
    });
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).expect("settings");
    // The extension's MCP server is `pitroom mcp`, found on PATH.
    std::os::unix::fs::symlink(super::common::PITROOM, bin.join("pitroom")).expect("link");
    let path = format!(
        "{}:{}",
        bin.display(),
        real_cli::path_with_node22().expect("Node 22")
    );
    let out = host(&gemini, &home)
        .current_dir(&project)
        .env("PATH", path)
        .env("GOOGLE_GEMINI_BASE_URL", server.base_url())
        .env("GEMINI_API_KEY", "fake-gemini-key")
        .env("GEMINI_MODEL", "gemini-2.5-pro")
        .args([
            "-p",
            "Say hello.",
            "--output-format",
            "json",
            "--skip-trust",
        ])
        // Headless, Gemini CLI declares only the tools that need no approval; in yolo mode it
        // declares all, the MCP server's among them (the scripted model calls none).
        .args(["--approval-mode", "yolo"])
        .output()
        .expect("gemini runs");
    assert_exit(&out, 0);
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(reply["response"], "Noted.", "{}", text(&out));

    let requests = server.model_requests();
    let body = &requests.first().expect("a model request")["body"];
    let context_file = root.join("gemini-context.md");
    let context = std::fs::read_to_string(&context_file).expect("context file");
    let block = format!(
        "<extension_context>\n--- Context from: {0} ---\n{1}\n--- End of Context from: {0} ---",
        context_file.display(),
        context.trim_end()
    );
    let first_turn = body["contents"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        first_turn.contains(&block),
        "no extension context in the first turn:\n{first_turn}"
    );
    assert!(first_turn.contains("Pitroom is installed: the `pitroom` command hands bounded work"));

    let system = body["systemInstruction"].to_string();
    for (name, description) in shipped_skills() {
        let entry = format!(
            "<name>{name}</name>\n    <description>{description}</description>\n    \
             <location>{}</location>",
            root.join("skills").join(&name).join("SKILL.md").display()
        );
        let entry = serde_json::to_string(&entry).expect("json string");
        assert!(
            system.contains(entry.trim_matches('"')),
            "skill {name} not in the system instruction: {system}"
        );
    }
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
        .filter_map(|d| d["name"].as_str())
        .collect();
    for tool in [
        "mcp_pitroom_pitroom_run",
        "mcp_pitroom_pitroom_show",
        "activate_skill",
    ] {
        assert!(tools.contains(&tool), "{tool} not declared: {tools:?}");
    }
}

/// Real Claude Code, headless, with the plugin loaded and the fake Anthropic server as its
/// model: the session-start text reaches the first request; the scripted model runs
/// `pitroom "…"` through Bash (with the fake worker); the hook card reaches the next request.
#[test]
fn claude_code_with_the_plugin_gets_the_session_text_and_the_hook_card() {
    let claude = real_cli::claude().expect("the pinned Claude Code installs from npm");
    let script = serde_json::json!({"scenarios": {"default": [
        {"text": "Delegating.", "tool_calls": [{"name": "Bash", "input": {
            "command": "pitroom \"Where can divide fail?\"", "description": "delegate"}}],
         "usage": {"input_tokens": 100, "output_tokens": 10}},
        {"text": "All done.", "usage": {"input_tokens": 100, "output_tokens": 10}}
    ]}});
    let server = pitroom_testkit::FakeAnthropic::start(script).expect("fake server starts");
    let world = tempfile::tempdir().expect("scratch world");
    let home = world.path().join("home");
    let bin = world.path().join("bin");
    let state = world.path().join("state");
    let repo = world.path().join("repo");
    for d in [&home.join(".claude"), &bin, &repo] {
        std::fs::create_dir_all(d).expect("dir");
    }
    std::os::unix::fs::symlink(super::common::PITROOM, bin.join("pitroom")).expect("link");
    std::fs::write(
        repo.join("calc.py"),
        "def divide(a, b):\n    return a / b\n",
    )
    .expect("file");
    let settings = serde_json::json!({"env": {"ANTHROPIC_BASE_URL": server.base_url()}});
    std::fs::write(home.join(".claude/settings.json"), settings.to_string()).expect("settings");
    let path = format!(
        "{}:{}",
        bin.display(),
        real_cli::path_with_node22().expect("Node 22")
    );
    let worker_script = serde_json::json!([
        {"text": "SUMMARY: divide() has no zero check: calc.py:2"},
        {"step": {"input": 1000, "output": 10}}
    ]);
    let out = host(&claude, &home)
        .current_dir(&repo)
        .env("PATH", path)
        .env("ANTHROPIC_API_KEY", "sk-ant-fake")
        .env("PITROOM_HOME", &state)
        .env("PITROOM_OPENCODE_BIN", fake_worker())
        .env("PITROOM_FAKE_SCRIPT", worker_script.to_string())
        .args([
            "-p",
            "Where can divide fail? Use pitroom.",
            "--output-format",
            "json",
        ])
        .args(["--allowedTools", "Bash", "--plugin-dir"])
        .arg(repo_root().join("plugins/pitroom"))
        .output()
        .expect("claude runs");
    assert_exit(&out, 0);
    let requests = server.model_requests();
    assert!(requests.len() >= 2, "{requests:#?}");
    let first = requests[0]["body"].to_string();
    assert!(
        first.contains("Pitroom is installed"),
        "no session-start text"
    );
    assert!(first.contains("Three modes"), "no using-pitroom text");
    let second = requests[1]["body"].to_string();
    assert!(
        second.contains("Pitroom recorded these runs"),
        "no hook card: {second}"
    );
    assert!(second.contains("divide() has no zero check"), "{second}");
}

/// What the gate's reviewer finds in the scripted edit. `scenario:gated` tags the finding, so
/// the fake model answers the block reason (which carries it) from its `gated` scenario.
const GATE_FINDING: &str = "important: calc.py:2 divide() has no zero check (scenario:gated)";

/// Runs `git ARGS` in `dir` as a scratch identity.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert_exit(&out, 0);
}

/// Real Claude Code with the review gate that `pitroom install --review-gate` writes, and the
/// fake Anthropic server as its model: the model edits calc.py through Bash and ends its turn;
/// the Stop hook has the fake worker review the change, which finds an issue; the finding
/// reaches the model as the hook's reason, once; the model answers and ends its turn again,
/// which the gate lets pass, and Claude exits 0. A second turn of the same session with no new
/// change passes too: one review in all.
#[test]
fn claude_code_with_the_review_gate_gets_the_findings_once_and_then_stops() {
    gate_round_trip(GateFrom::Install);
}

/// The same with the plugin's hook (`--plugin-dir`), which runs only because the config says
/// `review_gate = true`.
#[test]
fn claude_code_with_the_plugin_and_review_gate_on_gets_the_findings_once() {
    gate_round_trip(GateFrom::Plugin);
}

/// Where Claude Code gets the review gate from.
#[derive(Clone, Copy, PartialEq)]
enum GateFrom {
    /// `pitroom install --review-gate` into its settings.
    Install,
    /// The plugin (`--plugin-dir`), with `review_gate = true` in Pitroom's config.
    Plugin,
}

/// What the review gate's host tests share: a scratch home, a `bin` holding `pitroom`, Pitroom's
/// state dir and config file, and a repository with calc.py committed.
struct GateRig {
    _world: tempfile::TempDir,
    home: PathBuf,
    bin: PathBuf,
    state: PathBuf,
    repo: PathBuf,
    config: PathBuf,
}

impl GateRig {
    fn new() -> GateRig {
        let (world, [home, bin, state, repo]) = scratch_world(["home", "bin", "state", "repo"]);
        std::os::unix::fs::symlink(super::common::PITROOM, bin.join("pitroom")).expect("link");
        std::fs::write(
            repo.join("calc.py"),
            "def divide(a, b):\n    return a / b\n",
        )
        .expect("file");
        git(&repo, &["init", "-q"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "first"]);
        let config = home.join("pitroom.toml");
        GateRig {
            _world: world,
            home,
            bin,
            state,
            repo,
            config,
        }
    }

    /// The host `program` in the repository, with `pitroom` first on `PATH`, Pitroom's state
    /// and config, and the fake worker as the gate's reviewer, which finds [`GATE_FINDING`].
    fn host(&self, program: &Path) -> Command {
        let reviewer = serde_json::json!([
            {"step": {"input": 900, "output": 60, "cost": 0.001}},
            {"text": format!("SUMMARY: divide() still fails on zero\nDETAILS: {GATE_FINDING}\nSPEC: PASS · QUALITY: NEEDS_FIXES · ISSUES: critical=0 important=1 minor=0")}
        ]);
        let path = format!(
            "{}:{}",
            self.bin.display(),
            real_cli::path_with_node22().expect("Node 22")
        );
        let mut cmd = host(program, &self.home);
        cmd.current_dir(&self.repo)
            .env("PATH", path)
            .env("PITROOM_HOME", &self.state)
            .env("PITROOM_CONFIG", &self.config)
            .env("PITROOM_OPENCODE_BIN", fake_worker())
            .env("PITROOM_FAKE_SCRIPT", reviewer.to_string());
        cmd
    }

    /// The host exited 0, after the scripted model's edit of calc.py ran.
    fn assert_edited(&self, out: &Output) {
        assert_exit(out, 0);
        assert!(
            std::fs::read_to_string(self.repo.join("calc.py"))
                .expect("calc.py")
                .contains("# edited"),
            "the scripted edit ran: {}",
            text(out)
        );
    }

    /// The reviews of uncommitted work on record (the gate's).
    fn reviews(&self) -> usize {
        let runs = pitroom_json(&self.state, &self.repo, &["ls", "--json"]);
        runs.as_array()
            .expect("runs")
            .iter()
            .filter(|r| r["spec"]["review_of"] == "uncommitted")
            .count()
    }

    /// What the gate keeps of each session it saw.
    fn sessions(&self) -> Vec<Value> {
        std::fs::read_dir(self.state.join("review-gate"))
            .expect("the gate's state dir")
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .map(|e| {
                serde_json::from_slice(&std::fs::read(e.path()).expect("state")).expect("json")
            })
            .collect()
    }
}

fn gate_round_trip(from: GateFrom) {
    let claude = real_cli::claude().expect("the pinned Claude Code installs from npm");
    let edit = "printf 'def divide(a, b):\\n    return a / b  # edited\\n' > calc.py";
    let script = serde_json::json!({"scenarios": {
        "default": [
            {"text": "Editing.", "tool_calls": [{"name": "Bash", "input": {
                "command": edit, "description": "edit calc.py"}}],
             "usage": {"input_tokens": 100, "output_tokens": 10}},
            {"text": "Edited calc.py.", "usage": {"input_tokens": 100, "output_tokens": 10}}
        ],
        "gated": [
            {"text": "Noted: the zero check is out of scope for this edit.",
             "usage": {"input_tokens": 100, "output_tokens": 10}}
        ]
    }});
    let server = pitroom_testkit::FakeAnthropic::start(script).expect("fake server starts");
    let rig = GateRig::new();
    let home = &rig.home;
    std::fs::create_dir_all(home.join(".claude")).expect("claude dir");
    let settings = serde_json::json!({"env": {"ANTHROPIC_BASE_URL": server.base_url()}});
    std::fs::write(home.join(".claude/settings.json"), settings.to_string()).expect("settings");
    // The gate as users get it: `pitroom install --review-gate` (--force: the settings above
    // are "the user's"; the install keeps them), or the plugin with the config key.
    let mut plugin_args: Vec<String> = Vec::new();
    if from == GateFrom::Install {
        let install = Command::new(super::common::PITROOM)
            .args(["install", "--host", "claude", "--review-gate", "--force"])
            .env_clear()
            .env("HOME", home)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("pitroom install runs");
        assert_exit(&install, 0);
    } else {
        std::fs::write(&rig.config, "review_gate = true\n").expect("config");
        plugin_args.push("--plugin-dir".into());
        plugin_args.push(repo_root().join("plugins/pitroom").display().to_string());
    }

    let session = "5b0c4d3e-2f1a-4b6c-9d8e-7f6a5b4c3d2e";
    let claude_turn = |session_args: &[&str], prompt: &str| {
        rig.host(&claude)
            .env("ANTHROPIC_API_KEY", "sk-ant-fake")
            .args(&plugin_args)
            .args(session_args)
            .args(["-p", prompt, "--output-format", "json"])
            .args(["--allowedTools", "Bash"])
            .output()
            .expect("claude runs")
    };
    let out = claude_turn(&["--session-id", session], "Mark divide() as edited.");
    rig.assert_edited(&out);

    let requests = server.model_requests();
    let bodies: Vec<String> = requests.iter().map(|r| r["body"].to_string()).collect();
    assert_eq!(
        bodies.len(),
        3,
        "edit, end of turn, the answer to the findings"
    );
    assert!(
        stop_feedback(&requests[1]["body"]).is_empty() && !bodies[1].contains(GATE_FINDING),
        "not before the stop"
    );
    // The gate fired once: its reason, with the finding, reached the model as the one piece of
    // Stop hook feedback (Claude Code 2.x hands it over as a user message).
    let feedback = stop_feedback(&requests[2]["body"]);
    assert_eq!(feedback.len(), 1, "{feedback:#?}");
    assert!(
        feedback[0].contains("Pitroom's review gate"),
        "{}",
        feedback[0]
    );
    assert!(feedback[0].contains(GATE_FINDING), "{}", feedback[0]);
    assert_eq!(requests[2]["scenario"], "gated");

    // One review recorded, of the uncommitted work, by the session's gate.
    assert_eq!(rig.reviews(), 1);
    let gate: Value = serde_json::from_slice(
        &std::fs::read(rig.state.join(format!("review-gate/{session}.json"))).expect("gate state"),
    )
    .expect("json");
    assert_eq!(gate["rounds"], 1, "{gate:#}");

    // The next turn of the session ends with the same change: no second review, no block.
    let out = claude_turn(&["--resume", session], "Anything else?");
    assert_exit(&out, 0);
    let requests = server.model_requests();
    assert_eq!(requests.len(), 4, "one reply, no gate round");
    assert_eq!(
        stop_feedback(&requests[3]["body"]).len(),
        1,
        "still the first one only"
    );
    assert_eq!(rig.reviews(), 1);
    assert_eq!(
        rig.sessions().len(),
        1,
        "both turns were one session to the gate"
    );
}

/// Real Codex (`codex exec`) with the plugin installed from the repository marketplace and
/// `review_gate = true` in Pitroom's config, the fake Responses server as its model: the model
/// edits calc.py through the shell and ends its turn; the plugin's Stop hook has the fake worker
/// review the change, which finds an issue; Codex hands the hook's reason to the model as the
/// next prompt, once; the model answers and ends its turn again, which the gate lets pass, and
/// Codex exits 0. Plugin hooks run only once trusted in `/hooks`: headless, this test trusts
/// them for the one invocation (`--dangerously-bypass-hook-trust`).
#[test]
fn codex_with_the_plugin_and_review_gate_on_gets_the_findings_once() {
    let codex = real_cli::codex().expect("the pinned Codex installs from npm");
    let rig = GateRig::new();
    let (codex_home, _) = install_codex_plugin(&codex, &rig.home);
    let edit = "printf 'def divide(a, b):\\n    return a / b  # edited\\n' > calc.py";
    let server = pitroom_testkit::FakeResponses::start(serde_json::json!({"scenarios": {
        "default": [{"shell": edit}, {"text": "Edited calc.py."}],
        "gated": [{"text": "Noted: the zero check is out of scope for this edit."}]
    }}))
    .expect("fake server starts");
    use_fake_model(&codex_home, &server);
    std::fs::write(&rig.config, "review_gate = true\n").expect("config");
    let out = rig
        .host(&codex)
        .env("CODEX_HOME", &codex_home)
        .env("FAKE_API_KEY", "sk-fake")
        .args(["exec", "--json", "--color", "never"])
        .args([
            "--dangerously-bypass-hook-trust",
            "--dangerously-bypass-approvals-and-sandbox",
        ])
        .arg("Mark divide() as edited.")
        .output()
        .expect("codex runs");
    rig.assert_edited(&out);

    let requests = server.model_requests();
    let scenarios: Vec<&Value> = requests.iter().map(|r| &r["scenario"]).collect();
    assert_eq!(
        scenarios,
        ["default", "default", "gated"],
        "edit, end of turn, the answer to the findings (no third: the hook never ran)"
    );
    let carrying = |r: &Value| {
        r["body"]["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item.to_string().contains(GATE_FINDING))
            .count()
    };
    assert_eq!(carrying(&requests[1]), 0, "not before the stop");
    // The gate fired once: its reason, with the finding, is one item of the next prompt.
    assert_eq!(
        carrying(&requests[2]),
        1,
        "{:#}",
        requests[2]["body"]["input"]
    );
    assert!(
        requests[2]["body"]
            .to_string()
            .contains("Pitroom's review gate"),
        "{:#}",
        requests[2]["body"]["input"]
    );

    // One review recorded, of the uncommitted work, by the session's gate.
    assert_eq!(rig.reviews(), 1);
    let sessions = rig.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:#?}");
    assert_eq!(sessions[0]["rounds"], 1, "{:#}", sessions[0]);
}

/// The user messages of an Anthropic request that carry Stop hook feedback.
fn stop_feedback(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| match &m["content"] {
            Value::String(s) => vec![s.clone()],
            blocks => blocks
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str().map(str::to_string))
                .collect(),
        })
        .filter(|text| text.contains("Stop hook feedback"))
        .collect()
}

/// `pitroom ARGS` with the state dir `state`, in `dir`: its JSON output.
fn pitroom_json(state: &Path, dir: &Path, args: &[&str]) -> Value {
    let out = Command::new(super::common::PITROOM)
        .args(args)
        .current_dir(dir)
        .env("PITROOM_HOME", state)
        .output()
        .expect("pitroom runs");
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).expect("JSON")
}
