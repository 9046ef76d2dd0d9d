//! Finding a worker CLI's executable.

use std::path::{Path, PathBuf};

/// The executable could not be found; carries the variable that overrides the lookup.
#[derive(Debug, thiserror::Error)]
#[error("{program} not found on PATH; install it, or set {env_var} to its path")]
pub struct BinaryNotFound {
    pub program: String,
    pub env_var: String,
}

/// Looks a worker CLI up: `PITROOM_<BACKEND>_BIN` first, then `PATH`.
///
/// `env` is the environment to consult (the caller's, so tests stay hermetic).
pub fn find_binary(
    backend: &str,
    program: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, BinaryNotFound> {
    let env_var = format!("PITROOM_{}_BIN", backend.to_ascii_uppercase());
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
    fn non_executable_file_on_path_is_skipped() {
        let a = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("opencode"), "x").unwrap();
        let path = a.path().display().to_string();
        let env = move |k: &str| (k == "PATH").then(|| path.clone());
        assert!(find_binary("opencode", "opencode", &env).is_err());
    }
}
