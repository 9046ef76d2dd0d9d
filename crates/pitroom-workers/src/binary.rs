//! Finding a worker CLI's executable.

use crate::facts::program_of;
use std::path::{Path, PathBuf};

/// The executable could not be found; carries the variable that overrides the lookup.
#[derive(Debug, thiserror::Error)]
#[error("{program} not found on PATH; install it, or set {env_var} to its path")]
pub struct BinaryNotFound {
    pub program: String,
    pub env_var: String,
}

/// The variable that points Pitroom at a backend's executable: `PITROOM_<BACKEND>_BIN`.
pub fn override_var(backend: &str) -> String {
    format!("PITROOM_{}_BIN", backend.to_ascii_uppercase())
}

/// Looks a worker CLI up: `PITROOM_<BACKEND>_BIN` first, then `PATH`.
///
/// `env` is the environment to consult (the caller's, so tests stay hermetic).
pub fn find_binary(
    backend: &str,
    program: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, BinaryNotFound> {
    let env_var = override_var(backend);
    let not_found = || BinaryNotFound {
        program: program.to_string(),
        env_var: env_var.clone(),
    };
    if let Some(explicit) = env(&env_var).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(not_found())
        };
    }
    let path_var = env("PATH").unwrap_or_default();
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(not_found)
}

impl BinaryNotFound {
    /// What a newcomer without the worker's CLI needs, in three lines: which CLIs were looked
    /// for (and any other one that is installed), the one command that installs the default
    /// worker, and the demo that needs no CLI at all.
    pub fn first_steps(&self, env: &dyn Fn(&str) -> Option<String>) -> String {
        let others: Vec<&str> = crate::KNOWN_BACKENDS
            .iter()
            .map(|b| program_of(b))
            .filter(|p| *p != self.program)
            .collect();
        let installed: Vec<&str> = crate::KNOWN_BACKENDS
            .iter()
            .copied()
            .filter(|b| program_of(b) != self.program)
            .filter(|b| find_binary(b, program_of(b), env).is_ok())
            .collect();
        let found = match installed.as_slice() {
            [] => "none of them is installed".to_string(),
            [one, ..] => format!("installed: {} (use it with -W {one})", installed.join(", ")),
        };
        format!(
            "{} not found on PATH or in {}; also looked for {}: {found}\n\
             install OpenCode, the default worker (its free models need no key): npm i -g opencode-ai\n\
             or try Pitroom first with a scripted worker, no CLI or key needed: pitroom demo",
            self.program,
            self.env_var,
            others.join(", ")
        )
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn make_exe(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn explicit_env_var_wins_over_path() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        make_exe(a.path(), "opencode");
        let explicit = make_exe(b.path(), "my-opencode");
        let path = a.path().display().to_string();
        let exp = explicit.display().to_string();
        let env = move |k: &str| match k {
            "PATH" => Some(path.clone()),
            "PITROOM_OPENCODE_BIN" => Some(exp.clone()),
            _ => None,
        };
        assert_eq!(find_binary("opencode", "opencode", &env).unwrap(), explicit);
    }

    #[test]
    fn missing_binary_names_the_override_variable() {
        let env = |k: &str| (k == "PATH").then(|| "/nonexistent".to_string());
        let err = find_binary("opencode", "opencode", &env).unwrap_err();
        assert!(err.to_string().contains("PITROOM_OPENCODE_BIN"), "{err}");
    }

    #[test]
    fn first_steps_name_the_clis_looked_for_the_install_command_and_the_demo() {
        let env = |k: &str| (k == "PATH").then(|| "/nonexistent".to_string());
        let err = find_binary("opencode", "opencode", &env).unwrap_err();
        let text = err.first_steps(&env);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].contains("opencode not found on PATH or in PITROOM_OPENCODE_BIN"));
        assert!(lines[0].contains("codex, claude, gemini"), "{text}");
        assert!(lines[0].contains("none of them is installed"), "{text}");
        assert!(lines[1].ends_with("npm i -g opencode-ai"), "{text}");
        assert!(lines[2].ends_with("pitroom demo"), "{text}");
    }

    #[test]
    fn first_steps_point_at_another_installed_cli() {
        let a = tempfile::tempdir().unwrap();
        make_exe(a.path(), "codex");
        let path = a.path().display().to_string();
        let env = move |k: &str| (k == "PATH").then(|| path.clone());
        let err = find_binary("opencode", "opencode", &env).unwrap_err();
        assert!(
            err.first_steps(&env)
                .contains("installed: codex (use it with -W codex)"),
            "{}",
            err.first_steps(&env)
        );
    }

    #[test]
    fn non_executable_file_on_path_is_skipped() {
        let a = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("opencode"), "x").unwrap();
        let path = a.path().display().to_string();
        let env = move |k: &str| (k == "PATH").then(|| path.clone());
        assert!(find_binary("opencode", "opencode", &env).is_err());
    }
}
