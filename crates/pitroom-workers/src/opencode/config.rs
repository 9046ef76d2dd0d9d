//! The configuration handed to OpenCode: the user's own config with Pitroom's permission
//! profile merged over it.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::adapter::InvocationRequest;
use crate::events::Mode;
use crate::json::merge;

/// The agent Pitroom defines per mode, so a user's own `build` agent settings never apply.
pub fn agent_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Read => "pitroom-read",
        Mode::Write | Mode::Isolate => "pitroom-write",
    }
}

/// `{"*": base, <secret pattern>: "deny", <template pattern>: base}` for a path-taking tool.
fn path_rules(base: &str) -> Value {
    let mut rules = Map::new();
    rules.insert("*".into(), base.into());
    for pattern in crate::secret_files::opencode_globs() {
        rules.insert(pattern, "deny".into());
    }
    // Templates of secret files hold no secrets: allowed again after the denials.
    for pattern in crate::secret_files::opencode_template_globs() {
        rules.insert(pattern, base.into());
    }
    Value::Object(rules)
}

/// The permission profile for a mode: allow or deny only, never `ask` (an `ask` silently ends
/// a headless run with exit 0). Secret-looking files can be neither read nor edited.
pub fn permission_profile(mode: Mode, web: bool) -> Value {
    let mut bash = Map::new();
    bash.insert("*".into(), "allow".into());
    // OpenCode matches bash patterns per sub-command; the later, more specific rule wins
    // over `"*"`.
    for pattern in crate::denied::patterns() {
        bash.insert(pattern, "deny".into());
    }
    let edit = if mode.may_edit() {
        path_rules("allow")
    } else {
        // A blanket deny removes the edit and write tools from what the model is offered.
        "deny".into()
    };
    let web = if web { "allow" } else { "deny" };
    json!({
        "*": "allow",
        "read": path_rules("allow"),
        "grep": "allow",
        "glob": "allow",
        "list": "allow",
        "edit": edit,
        "bash": Value::Object(bash),
        "webfetch": web,
        "websearch": web,
        "codesearch": web,
        // No subagents: a worker does its task itself, inside the rules Pitroom can see.
        "task": "deny",
        // Paths outside the work dir: deny rather than ask (an ask ends the run silently).
        "external_directory": "deny",
        "question": "deny",
        "doom_loop": "allow",
    })
}

/// The full `<PREFIX>_CONFIG_CONTENT` of a CLI of the OpenCode family: the user's global config
/// and any config they pass via the environment (found through `places`), deep-merged, then
/// Pitroom's settings on top, with `permission` as the profile and the rules of the mode's agent.
pub(crate) fn worker_config(
    req: &InvocationRequest,
    places: &ConfigPlaces,
    permission: Value,
) -> Value {
    let mut merged = Value::Object(Map::new());
    for source in user_config_sources(req, places) {
        merge(&mut merged, source);
    }
    let agent = json!({
        "description": "Pitroom worker",
        "mode": "primary",
        "permission": permission.clone(),
    });
    let overlay = json!({
        "autoupdate": false,
        "share": "disabled",
        "permission": permission,
        "agent": { agent_name(req.mode): agent },
    });
    if let Value::Object(map) = &mut merged {
        // The profile replaces the user's rules outright: merging could keep an `ask`.
        map.remove("permission");
        // So does Pitroom's agent: a user's agent of that name would merge its rules into the
        // profile (an `ask`, an `allow` after a deny).
        if let Some(Value::Object(agents)) = map.get_mut("agent") {
            agents.remove(agent_name(req.mode));
        }
    }
    merge(&mut merged, overlay);
    merged
}

/// Where a CLI of the OpenCode family keeps its user configuration: the folder under
/// `$XDG_CONFIG_HOME` (else `~/.config`), the file names there (lowest precedence first) and the
/// variables naming one more file and the content itself (`<PREFIX>_CONFIG`,
/// `<PREFIX>_CONFIG_CONTENT`).
pub(crate) struct ConfigPlaces {
    pub dir: &'static str,
    pub files: &'static [&'static str],
    pub env_prefix: &'static str,
}

