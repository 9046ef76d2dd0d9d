//! What Pitroom knows of each worker CLI it drives, one row per CLI: its backend id, the
//! program it installs, and whether a real-CLI test proves the adapter. The known-backend list,
//! binary lookup, `doctor`'s names and notes are read from here; the git guard's floor keeps
//! its own list of agent programs (it cannot depend on this crate), and a test holds the two
//! equal.

/// One worker CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    },
    CliFacts {
        backend: "codex",
        program: "codex",
        aliases: &[],
        proven: Some("0.171.0"),
    },
    CliFacts {
        backend: "claude",
        program: "claude",
        aliases: &[],
        proven: Some("2.1.332"),
    },
    CliFacts {
        backend: "gemini",
        program: "gemini",
        aliases: &[],
        proven: Some("0.61.0"),
    },
    CliFacts {
        backend: "qwen",
        program: "qwen",
        aliases: &[],
        proven: Some("0.24.4"),
    },
    CliFacts {
        backend: "kilo",
        program: "kilo",
        aliases: &[],
        proven: Some("7.7.7"),
    },
    CliFacts {
        backend: "cursor",
        program: "cursor-agent",
        // Cursor's CLI under its newer name.
        aliases: &["agent"],
        proven: None,
    },
    CliFacts {
        backend: "antigravity",
        program: "agy",
        aliases: &["antigravity"],
        proven: None,
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
    fn the_guards_floor_refuses_every_agent_cli_by_each_of_its_names() {
        let floor = pitroom_git::guard::floor::AGENT_CLIS;
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
