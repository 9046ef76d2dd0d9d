//! The git guard around a worker (docs/safety.md): layer 1, a `git` link to the guard's
//! executable first on the worker's `PATH`; layer 2, git's own environment config — a
//! `reference-transaction` hook (the same executable) that refuses every ref update of a
//! protected repository, and push URLs rewritten to nowhere — which holds even when a worker
//! runs `/usr/bin/git` directly. The guard's executable is the small `pitroom-guard` next to
//! the pitroom binary, or the pitroom binary itself when that one is missing.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use pitroom_guard::{env, floor, shim};

use crate::home::Home;

/// Where the guard's links live.
#[derive(Debug, Clone)]
pub struct GuardLinks {
    /// Holds `git` and the floor programs → [`target`](Self::target).
    pub shim_dir: PathBuf,
    /// Holds `reference-transaction` → [`target`](Self::target) (`core.hooksPath`).
    pub hooks_dir: PathBuf,
    /// The executable every link points at ([`guard_executable`]).
    pub target: PathBuf,
}

/// A push URL no push can reach: a path under `/dev/null` cannot exist.
const NOWHERE: &str = "/dev/null/pitroom-push-blocked/";

/// The executable the guard's links point at for the pitroom binary `exe`: the small
/// `pitroom-guard` beside it when it is there (`cargo install` and `cargo build` put it there),
/// which starts in a fraction of the time — workers call git often — else `exe` itself, which
/// plays the same roles.
pub fn guard_executable(exe: &Path) -> PathBuf {
    exe.parent()
        .map(|dir| dir.join(env::GUARD_EXE))
        .filter(|small| small.is_file())
        .unwrap_or_else(|| exe.to_path_buf())
}

/// Makes sure `$PITROOM_HOME/bin/git`, the floor programs beside it and
/// `$PITROOM_HOME/hooks/reference-transaction` link to [`guard_executable`] of `exe` (replaced
/// atomically when they point elsewhere, e.g. after an upgrade).
pub fn install_links(home: &Home, exe: &Path) -> std::io::Result<GuardLinks> {
    let [shim_dir, hooks_dir] = link_dirs(&home.root);
    let links = GuardLinks {
        shim_dir,
        hooks_dir,
        target: guard_executable(exe),
    };
    link(&links.target, &links.shim_dir.join(env::SHIM))?;
    // The floor: privilege, publishing and other agent CLIs (see pitroom-guard's floor.rs).
    for program in floor::guarded_programs() {
        link(&links.target, &links.shim_dir.join(program))?;
    }
    link(&links.target, &links.hooks_dir.join(env::HOOK))?;
    Ok(links)
}

/// Where the guard's links live in the state dir `root`: the shim dir a worker's `PATH` starts
/// with, and the hooks dir git's config points at.
pub fn link_dirs(root: &Path) -> [std::path::PathBuf; 2] {
    [root.join("bin"), root.join("hooks")]
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

/// The variable that names the one global git config file git reads.
pub const GIT_CONFIG_GLOBAL: &str = "GIT_CONFIG_GLOBAL";

/// The global git config a worker's git reads, written by Pitroom into `run_dir` (no worker
/// may write there): an include of the user's own global config files, as the caller's
/// environment names them. Without it a worker's git would read
/// `$XDG_CONFIG_HOME/git/config` from the CLI's state dir, which an earlier run may have
/// written (a `core.fsmonitor` command the next `git status` runs).
pub fn global_config_for_worker(
    caller_env: &[(String, String)],
    run_dir: &Path,
) -> std::io::Result<PathBuf> {
    let get = |k: &str| {
        caller_env
            .iter()
            .find(|(n, v)| n == k && !v.is_empty())
            .map(|(_, v)| PathBuf::from(v))
    };
    let home = get("HOME");
    let candidates: Vec<PathBuf> = match get(GIT_CONFIG_GLOBAL) {
        Some(chosen) => vec![chosen],
        None => [
            get("XDG_CONFIG_HOME")
                .or_else(|| home.as_ref().map(|h| h.join(".config")))
                .map(|d| d.join("git/config")),
            home.map(|h| h.join(".gitconfig")),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    let mut text =
        String::from("# Written by Pitroom for one run: the user's global git config.\n");
    for file in candidates.iter().filter(|f| f.is_file()) {
        text.push_str(&format!(
            "[include]\n\tpath = {}\n",
            quoted_config_value(file)
        ));
    }
    let path = run_dir.join("gitconfig");
    std::fs::write(&path, text)?;
    Ok(path)
}

/// A path as a git config value: quoted, with `\` and `"` escaped.
fn quoted_config_value(path: &Path) -> String {
    let raw = path.display().to_string();
    format!("\"{}\"", raw.replace('\\', "\\\\").replace('"', "\\\""))
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
            target: "/usr/local/bin/pitroom-guard".into(),
        }
    }

    #[test]
    fn a_workers_global_git_config_includes_only_the_users_own_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".config/git")).expect("dirs");
        std::fs::write(home.join(".gitconfig"), "[user]\n\tname = U\n").expect("write");
        let caller = vec![("HOME".to_string(), home.display().to_string())];
        let written = global_config_for_worker(&caller, dir.path()).expect("written");
        let text = std::fs::read_to_string(&written).expect("read");
        assert!(text.contains(&format!("path = \"{}\"", home.join(".gitconfig").display())));
        assert!(
            !text.contains(".config/git/config"),
            "absent files are not included: {text}"
        );
        let out = std::process::Command::new("git")
            .args(["config", "--includes", "--global", "user.name"])
            .env(GIT_CONFIG_GLOBAL, &written)
            .env("XDG_CONFIG_HOME", dir.path().join("planted"))
            .output()
            .expect("git");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "U");
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

    #[test]
    fn links_point_at_the_small_guard_beside_pitroom_else_at_pitroom() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home {
            root: dir.path().join("home"),
        };
        let exe = dir.path().join("pitroom");
        std::fs::write(&exe, "").unwrap();
        let alone = install_links(&home, &exe).unwrap();
        assert_eq!(
            alone.target, exe,
            "no pitroom-guard beside it: pitroom itself"
        );
        assert_eq!(std::fs::read_link(alone.shim_dir.join("git")).unwrap(), exe);

        let small = dir.path().join(env::GUARD_EXE);
        std::fs::write(&small, "").unwrap();
        let l = install_links(&home, &exe).unwrap();
        assert_eq!(l.target, small);
        for link in [
            l.shim_dir.join("git"),
            l.shim_dir.join("sudo"),
            l.shim_dir.join("npm"),
            l.hooks_dir.join("reference-transaction"),
        ] {
            assert_eq!(std::fs::read_link(&link).unwrap(), small, "{link:?}");
        }
    }
}
