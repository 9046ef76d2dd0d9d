//! What Pitroom knows of each worker CLI it drives, one row per CLI: its backend id, the
//! program it installs, the variables that point it at its state, whether a real-CLI test
//! proves the adapter, and the adapter itself. The known-backend list,
//! [`adapter_for`](crate::adapter_for), binary lookup, the denied-command patterns, the run
//! engine's Landlock exceptions and `doctor`'s names and notes are all read from here, so adding
//! a CLI is its folder and one row (`docs/workers/adding-a-cli.md`). The git guard's floor keeps
//! its own list of agent programs (the small guard binary does not link the adapters), and a
//! test holds the two equal.

use crate::Adapter;

/// One worker CLI.
#[derive(Debug, Clone, Copy)]
pub struct CliFacts {
    /// The backend id (`-W <backend>`).
    pub backend: &'static str,
    /// The executable it installs (what `PITROOM_<BACKEND>_BIN` replaces).
    pub program: &'static str,
    /// Other names the same CLI installs or was installed under.
    pub aliases: &'static [&'static str],
    /// The version Pitroom's end-to-end tests run; `None` when the CLI cannot be installed where
    /// Pitroom is built and the adapter follows the documented format only.
    pub proven: Option<&'static str>,
    /// The CLI's own variables naming a directory it keeps state in (`CODEX_HOME`), beyond the
    /// `HOME`, `TMPDIR` and `XDG_*_HOME` every CLI reads: where its adapter points one into the
    /// run's state dirs, the engine's Landlock layer lets the worker write there.
    pub home_vars: &'static [&'static str],
    /// Builds the adapter.
    pub adapter: fn() -> Box<dyn Adapter>,
}

impl CliFacts {
    /// Whether a real-CLI test backs this adapter.
    pub fn is_proven(&self) -> bool {
        self.proven.is_some()
    }
}

/// Every worker CLI Pitroom has an adapter for, in the order `doctor` and the docs list them.
pub const CLIS: &[CliFacts] = &[
    CliFacts {
        backend: "opencode",
        program: "opencode",
        aliases: &[],
        proven: Some("1.18.33"),
        home_vars: &[],
        adapter: || Box::new(crate::opencode::OpenCode),
    },
    CliFacts {
        backend: "codex",
        program: "codex",
        aliases: &[],
        proven: Some("0.171.0"),
        home_vars: &["CODEX_HOME"],
        adapter: || Box::new(crate::codex::Codex),
    },
    CliFacts {
        backend: "claude",
        program: "claude",
        aliases: &[],
        proven: Some("2.1.332"),
        home_vars: &["CLAUDE_CONFIG_DIR"],
        adapter: || Box::new(crate::claude::Claude),
    },
    CliFacts {
        backend: "gemini",
        program: "gemini",
        aliases: &[],
        proven: Some("0.61.0"),
        home_vars: &["GEMINI_CLI_HOME"],
        adapter: || Box::new(crate::gemini::Gemini),
    },
    CliFacts {
        backend: "qwen",
        program: "qwen",
        aliases: &[],
        proven: Some("0.24.4"),
        home_vars: &["QWEN_HOME"],
        adapter: || Box::new(crate::qwen::Qwen),
    },
    CliFacts {
        backend: "kilo",
        program: "kilo",
        aliases: &[],
        proven: Some("7.7.7"),
        home_vars: &[],
        adapter: || Box::new(crate::kilo::Kilo),
    },
    CliFacts {
        backend: "cursor",
        program: "cursor-agent",
        // Cursor's CLI under its newer name.
        aliases: &["agent"],
        proven: None,
        home_vars: &["CURSOR_CONFIG_DIR"],
        adapter: || Box::new(crate::cursor::Cursor),
    },
    CliFacts {
        backend: "antigravity",
        program: "agy",
        aliases: &["antigravity"],
        proven: None,
        home_vars: &[],
        adapter: || Box::new(crate::antigravity::Antigravity),
    },
];

/// Backend ids Pitroom knows. A target prefix counts as a backend only if it is one of these,
/// so `ollama/qwen3:8b` stays one model name.
pub const KNOWN_BACKENDS: [&str; CLIS.len()] = {
    let mut ids = [""; CLIS.len()];
    let mut i = 0;
    while i < CLIS.len() {
        ids[i] = CLIS[i].backend;
        i += 1;
    }
    ids
};

/// The row of a known backend.
pub fn facts(backend: &str) -> Option<&'static CliFacts> {
    CLIS.iter().find(|c| c.backend == backend)
}

/// Whether `name`, set by `backend`'s adapter, points the CLI at a directory it keeps state in:
/// `HOME`, `TMPDIR`, an `XDG_*_HOME`, or one of the row's [`CliFacts::home_vars`] (a CLI
/// described in the config has none of its own).
pub fn is_state_dir_var(backend: &str, name: &str) -> bool {
    name == "HOME"
        || name == "TMPDIR"
        || (name.starts_with("XDG_") && name.ends_with("_HOME"))
        || facts(backend).is_some_and(|cli| cli.home_vars.contains(&name))
}

/// The executable a backend's CLI installs (the backend id itself for one Pitroom does not
/// know, as a config-described CLI names its own).
pub fn program_of(backend: &str) -> &str {
    facts(backend).map_or(backend, |c| c.program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_is_listed_once_with_its_program() {
        let mut ids = KNOWN_BACKENDS.to_vec();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CLIS.len());
        assert_eq!(program_of("cursor"), "cursor-agent");
        assert_eq!(program_of("antigravity"), "agy");
        assert_eq!(program_of("opencode"), "opencode");
        assert_eq!(program_of("mycli"), "mycli");
    }

    #[test]
    fn every_row_builds_the_adapter_of_its_backend() {
        for cli in CLIS {
            assert_eq!((cli.adapter)().id(), cli.backend);
            assert_eq!(
                crate::adapter_for(cli.backend).map(|a| a.id()),
                Some(cli.backend)
            );
        }
        assert!(crate::adapter_for("mycli").is_none());
    }

    #[test]
    fn a_clis_home_variables_are_state_dirs_of_it_alone() {
        assert!(is_state_dir_var("codex", "CODEX_HOME"));
        assert!(is_state_dir_var("cursor", "CURSOR_CONFIG_DIR"));
        assert!(!is_state_dir_var("claude", "CODEX_HOME"));
        assert!(!is_state_dir_var("mycli", "CODEX_HOME"));
        for backend in ["mycli", "opencode"] {
            assert!(is_state_dir_var(backend, "HOME"));
            assert!(is_state_dir_var(backend, "TMPDIR"));
            assert!(is_state_dir_var(backend, "XDG_DATA_HOME"));
            assert!(!is_state_dir_var(backend, "XDG_RUNTIME_DIR"));
            assert!(!is_state_dir_var(backend, "PWD"));
        }
    }

    #[test]
    fn the_guards_floor_refuses_every_agent_cli_by_each_of_its_names() {
        let floor = pitroom_guard::floor::AGENT_CLIS;
        for cli in CLIS {
            for name in std::iter::once(&cli.program).chain(cli.aliases) {
                assert!(
                    floor.contains(name),
                    "{}: {name} not in the floor",
                    cli.backend
                );
            }
        }
        let named: Vec<&str> = CLIS
            .iter()
            .flat_map(|c| std::iter::once(c.program).chain(c.aliases.iter().copied()))
            .collect();
        for name in floor {
            assert!(
                named.contains(name),
                "the floor refuses {name}, which no CLI installs"
            );
        }
    }
}
