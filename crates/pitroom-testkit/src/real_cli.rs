//! The pinned real worker CLIs for end-to-end tests, installed from npm into a cache directory.

use std::path::PathBuf;
use std::process::Command;

/// The OpenCode version the adapter was measured against.
pub const OPENCODE_VERSION: &str = "1.18.33";

/// Where the pinned CLIs are installed: `$PITROOM_E2E_CACHE`, else `~/.cache/pitroom-e2e`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("PITROOM_E2E_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                .join(".cache/pitroom-e2e")
        })
}

/// The real `opencode` binary: `$PITROOM_E2E_OPENCODE`, else the pinned version in the cache,
/// installed with npm on first use (under a lock, so parallel tests install once).
pub fn opencode() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("PITROOM_E2E_OPENCODE") {
        return Ok(PathBuf::from(p));
    }
    let prefix = cache_dir().join(format!("opencode-{OPENCODE_VERSION}"));
    let bin = prefix.join("node_modules/.bin/opencode");
    if bin.exists() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    let lock = std::fs::File::create(prefix.join(".install.lock")).map_err(|e| e.to_string())?;
    // SAFETY: flock on a descriptor we own.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
    if !bin.exists() {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(format!("opencode-ai@{OPENCODE_VERSION}"))
            .status()
            .map_err(|e| format!("npm: {e}"))?;
        if !status.success() || !bin.exists() {
            return Err(format!(
                "installing opencode-ai@{OPENCODE_VERSION} into {} failed",
                prefix.display()
            ));
        }
    }
    Ok(bin)
}
