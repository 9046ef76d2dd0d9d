//! Where `install` puts things, from the environment (`HOME`, `XDG_DATA_HOME`,
//! `CLAUDE_CONFIG_DIR`, `PATH`), and which agent hosts are present.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// An agent host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Host {
    Claude,
    Codex,
    Gemini,
    Cursor,
}

impl Host {
    pub(crate) const ALL: [Host; 4] = [Host::Claude, Host::Codex, Host::Gemini, Host::Cursor];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
            Host::Cursor => "cursor",
        }
    }

    /// The host's directory in the home and its CLI, either of which says it is here.
    pub(super) fn traces(self) -> (&'static str, &'static str) {
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
pub(crate) struct Layout {
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
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Layout, String> {
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

    pub(crate) fn manifest(&self) -> PathBuf {
        self.data.join("install.json")
    }

    pub(super) fn skill_store(&self) -> PathBuf {
        self.data.join("skills")
    }

    /// Where `host` looks for user skills.
    pub(crate) fn skills_dir(&self, host: Host) -> PathBuf {
        match host {
            Host::Claude => self.claude.join("skills"),
            Host::Codex | Host::Gemini | Host::Cursor => self.agents_skills.clone(),
        }
    }

    pub(super) fn settings(&self) -> PathBuf {
        self.claude.join("settings.json")
    }

    /// A path with the home shown as `~`, for messages.
    pub(crate) fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }

    pub(super) fn host_present(&self, host: Host) -> bool {
        let (dir, cli) = host.traces();
        let dir = match host {
            Host::Claude => self.claude.clone(),
            _ => self.home.join(dir),
        };
        dir.is_dir() || std::env::split_paths(&self.path).any(|d| d.join(cli).is_file())
    }
}
