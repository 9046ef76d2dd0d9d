//! The one secret-file policy (docs/safety.md): the files no worker reads. Pitroom keeps them
//! out of read copies, and every worker CLI refuses them through rules rendered here from the
//! same list, in that CLI's own syntax (OpenCode/Kilo permission globs, Claude/Qwen/Cursor
//! `Read(…)` rules, Gemini policy argument patterns). Add a file type here, and every CLI
//! refuses it; `tests` prove they all refuse the same samples.

/// A rule on a file's name (its last path component).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// The whole name: `.env`.
    Exact(&'static str),
    /// The name starts with it: `id_rsa` (`id_rsa.pub`), `.env.` (`.env.production`).
    Prefix(&'static str),
    /// The name ends with it: `.pem`.
    Suffix(&'static str),
    /// The name holds `part` and ends with `suffix`: `ci-service-account.json`.
    Holding {
        part: &'static str,
        suffix: &'static str,
    },
}

use NameRule::{Exact, Holding, Prefix, Suffix};

/// Every secret-looking file name.
pub const RULES: &[NameRule] = &[
    Exact(".env"),
    Prefix(".env."),
    Exact(".netrc"),
    Exact("_netrc"),
    Exact(".npmrc"),
    Exact(".pypirc"),
    Exact(".htpasswd"),
    Exact(".pgpass"),
    Exact(".git-credentials"),
    Exact("credentials"),
    Exact("credentials.json"),
    Exact("application_default_credentials.json"),
    Exact("secrets.json"),
    Exact("secrets.yaml"),
    Exact("secrets.yml"),
    // Path rules of well-kept secret scanners (gitleaks, detect-secrets, trufflehog): direnv,
    // env files named for a stage, Cloudflare's local vars, Terraform variables and state,
    // Streamlit's secrets, cloud and registry client configs, password databases.
    Exact(".envrc"),
    Suffix(".env"),
    Exact(".dev.vars"),
    Suffix(".tfvars"),
    Suffix(".tfvars.json"),
    Suffix(".tfstate"),
    Suffix(".tfstate.backup"),
    Exact(".terraformrc"),
    Exact("terraform.rc"),
    Exact("secrets.toml"),
    Exact(".secrets"),
    Exact(".vault-token"),
    Exact(".dockercfg"),
    Exact(".s3cfg"),
    Exact(".boto"),
    Exact("kubeconfig"),
    Suffix(".kdbx"),
    Suffix(".ovpn"),
    Prefix("id_rsa"),
    Prefix("id_dsa"),
    Prefix("id_ecdsa"),
    Prefix("id_ed25519"),
    Suffix(".pem"),
    Suffix(".key"),
    Suffix(".p12"),
    Suffix(".pfx"),
    Suffix(".keystore"),
    Suffix(".jks"),
    Suffix(".asc"),
    Suffix(".gpg"),
    Holding {
        part: "service-account",
        suffix: ".json",
    },
    Holding {
        part: "service_account",
        suffix: ".json",
    },
];

/// Names a rule matches that are templates and hold no secret (`.env.example`).
pub const TEMPLATE_SUFFIXES: &[&str] = &[".example", ".sample", ".template", ".dist"];

impl NameRule {
    fn matches(self, name: &str) -> bool {
        match self {
            Exact(n) => name == n,
            Prefix(p) => name.starts_with(p),
            Suffix(s) => name.ends_with(s),
            Holding { part, suffix } => name.contains(part) && name.ends_with(suffix),
        }
    }

    /// The rule as a glob on the name (`*` within the name).
    fn name_glob(self) -> String {
        match self {
            Exact(n) => n.to_string(),
            Prefix(p) => format!("{p}*"),
            Suffix(s) => format!("*{s}"),
            Holding { part, suffix } => format!("*{part}*{suffix}"),
        }
    }

    /// The rule as a regular expression on a path inside a JSON string: the name follows a
    /// `/` or the string's opening quote and ends at its closing quote.
    fn json_path_regex(self) -> String {
        let esc = regex::escape;
        let start = r#"["/]"#;
        let within = r#"[^/"]*"#;
        match self {
            Exact(n) => format!(r#"{start}{}""#, esc(n)),
            Prefix(p) => format!(r#"{start}{}{within}""#, esc(p)),
            Suffix(s) => format!(r#"{}""#, esc(s)),
            Holding { part, suffix } => {
                format!(r#"{start}{within}{}{within}{}""#, esc(part), esc(suffix))
            }
        }
    }
}

/// Whether `path` (relative, `/`-separated) names a secret-looking file. Case-insensitive, as
/// file systems may be; templates (`*.example`, `*.sample`, `*.template`, `*.dist`) are not.
pub fn is_secret_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    !TEMPLATE_SUFFIXES.iter().any(|s| name.ends_with(s)) && RULES.iter().any(|r| r.matches(&name))
}

/// `**/<name glob>` for each rule: gitignore-style patterns that match at any depth (Claude
/// Code's, Qwen Code's and Cursor's `Read(…)` rules).
pub fn anywhere_globs() -> Vec<String> {
    RULES
        .iter()
        .map(|r| format!("**/{}", r.name_glob()))
        .collect()
}

/// OpenCode's (and Kilo's) permission patterns: `*` matches any characters, `/` included, so
/// each rule is its name glob at the top and `*/` + it below.
pub fn opencode_globs() -> Vec<String> {
    RULES
        .iter()
        .flat_map(|r| {
            let glob = r.name_glob();
            let nested = if glob.starts_with('*') {
                None
            } else {
                Some(format!("*/{glob}"))
            };
            std::iter::once(glob).chain(nested)
        })
        .collect()
}

/// The templates as OpenCode patterns, allowed again after the denials (the last match wins).
pub fn opencode_template_globs() -> Vec<String> {
    TEMPLATE_SUFFIXES.iter().map(|s| format!("*{s}")).collect()
}

/// Regular expressions on a tool call's JSON arguments that find a secret file's path in them
/// (Gemini CLI's policy `argsPattern`).
pub fn json_path_regexes() -> Vec<String> {
    RULES.iter().map(|r| r.json_path_regex()).collect()
}

/// Secret files, one or more per rule family, at the top and nested: what every rendering of
/// the policy (each CLI's rules here, the sandbox profiles in `pitroom-proc`) is tested to
/// refuse.
pub const SAMPLE_SECRETS: &[&str] = &[
    ".env",
    "config/.env.production",
    ".env.staging",
    "certs/server.pem",
    "tls.key",
    "deploy/store.p12",
    "home/.ssh/id_rsa",
    "id_ed25519.pub",
    ".netrc",
    ".npmrc",
    "pkg/.pypirc",
    "home/.git-credentials",
    "gcp/credentials.json",
    "a/b/secrets.yml",
    "deploy/ci-service-account.json",
    // The secret scanners' path rules: direnv, a stage's env file, Cloudflare's local
    // vars, Terraform variables and state, Streamlit's secrets.
    ".envrc",
    "deploy/prod.env",
    "worker/.dev.vars",
    "infra/terraform.tfvars",
    "infra/terraform.tfstate",
    ".streamlit/secrets.toml",
];

/// What each CLI's test checks its rendered rules against: every sample secret refused, no
/// ordinary file refused.
#[cfg(test)]
pub(crate) mod check {
    pub use super::SAMPLE_SECRETS as SECRETS;
    /// Files a worker must be able to read.
    pub const ORDINARY: &[&str] = &[
        "src/main.rs",
        "README.md",
        "docs/envrc.md",
        "keyboard.ts",
        "docs/credentials.md",
        "src/key.rs",
    ];

    pub fn assert_refuses_exactly_the_secrets(cli: &str, refused: impl Fn(&str) -> bool) {
        for path in SECRETS {
            assert!(refused(path), "{cli} would let a worker read {path}");
        }
        for path in ORDINARY {
            assert!(!refused(path), "{cli} refuses the ordinary file {path}");
        }
    }

    /// In read and in write mode: asserts that the `Tool(pattern)` rules `deny(mode)` refuse each
    /// of `tools(mode)` exactly the secret files (a failure names `cli`, the tool and the mode).
    pub fn assert_tool_rules_refuse_exactly_the_secrets(
        cli: &str,
        tools: impl Fn(crate::Mode) -> &'static [&'static str],
        deny: impl Fn(crate::Mode) -> Vec<String>,
    ) {
        for mode in [crate::Mode::Read, crate::Mode::Write] {
            let deny = deny(mode);
            for tool in tools(mode) {
                assert_refuses_exactly_the_secrets(&format!("{cli} {tool} ({mode:?})"), |path| {
                    tool_rule_matches(&deny, tool, path)
                });
            }
        }
    }

    /// `*` matches any run of characters (across `/` only when `crosses_slash`).
    pub fn wildcard(pattern: &str, text: &str, crosses_slash: bool) -> bool {
        fn go(p: &[u8], t: &[u8], crosses: bool) -> bool {
            match p.split_first() {
                None => t.is_empty(),
                Some((b'*', rest)) => (0..=t.len())
                    .take_while(|&i| crosses || !t[..i].contains(&b'/'))
                    .any(|i| go(rest, &t[i..], crosses)),
                Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..], crosses),
            }
        }
        go(pattern.as_bytes(), text.as_bytes(), crosses_slash)
    }

    /// A gitignore-style `**/glob`: the glob matches the file's name at any depth.
    pub fn anywhere(pattern: &str, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        match pattern.strip_prefix("**/") {
            Some(glob) => wildcard(glob, name, false),
            None => wildcard(pattern, path, false),
        }
    }

    /// Whether `rules` (`Tool(pattern)` strings) hold a `tool` rule matching `path`.
    pub fn tool_rule_matches(rules: &[String], tool: &str, path: &str) -> bool {
        rules.iter().any(|r| {
            r.strip_prefix(tool)
                .and_then(|r| r.strip_prefix('('))
                .and_then(|r| r.strip_suffix(')'))
                .is_some_and(|pattern| anywhere(pattern, path))
        })
    }

    #[test]
    fn the_samples_are_what_the_policy_calls_secret_and_ordinary() {
        for path in SECRETS {
            assert!(super::is_secret_path(path), "{path}");
        }
        for path in ORDINARY {
            assert!(!super::is_secret_path(path), "{path}");
        }
    }

    #[test]
    fn wildcards_match_like_the_clis_globs() {
        assert!(wildcard("*.pem", "a/b.pem", true));
        assert!(!wildcard("*.pem", "a/b.pem", false));
        assert!(anywhere("**/.env.*", "config/.env.production"));
        assert!(!anywhere("**/.env", "x/.envrc"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_files_are_recognised() {
        for p in [
            ".env",
            "config/.env.production",
            "certs/server.pem",
            "tls.KEY",
            "home/.ssh/id_rsa",
            "id_ed25519.pub",
            ".netrc",
            "gcp/credentials.json",
            "deploy/store.p12",
            "home/.npmrc",
        ] {
            assert!(is_secret_path(p), "{p}");
        }
    }

    #[test]
    fn service_account_keys_and_git_credentials_are_secrets() {
        for p in [
            "deploy/ci-service-account.json",
            "keys/service_account_prod.json",
            ".config/gcloud/application_default_credentials.json",
            "home/.git-credentials",
        ] {
            assert!(is_secret_path(p), "{p}");
        }
        for p in [
            "docs/service-account.md",
            "src/service_account.py",
            "service-account.json.example",
        ] {
            assert!(!is_secret_path(p), "{p}");
        }
    }

    #[test]
    fn examples_templates_and_code_are_not_secrets() {
        for p in [
            ".env.example",
            ".env.sample",
            "config/.env.template",
            "src/key.rs",
            "keyboard.ts",
            "docs/credentials.md",
            "environment.ts",
            "monkey.py",
            "docs/envrc.md",
            "src/env.rs",
            "variables.tf",
        ] {
            assert!(!is_secret_path(p), "{p}");
        }
    }

    #[test]
    fn every_rule_renders_in_each_syntax() {
        assert_eq!(anywhere_globs().len(), RULES.len());
        assert!(anywhere_globs().contains(&"**/.env.*".to_string()));
        let opencode = opencode_globs();
        assert!(opencode.contains(&".env".to_string()) && opencode.contains(&"*/.env".to_string()));
        assert!(
            opencode.contains(&"*.pem".to_string()) && !opencode.contains(&"*/*.pem".to_string())
        );
        for pattern in json_path_regexes() {
            regex::Regex::new(&pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        }
    }
}
