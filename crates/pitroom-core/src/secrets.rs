//! Which files look like secrets (PRODUCT.md §7): kept out of read copies, so a worker that only
//! needs to read code never sees them.

/// The one secret-file policy lives with the worker adapters, which render it into each CLI's
/// rules; read copies, redaction and attachments use the same matcher.
pub use pitroom_workers::secret_files::is_secret_path;

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
}
