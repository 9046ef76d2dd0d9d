//! Which files look like secrets: kept out of read copies, so a worker that only
//! needs to read code never sees them.

/// The one secret-file policy lives with the worker adapters, which render it into each CLI's
/// rules; read copies, redaction and attachments use the same matcher.
pub use pitroom_workers::secret_files::is_secret_path;

/// The most secret-looking files Pitroom lists in one tree (to hide them, or keep them out of a
/// snapshot): past it a read run gets a copy, and listing stops.
pub const MAX_SECRET_FILES: usize = 4096;

/// The secret-looking files of `repo`'s tree that a snapshot could stage, relative to its top:
/// kept out of every snapshot Pitroom takes in the user's repository, so their contents are
/// never hashed into its object store (which read copies borrow and a later worker could read).
/// Files beyond a linked directory are left out of the list: git stages the link, never what
/// lies beyond it, and naming such a path in a pathspec is an error.
pub fn stageable_secrets(repo: &pitroom_git::Repo) -> Vec<String> {
    let top = std::fs::canonicalize(&repo.toplevel).unwrap_or_else(|_| repo.toplevel.clone());
    secret_files_under(&repo.toplevel, MAX_SECRET_FILES)
        .iter()
        .filter_map(|p| p.strip_prefix(&repo.toplevel).ok())
        .filter(|rel| {
            let parent = rel.parent().unwrap_or(std::path::Path::new(""));
            std::fs::canonicalize(repo.toplevel.join(parent)).ok() == Some(top.join(parent))
        })
        .map(|p| p.display().to_string())
        .collect()
}

/// The working tree of `repo` as a tree object, staged into the throwaway index `out_index`,
/// with every secret-looking file kept out: left out of staging, not only dropped after it, since
/// a file `add` stages is hashed into the user's object store, which every read copy borrows and
/// a worker could print with `git cat-file --batch-all-objects`. (Tracked ones are there already,
/// as the user committed them; they are dropped from the snapshot's index.)
pub fn snapshot_without_secrets(
    repo: &pitroom_git::Repo,
    out_index: &std::path::Path,
) -> Result<pitroom_git::Snapshot, pitroom_git::GitError> {
    let is_secret = |p: &str| is_secret_path(p);
    let secrets = stageable_secrets(repo);
    let options = pitroom_git::SnapshotOptions {
        exclude: &secrets,
        drop: Some(&is_secret),
        seed_tree: None,
    };
    pitroom_git::snapshot_with(
        &repo.git_dir,
        &repo.toplevel,
        &repo.index,
        out_index,
        &options,
    )
}

/// Credentials in the user's home a read run must not read (`~/.ssh`, cloud and tool logins,
/// git's and curl's stored passwords): hidden behind an empty directory or file, like the
/// project's secret files. Only those that exist.
pub fn credential_paths(home: &std::path::Path) -> Vec<std::path::PathBuf> {
    const PATHS: &[&str] = &[
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".kube",
        ".docker",
        ".config/gh",
        ".config/gcloud",
        ".config/hub",
        ".config/op",
        ".config/git/credentials",
        ".password-store",
        ".local/share/keyrings",
        ".git-credentials",
        ".netrc",
        ".pgpass",
    ];
    PATHS
        .iter()
        .map(|d| home.join(d))
        .filter(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir() || m.is_file()))
        .collect()
}

/// A repository's git config with its credentials taken out, or `None` when it holds none:
/// the user part of every URL (`https://x-access-token:TOKEN@host/` → `https://host/`, in a
/// remote's `url`, an `insteadOf` or a section name) and each `http.extraheader` (where CI
/// checkouts keep their token). Every other line is kept as it is, so git behaves the same
/// with the copy bound over the real file.
#[expect(
    clippy::expect_used,
    reason = "constant patterns; the tests compile them"
)]
pub fn git_config_without_credentials(text: &str) -> Option<String> {
    static USERINFO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s\x22]+@").expect("a valid pattern")
    });
    static EXTRAHEADER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^\s*extraheader\s*(=|$)").expect("a valid pattern")
    });
    let mut changed = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if EXTRAHEADER.is_match(line) {
            out.push_str("\t# an http.extraheader, hidden by Pitroom\n");
            changed = true;
            continue;
        }
        match USERINFO.replace_all(line, "$1") {
            std::borrow::Cow::Owned(stripped) => {
                out.push_str(&stripped);
                changed = true;
            }
            std::borrow::Cow::Borrowed(kept) => out.push_str(kept),
        }
    }
    changed.then_some(out)
}

/// Variables through which a worker would reach the user's session — a terminal multiplexer
/// (`tmux send-keys` runs a command outside every sandbox), the ssh and gpg agents, the
/// session bus, a docker daemon, the display: removed from every worker's environment.
pub const SESSION_VARS: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "STY",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DOCKER_HOST",
    "DISPLAY",
    "WAYLAND_DISPLAY",
];

