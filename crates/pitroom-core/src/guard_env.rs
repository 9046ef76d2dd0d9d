//! The git guard around a worker (PRODUCT.md §7): layer 1, a `git` link to this binary first on
//! the worker's `PATH`; layer 2, git's own environment config — a `reference-transaction` hook
//! (this binary again) that refuses every ref update of a protected repository, and push URLs
//! rewritten to nowhere — which holds even when a worker runs `/usr/bin/git` directly.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use pitroom_git::guard::{env, floor, shim};

use crate::home::Home;

/// Where the guard's links live.
#[derive(Debug, Clone)]
pub struct GuardLinks {
    /// Holds `git` → the pitroom executable.
    pub shim_dir: PathBuf,
    /// Holds `reference-transaction` → the pitroom executable (`core.hooksPath`).
    pub hooks_dir: PathBuf,
}

/// A push URL no push can reach: a path under `/dev/null` cannot exist.
const NOWHERE: &str = "/dev/null/pitroom-push-blocked/";

/// Makes sure `$PITROOM_HOME/bin/git` and `$PITROOM_HOME/hooks/reference-transaction` link to
/// `exe` (replaced atomically when they point elsewhere, e.g. after an upgrade).
pub fn install_links(home: &Home, exe: &Path) -> std::io::Result<GuardLinks> {
    let links = GuardLinks {
        shim_dir: home.root.join("bin"),
        hooks_dir: home.root.join("hooks"),
    };
    link(exe, &links.shim_dir.join(env::SHIM))?;
    // The floor: privilege, publishing and other agent CLIs (see pitroom-git's guard/floor.rs).
    for program in floor::GUARDED_PROGRAMS {
        link(exe, &links.shim_dir.join(program))?;
    }
    link(exe, &links.hooks_dir.join(env::HOOK))?;
    Ok(links)
}

fn link(target: &Path, at: &Path) -> std::io::Result<()> {
    if std::fs::read_link(at).ok().as_deref() == Some(target) {
        return Ok(());
    }
    if let Some(dir) = at.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = at.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    std::fs::rename(&tmp, at)
}

/// The guard's variables for a worker whose environment is `env` (the caller's), protecting
/// `protected` git dirs. Returned as `(name, value)` pairs to set; existing `GIT_CONFIG_COUNT`
/// entries are kept and the guard's appended after them.
pub fn guard_vars(
    env: &[(String, String)],
    links: &GuardLinks,
    protected: &[PathBuf],
) -> Vec<(String, String)> {
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let path = get("PATH").unwrap_or_default();
    let mut vars = Vec::new();
    if let Some(real) = real_git(&path, &links.shim_dir) {
        vars.push((env::REAL_GIT.to_string(), real.display().to_string()));
    }
    vars.push((
        "PATH".to_string(),
        format!("{}:{path}", links.shim_dir.display()),
    ));
    vars.push((env::PROTECTED.to_string(), env::join_protected(protected)));
    let start: usize = get(env::GIT_CONFIG_COUNT)
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or(0);
    let settings = [
        ("core.hooksPath", links.hooks_dir.display().to_string()),
        (&*format!("url.{NOWHERE}.pushInsteadOf"), String::new()),
    ]
    .map(|(k, v)| (k.to_string(), v));
    for (offset, (key, value)) in settings.iter().enumerate() {
        vars.push((env::git_config_key(start + offset), key.clone()));
        vars.push((env::git_config_value(start + offset), value.clone()));
    }
    vars.push((
        env::GIT_CONFIG_COUNT.to_string(),
        (start + settings.len()).to_string(),
    ));
    vars.push(("GIT_SEQUENCE_EDITOR".to_string(), "true".to_string()));
    // A worker's reads must not rewrite the index (and contend with the user's own git).
    vars.push(("GIT_OPTIONAL_LOCKS".to_string(), "0".to_string()));
    vars
}

/// The first `git` on `path` that is not the shim.
fn real_git(path: &str, shim_dir: &Path) -> Option<PathBuf> {
    shim::find_on_path(OsStr::new(path), env::SHIM, |c| {
        c.parent() != Some(shim_dir) && c.is_file()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links() -> GuardLinks {
        GuardLinks {
            shim_dir: "/h/bin".into(),
            hooks_dir: "/h/hooks".into(),
        }
    }

    fn get<'a>(vars: &'a [(String, String)], k: &str) -> Option<&'a str> {
        vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn shim_comes_first_on_path_and_real_git_is_found_behind_it() {
        let env = vec![(
            "PATH".to_string(),
            "/usr/local/bin:/usr/bin:/bin".to_string(),
        )];
        let vars = guard_vars(&env, &links(), &["/r/.git".into()]);
        assert_eq!(
            get(&vars, "PATH"),
            Some("/h/bin:/usr/local/bin:/usr/bin:/bin")
        );
        assert!(get(&vars, "PITROOM_REAL_GIT").is_some_and(|g| g.ends_with("/git")));
        assert_eq!(get(&vars, "PITROOM_PROTECTED"), Some("/r/.git"));
    }

    #[test]
    fn git_config_entries_are_appended_after_existing_ones() {
        let env = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("GIT_CONFIG_COUNT".to_string(), "2".to_string()),
        ];
        let vars = guard_vars(&env, &links(), &[]);
        assert_eq!(get(&vars, "GIT_CONFIG_COUNT"), Some("4"));
        assert_eq!(get(&vars, "GIT_CONFIG_KEY_2"), Some("core.hooksPath"));
        assert_eq!(get(&vars, "GIT_CONFIG_VALUE_2"), Some("/h/hooks"));
        assert_eq!(
            get(&vars, "GIT_CONFIG_KEY_3"),
            Some("url./dev/null/pitroom-push-blocked/.pushInsteadOf")
        );
        assert_eq!(get(&vars, "GIT_CONFIG_VALUE_3"), Some(""));
        assert!(
            get(&vars, "GIT_CONFIG_KEY_0").is_none(),
            "the user's entries are left alone"
        );
    }

    #[test]
    fn links_are_created_and_repointed() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home {
            root: dir.path().to_path_buf(),
        };
        let exe = dir.path().join("pitroom-a");
        std::fs::write(&exe, "").unwrap();
        let l = install_links(&home, &exe).unwrap();
        assert_eq!(std::fs::read_link(l.shim_dir.join("git")).unwrap(), exe);
        let other = dir.path().join("pitroom-b");
        install_links(&home, &other).unwrap();
        assert_eq!(
            std::fs::read_link(l.hooks_dir.join("reference-transaction")).unwrap(),
            other
        );
    }
}