pub(crate) const OPENCODE_CONFIG: ConfigPlaces = ConfigPlaces {
    dir: "opencode",
    files: &["config.json", "opencode.json", "opencode.jsonc"],
    env_prefix: "OPENCODE",
};

/// The user's configuration, lowest precedence first. A file that cannot be read or parsed is
/// skipped: the CLI itself would refuse it, and Pitroom must not pass it on.
pub(crate) fn user_config_sources(req: &InvocationRequest, places: &ConfigPlaces) -> Vec<Value> {
    let mut sources = Vec::new();
    if let Some(home) = req.dir_from_env("XDG_CONFIG_HOME", ".config") {
        for name in places.files {
            sources.extend(read_jsonc_file(&home.join(places.dir).join(name)));
        }
    }
    let var = |suffix: &str| req.env_var(&format!("{}_{suffix}", places.env_prefix));
    if let Some(path) = var("CONFIG").filter(|v| !v.is_empty()) {
        sources.extend(read_jsonc_file(&PathBuf::from(path)));
    }
    if let Some(content) = var("CONFIG_CONTENT") {
        sources.extend(parse_jsonc(&content));
    }
    sources
}

pub(crate) fn read_jsonc_file(path: &std::path::Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    parse_jsonc(&text)
}

/// Parses JSON with comments (OpenCode's `.jsonc`), tolerating trailing commas.
pub(crate) fn parse_jsonc(text: &str) -> Option<Value> {
    let mut stripped = String::new();
    let mut reader = json_comments::StripComments::new(text.as_bytes());
    std::io::Read::read_to_string(&mut reader, &mut stripped).ok()?;
    serde_json::from_str(&stripped)
        .or_else(|_| serde_json::from_str(&drop_trailing_commas(&stripped)))
        .ok()
        .filter(Value::is_object)
}

