//! Which files look like secrets (PRODUCT.md §7): kept out of read copies, so a worker that only
//! needs to read code never sees them.

/// Whether `path` (relative, `/`-separated) names a secret-looking file: `.env`, `.env.*`,
/// `*.pem`, `*.key`, `id_rsa*`, `id_ed25519*`, `id_ecdsa*`, `.netrc`, `credentials.json`, … but
/// not `*.example`, `*.sample` or `*.template`. Case-insensitive, as file systems may be.
pub fn is_secret_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    if [".example", ".sample", ".template", ".dist"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        return false;
    }
    let exact = [
        ".env",
        ".netrc",
        "_netrc",
        ".npmrc",
        ".pypirc",
        "credentials.json",
        "credentials",
        "secrets.json",
        "secrets.yaml",
        "secrets.yml",
        "service-account.json",
        ".htpasswd",
        ".pgpass",
        ".git-credentials",
        "application_default_credentials.json",
    ];
    let prefixes = [".env.", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];
    let suffixes = [
        ".pem",
        ".key",
        ".p12",
        ".pfx",
        ".keystore",
        ".jks",
        ".asc",
        ".gpg",
    ];
    exact.contains(&name.as_str())
        || prefixes.iter().any(|p| name.starts_with(p))
        || suffixes.iter().any(|s| name.ends_with(s))
        || is_service_account_key(&name)
}

/// A cloud service account's key file by its usual names (`ci-service-account.json`,
/// `service_account_prod.json`): JSON holding a private key.
fn is_service_account_key(name: &str) -> bool {
    name.ends_with(".json")
        && (name.contains("service-account") || name.contains("service_account"))
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
/// and links that lead to one. Git dirs are not entered; links to directories are not followed.
/// Stops once it found more than `limit` (the caller then keeps such a tree out of reach by
/// other means).
pub fn secret_files_under(root: &std::path::Path, limit: usize) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if kind.is_dir() {
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
        ] {
            assert!(!is_secret_path(p), "{p}");
        }
    }
}
