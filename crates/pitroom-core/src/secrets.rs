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

#[cfg(test)]
mod tests {
    use super::*;

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