/// The sockets (and socket dirs) of the user's session a worker could find without the
/// variables: masked by an empty file or directory in every run. `env` is the caller's; only
/// paths that exist are returned.
pub fn session_sockets(env: &dyn Fn(&str) -> Option<String>, uid: u32) -> Vec<std::path::PathBuf> {
    use std::path::PathBuf;
    let tmux_tmp = env("TMUX_TMPDIR").unwrap_or_else(|| "/tmp".into());
    let runtime = env("XDG_RUNTIME_DIR").unwrap_or_else(|| format!("/run/user/{uid}"));
    let mut paths: Vec<PathBuf> = vec![
        PathBuf::from(tmux_tmp).join(format!("tmux-{uid}")),
        PathBuf::from("/run/screen"),
        PathBuf::from("/var/run/screen"),
        PathBuf::from("/tmp/.X11-unix"),
        PathBuf::from("/run/docker.sock"),
        PathBuf::from("/var/run/docker.sock"),
        PathBuf::from(&runtime).join("bus"),
        PathBuf::from(&runtime).join("docker.sock"),
        PathBuf::from(&runtime).join("gnupg"),
        PathBuf::from(&runtime).join("keyring"),
        PathBuf::from(&runtime).join("podman"),
    ];
    if let Some(agent) = env("SSH_AUTH_SOCK").filter(|s| s.starts_with('/')) {
        paths.push(PathBuf::from(agent));
    }
    if let Some(bus) = env("DBUS_SESSION_BUS_ADDRESS").and_then(|a| {
        a.strip_prefix("unix:path=")
            .map(|p| p.split(',').next().unwrap_or(p).to_string())
    }) {
        paths.push(PathBuf::from(bus));
    }
    paths.retain(|p| std::fs::symlink_metadata(p).is_ok());
    paths.sort();
    paths.dedup();
    paths
}

/// Secret-looking files directly inside `dir`, by name.
pub fn secret_files_in(dir: &std::path::Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|name| is_secret_path(name))
        .collect();
    found.sort();
    found
}

/// Every secret-looking file a worker could open beneath `root` (tracked, untracked or
/// ignored alike: a `.env` usually is ignored), by the rule of [`is_secret_path`]: regular files,
/// and links that lead to one. Git dirs are not entered. Links to directories are followed —
/// a worker reads through them as easily — each directory walked once (by its real path), so
/// a loop of links ends. Stops once it found more than `limit` (the caller then keeps such a
/// tree out of reach by other means).
pub fn secret_files_under(root: &std::path::Path, limit: usize) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    let mut walked = std::collections::HashSet::new();
    while let Some(dir) = dirs.pop() {
        if !walked.insert(std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone())) {
            continue;
        }
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let leads_to_dir =
                kind.is_symlink() && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
            if kind.is_dir() || leads_to_dir {
                if name != ".git" {
                    dirs.push(entry.path());
                }
                continue;
            }
            let Some(text) = name.to_str() else {
                continue;
            };
            if !is_secret_path(text) {
                continue;
            }
            let path = entry.path();
            // A link counts when it leads to a file: the bind lands on its target.
            if kind.is_file() || std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                found.push(path);
                if found.len() > limit {
                    return found;
                }
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_remote_urls_token_and_an_extraheader_leave_the_config_and_nothing_else_does() {
        let config = "[core]\n\tbare = false\n\
[remote \"origin\"]\n\turl = https://x-access-token:ghs_T0KEN@github.com/o/r.git\n\
\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
[remote \"up\"]\n\turl = git@github.com:o/r.git\n\tpushurl = https://TOKEN2@example.com/r\n\
[url \"https://user:pw@mirror.example/\"]\n\tinsteadOf = https://example.com/\n\
[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n";
        let clean = super::git_config_without_credentials(config).expect("it held credentials");
        for secret in ["ghs_T0KEN", "TOKEN2", "user:pw", "c2VjcmV0"] {
            assert!(!clean.contains(secret), "{secret} left in:\n{clean}");
        }
        for kept in [
            "url = https://github.com/o/r.git",
            "url = git@github.com:o/r.git",
            "pushurl = https://example.com/r",
            "[url \"https://mirror.example/\"]",
            "fetch = +refs/heads/*:refs/remotes/origin/*",
            "[http \"https://github.com/\"]",
        ] {
            assert!(clean.contains(kept), "{kept} lost from:\n{clean}");
        }
        assert_eq!(clean.lines().count(), config.lines().count());
    }

    #[test]
    fn a_config_without_credentials_is_left_alone() {
        let config = "[remote \"origin\"]\n\turl = git@github.com:o/r.git\n\
[user]\n\temail = a@b.example\n[include]\n\tpath = ../shared.gitconfig\n";
        assert_eq!(super::git_config_without_credentials(config), None);
    }

    use super::*;

    #[test]
    fn secret_files_under_a_tree_include_ignored_and_nested_ones_but_not_git_dirs() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        for (path, body) in [
            (".env", "A=1"),
            ("node_modules/pkg/test/key.pem", "k"),
            ("src/main.rs", "fn main() {}"),
            (".env.example", "A="),
            (".git/credentials", "x"),
            ("credentials/readme.md", "not a secret"),
        ] {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
            std::fs::write(p, body).expect("write");
        }
        std::os::unix::fs::symlink(".env", root.join("id_rsa")).expect("link");
        std::os::unix::fs::symlink("nowhere", root.join("dangling.key")).expect("link");
        let found = secret_files_under(root, 100);
        let names: Vec<String> = found
            .iter()
            .map(|p| p.strip_prefix(root).expect("under").display().to_string())
            .collect();
        assert_eq!(names, [".env", "id_rsa", "node_modules/pkg/test/key.pem"]);
        assert_eq!(secret_files_under(root, 1).len(), 2, "stops past the limit");
    }
}