/// Removes commas that directly precede `}` or `]` outside strings.
fn drop_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        if c == ',' {
            let next = chars[i + 1..].iter().find(|n| !n.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_file_of_the_one_policy_is_denied_to_read_and_edit() {
        use crate::secret_files::check::{assert_refuses_exactly_the_secrets, wildcard};
        for mode in [Mode::Read, Mode::Write] {
            let profile = permission_profile(mode, false);
            for tool in ["read", "edit"] {
                let Some(rules) = profile[tool].as_object() else {
                    assert_eq!(profile[tool], "deny", "{mode:?} {tool}");
                    continue;
                };
                // OpenCode's `*` crosses `/`, and the last matching rule wins.
                let refused = |path: &str| {
                    rules
                        .iter()
                        .rev()
                        .find(|(pattern, _)| wildcard(pattern, path, true))
                        .is_some_and(|(_, action)| action == "deny")
                };
                assert_refuses_exactly_the_secrets(&format!("opencode {tool} ({mode:?})"), refused);
            }
        }
    }

    fn request(env: Vec<(&str, String)>, mode: Mode) -> InvocationRequest {
        InvocationRequest::for_test(mode, env)
    }

    #[test]
    fn user_providers_survive_and_permissions_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        crate::testing::write_file(
            &dir.path().join("opencode/opencode.jsonc"),
            r#"{ // my setup
              "provider": {"mine": {"options": {"baseURL": "http://x"}}},
              "permission": {"bash": "ask", "edit": "ask"},
              "model": "mine/m1",
            }"#,
        );
        let req = request(
            vec![("XDG_CONFIG_HOME", dir.path().display().to_string())],
            Mode::Read,
        );
        let cfg = crate::opencode::worker_config(&req);
        assert_eq!(cfg["provider"]["mine"]["options"]["baseURL"], "http://x");
        assert_eq!(cfg["model"], "mine/m1");
        assert_eq!(cfg["permission"]["edit"], "deny");
        assert_eq!(cfg["permission"]["bash"]["*"], "allow");
        assert_eq!(cfg["autoupdate"], false);
    }

    /// Found by fuzzing: a user's agent named like Pitroom's merged its rules into the profile.
    #[test]
    fn a_users_agent_named_like_pitrooms_adds_no_rule_to_the_profile() {
        for mode in [Mode::Read, Mode::Write] {
            let agent = agent_name(mode);
            let user = json!({"agent": {
                agent: {"permission": {"skill": "ask", "bash": {"git push origin*": "allow"}}},
                "mine": {"mode": "subagent"},
            }});
            let req = request(
                vec![
                    ("HOME", "/nonexistent".into()),
                    ("OPENCODE_CONFIG_CONTENT", user.to_string()),
                ],
                mode,
            );
            let cfg = crate::opencode::worker_config(&req);
            assert_eq!(
                cfg["agent"][agent]["permission"],
                permission_profile(mode, false)
            );
            assert_eq!(
                cfg["agent"]["mine"]["mode"], "subagent",
                "other agents stay"
            );
        }
    }

    #[test]
    fn config_content_from_env_overrides_files() {
        let req = request(
            vec![
                ("HOME", "/nonexistent".into()),
                (
                    "OPENCODE_CONFIG_CONTENT",
                    r#"{"provider":{"a":{"name":"A"}},"share":"auto"}"#.into(),
                ),
            ],
            Mode::Write,
        );
        let cfg = crate::opencode::worker_config(&req);
        assert_eq!(cfg["provider"]["a"]["name"], "A");
        assert_eq!(cfg["share"], "disabled", "pitroom's overlay wins");
        assert_eq!(
            cfg["agent"]["pitroom-write"]["permission"]["edit"]["*"],
            "allow"
        );
    }

    #[test]
    fn no_rule_in_any_profile_is_ask() {
        for mode in [Mode::Read, Mode::Write] {
            for web in [false, true] {
                let text = permission_profile(mode, web).to_string();
                assert!(!text.contains("\"ask\""), "{text}");
            }
        }
    }

    #[test]
    fn git_history_commands_are_denied_after_the_catch_all_allow() {
        let p = permission_profile(Mode::Write, false);
        let bash = p["bash"].as_object().unwrap();
        let keys: Vec<&String> = bash.keys().collect();
        assert_eq!(
            keys[0], "*",
            "the catch-all must come first so later rules win"
        );
        assert_eq!(bash["git commit*"], "deny");
        assert_eq!(bash["git push*"], "deny");
    }

    #[test]
    fn secret_files_can_be_neither_read_nor_edited_but_templates_can() {
        let p = permission_profile(Mode::Write, false);
        for tool in ["read", "edit"] {
            let rules = p[tool].as_object().unwrap();
            let keys: Vec<&String> = rules.keys().collect();
            assert_eq!(keys[0], "*", "the catch-all first, so the denials win");
            assert_eq!(rules["*/.env"], "deny");
            assert_eq!(rules["*.pem"], "deny");
            let last_deny = keys
                .iter()
                .rposition(|k| rules[k.as_str()] == "deny")
                .unwrap();
            let template = keys.iter().position(|k| k.as_str() == "*.example").unwrap();
            assert!(
                template > last_deny,
                "templates are allowed after the denials"
            );
        }
        assert_eq!(permission_profile(Mode::Read, false)["edit"], "deny");
        assert_eq!(
            permission_profile(Mode::Read, false)["read"]["*/.env"],
            "deny"
        );
    }

    #[test]
    fn web_tools_follow_the_web_flag() {
        assert_eq!(permission_profile(Mode::Read, false)["webfetch"], "deny");
        assert_eq!(permission_profile(Mode::Read, true)["webfetch"], "allow");
    }

    #[test]
    fn trailing_commas_outside_strings_are_dropped() {
        assert_eq!(
            drop_trailing_commas(r#"{"a": [1, 2,], "b": "x,}",}"#),
            r#"{"a": [1, 2], "b": "x,}"}"#
        );
    }

    #[test]
    fn unparsable_user_config_is_skipped() {
        let req = request(
            vec![
                ("HOME", "/nonexistent".into()),
                ("OPENCODE_CONFIG_CONTENT", "{not json".into()),
            ],
            Mode::Read,
        );
        let cfg = crate::opencode::worker_config(&req);
        assert_eq!(cfg["permission"]["edit"], "deny");
    }
}
