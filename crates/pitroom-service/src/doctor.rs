//! `doctor`: is everything a run needs here, and which safety layers hold. The checks are
//! the run library's, so the CLI's `pitroom doctor` and the MCP server's `pitroom_info`
//! (topic `doctor`) report the same facts.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use pitroom_workers::{adapter_for, find_binary, program_of, KNOWN_BACKENDS};
use serde::Serialize;

use crate::Service;

/// One line of the check-up.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    #[serde(rename = "check")]
    pub name: String,
    pub ok: bool,
    /// Whether a failure stops runs (else it is a warning).
    pub essential: bool,
    pub detail: String,
}

impl Check {
    pub fn new(name: &str, ok: bool, essential: bool, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok,
            essential,
            detail: detail.into(),
        }
    }
}

/// Healthy: every essential check holds.
pub fn healthy(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.ok || !c.essential)
}

impl Service {
    /// The machine's check-up: config, state dir, git, the safety layers, ripgrep and every
    /// known worker CLI. Starts a keeper once (to see which containment holds) and each CLI's
    /// `--version`; changes nothing but the guard's links in the state dir.
    pub fn doctor(&self) -> Vec<Check> {
        let mut checks = vec![self.config_check(), self.state_check()];
        let git = version_of(Path::new("git"), &["--version"]);
        checks.push(Check {
            name: "git".into(),
            ok: git.is_some(),
            essential: true,
            detail: git.unwrap_or_else(|| "not found on PATH; install git".into()),
        });
        checks.push(self.guard_check());
        let portable = self.portable();
        checks.push(landlock_check(portable));
        checks.push(privilege_check(portable));
        checks.push(self.containment_check());
        checks.push(watch_check(portable));
        let rg = version_of(Path::new("rg"), &["--version"]);
        checks.push(Check {
            name: "ripgrep".into(),
            ok: rg.is_some(),
            essential: false,
            detail: rg.unwrap_or_else(|| {
                "not found: OpenCode's grep/glob tools need `rg` on PATH (else it tries to download one)".into()
            }),
        });
        for backend in KNOWN_BACKENDS {
            checks.push(self.worker_check(backend));
        }
        checks
    }
}

impl Service {
    /// Whether this service runs portable (`PITROOM_PORTABLE` in its environment).
    fn portable(&self) -> bool {
        pitroom_proc::portable_value(
            self.env_var(pitroom_proc::PORTABLE_ENV)
                .as_deref()
                .map(std::ffi::OsStr::new),
        )
    }

    fn config_check(&self) -> Check {
        match self.config(&pitroom_core::config::FlagValues::default()) {
            Ok(c) => Check {
                name: "config".into(),
                ok: c.warnings.is_empty(),
                essential: false,
                detail: match (&c.file, c.warnings.first()) {
                    (_, Some(w)) => w.clone(),
                    (Some(f), None) => f.display().to_string(),
                    (None, None) => "no config file (defaults)".into(),
                },
            },
            Err(e) => Check {
                name: "config".into(),
                ok: false,
                essential: true,
                detail: e.to_string(),
            },
        }
    }

    fn state_check(&self) -> Check {
        let home = self.home();
        let probe = home.root.join(".doctor-probe");
        let writable = std::fs::create_dir_all(&home.root)
            .and_then(|_| std::fs::write(&probe, b"ok"))
            .and_then(|_| std::fs::remove_file(&probe));
        Check {
            name: "state dir".into(),
            ok: writable.is_ok(),
            essential: true,
            detail: match writable {
                Ok(()) => home.root.display().to_string(),
                Err(e) => format!(
                    "{} is not writable: {e}; set {}",
                    home.root.display(),
                    pitroom_core::home::HOME_ENV
                ),
            },
        }
    }

    /// Layers 1 and 2 of the git guard: the links, and a git new enough for `GIT_CONFIG_COUNT`
    /// (2.31) and the `reference-transaction` hook (2.28).
    fn guard_check(&self) -> Check {
        let installed = pitroom_core::guard_env::install_links(self.home(), &self.engine().exe)
            .map_err(|e| e.to_string());
        let git_ok = version_of(Path::new("git"), &["--version"])
            .and_then(|v| parse_version(&v))
            .is_some_and(|(major, minor)| (major, minor) >= (2, 31));
        let (ok, detail) = match (installed, git_ok) {
            (Ok(links), true) => (
                true,
                format!(
                    "layer 1 (git shim in {}) and layer 2 (reference-transaction hook, push rewrite) ready; links to {}",
                    links.shim_dir.display(),
                    links.target.display()
                ),
            ),
            (Ok(_), false) => (false, "git 2.31 or newer is needed for layer 2 (GIT_CONFIG_COUNT)".into()),
            (Err(e), _) => (false, format!("could not install the guard links: {e}")),
        };
        Check {
            name: "git guard".into(),
            ok,
            essential: true,
            detail,
        }
    }

    /// Whether a worker's process tree gets a PID namespace here: tried for real, with a keeper
    /// that runs `true` the way it runs a worker.
    fn containment_check(&self) -> Check {
        let report = self.probe_containment();
        let (ok, detail) = match &report {
            Ok(r) if r.mechanism == pitroom_proc::Mechanism::PidNamespace => (
                true,
                format!(
                    "each worker tree gets a PID namespace: nothing of it survives even if every Pitroom process is killed{}",
                    if r.own_proc { "" } else { " (the worker sees the host's /proc)" }
                ),
            ),
            Ok(r) => (
                false,
                format!(
                    "no PID namespace ({}): only the keeper's sweep ends a worker's tree; it holds unless supervisor and keeper are killed together",
                    r.reason.as_deref().unwrap_or("no reason given")
                ),
            ),
            Err(why) => (false, format!("could not try a keeper: {why}")),
        };
        Check {
            name: "containment".into(),
            ok,
            essential: false,
            detail,
        }
    }

    fn probe_containment(&self) -> Result<pitroom_proc::ContainmentReport, String> {
        let exe = &self.engine().exe;
        let scratch = std::env::temp_dir().join(format!("pitroom-doctor-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        let report = scratch.join("containment.json");
        let spec = pitroom_proc::KeeperSpec {
            program: "true".into(),
            args: Vec::new(),
            cwd: scratch.clone(),
            stdin_file: None,
            stderr_file: scratch.join("stderr.log"),
            env: self
                .engine()
                .env
                .iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            grace: std::time::Duration::from_secs(1),
            sandbox: None,
            containment_report: Some(report.clone()),
        };
        let outcome = pitroom_proc::spawn_keeper(exe, &spec)
            .map_err(|e| e.to_string())
            .and_then(|mut keeper| {
                keeper.wait_bounded(std::time::Duration::from_secs(10));
                pitroom_proc::ContainmentReport::read(&report)
                    .ok_or_else(|| "the keeper wrote no containment report".to_string())
            });
        // A scratch dir of two small files; failing to remove it loses nothing.
        let _ = std::fs::remove_dir_all(&scratch);
        outcome
    }

    fn worker_check(&self, backend: &str) -> Check {
        let Some(_adapter) = adapter_for(backend) else {
            return Check {
                name: backend.into(),
                ok: false,
                essential: false,
                detail: "no adapter yet".into(),
            };
        };
        let lookup = |k: &str| self.env_var(k);
        match find_binary(backend, program_of(backend), &lookup) {
            Ok(path) => {
                let version =
                    version_of(&path, &["--version"]).unwrap_or_else(|| "version unknown".into());
                Check {
                    name: backend.into(),
                    ok: true,
                    essential: false,
                    detail: format!("{} ({version}){}", path.display(), unproven_note(backend)),
                }
            }
            Err(e) => Check {
                name: backend.into(),
                ok: false,
                essential: false,
                detail: format!("{e}{}", unproven_note(backend)),
            },
        }
    }
}

/// What `PITROOM_PORTABLE` turns off, said where a check is off because of it.
fn turned_off_by_portable() -> String {
    format!("turned off by {}", pitroom_proc::PORTABLE_ENV)
}

/// Layer 3: whether runs are Landlocked here, and whether edit runs keep `.git` read-only.
fn landlock_check(portable: bool) -> Check {
    use pitroom_proc::landlock::MountRoute;
    if portable {
        return Check {
            name: "landlock".into(),
            ok: false,
            essential: false,
            detail: format!(
                "Landlock and mount namespaces {}: runs go on with layers 1–2 only, as off Linux; edit runs can write .git with plain file writes (layers 1–2 still stop git), read runs read a copy checked against a snapshot",
                turned_off_by_portable()
            ),
        };
    }
    if !cfg!(target_os = "linux") {
        return Check {
            name: "landlock".into(),
            ok: false,
            essential: false,
            detail: "Landlock and mount namespaces are Linux only: on macOS each worker but Codex starts under a Seatbelt profile (sandbox-exec) rendered from the same rules, not yet proven on a Mac; read runs read a copy checked against a snapshot".into(),
        };
    }
    let git_dir = match pitroom_proc::landlock::mount_route() {
        MountRoute::Privileged => {
            "in a private mount namespace, edit runs bind the repository's .git read-only, read runs hide secret files, and every worker sees only its own part of the state dir and no credential in the remotes' URLs"
        }
        MountRoute::UserNamespace => {
            "in a private mount namespace inside a user namespace of the worker's own, edit runs bind the repository's .git read-only, read runs hide secret files, and every worker sees only its own part of the state dir and no credential in the remotes' URLs"
        }
        MountRoute::Unavailable => {
            "no private mount namespace: unprivileged user namespaces are off here (sysctl kernel.unprivileged_userns_clone=0, user.max_user_namespaces=0, or AppArmor's kernel.apparmor_restrict_unprivileged_userns=1) or PITROOM_NO_PID_NAMESPACE is set, so in edit runs .git stays writable to plain file writes (layers 1–2 still stop git), read runs read copies, and workers can read the whole state dir and the remotes' credentials"
        }
    };
    let scopes = if pitroom_proc::kernel_abi().is_some_and(|abi| abi >= 6) {
        "; signals and abstract sockets are scoped to the worker's tree"
    } else {
        ""
    };
    match pitroom_proc::kernel_abi() {
        Some(abi) if abi >= 3 => Check {
            name: "landlock".into(),
            ok: true,
            essential: false,
            detail: format!(
                "ABI {abi}: enforced around every worker except Codex (its own sandbox), and around --verify{scopes}; {git_dir}"
            ),
        },
        Some(abi) => Check {
            name: "landlock".into(),
            ok: false,
            essential: false,
            detail: format!(
                "ABI {abi}: partially enforced (truncating files needs ABI 3, Linux 6.2); {git_dir}"
            ),
        },
        None => Check {
            name: "landlock".into(),
            ok: false,
            essential: false,
            detail: "not offered here (Linux 5.13+ with Landlock enabled): runs go on with layers 1–2 only, and say so".into(),
        },
    }
}

/// No privilege in the worker's tree: what every worker gives up before it starts.
fn privilege_check(portable: bool) -> Check {
    if portable {
        return Check {
            name: "privileges".into(),
            ok: false,
            essential: false,
            detail: format!(
                "capability drop and seccomp go with Landlock, {}: a worker keeps the rights of the user who runs it",
                turned_off_by_portable()
            ),
        };
    }
    if !cfg!(target_os = "linux") {
        return Check {
            name: "privileges".into(),
            ok: false,
            essential: false,
            detail: "capability drop and seccomp are Linux only: a worker here keeps the rights of the user who runs it".into(),
        };
    }
    let seccomp = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")));
    Check {
        name: "privileges".into(),
        ok: seccomp,
        essential: false,
        detail: if seccomp {
            "every Landlocked worker (all but Codex, which keeps its own sandbox) starts with no capability (bounding, ambient and permitted sets emptied, securebits locked, no_new_privs) and a seccomp filter refusing the mount API, open_by_handle_at, device nodes, ptrace, keyrings, module loading and bpf".into()
        } else {
            "no seccomp in this kernel: Landlocked workers still lose every capability, but no system call is filtered".into()
        },
    }
}

/// How waits, `watch`, the MCP server's notifications and the dashboard see state-dir changes.
fn watch_check(portable: bool) -> Check {
    let detail = if portable {
        format!(
            "inotify {}: state dirs are re-read every 25 ms (a change is seen, not which entry)",
            turned_off_by_portable()
        )
    } else if cfg!(target_os = "linux") {
        "inotify".into()
    } else if cfg!(target_os = "macos") {
        "kqueue: a change is seen, not which entry (callers re-read)".into()
    } else {
        "state dirs are re-read every 25 ms (no inotify or kqueue here)".into()
    };
    Check {
        name: "state-dir watch".into(),
        ok: true,
        essential: false,
        detail,
    }
}

/// Adapters no real-CLI test backs (the CLI is not installable where Pitroom is built).
fn unproven_note(backend: &str) -> &'static str {
    match pitroom_workers::facts(backend) {
        Some(cli) if !cli.is_proven() => {
            "; unproven: built from the documented format, no real-CLI test"
        }
        _ => "",
    }
}

/// The first line a program prints for `args`, within 10 seconds.
fn version_of(program: &Path, args: &[&str]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// `(major, minor)` from "git version 2.47.3".
fn parse_version(text: &str) -> Option<(u32, u32)> {
    let v = text
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let mut parts = v.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_and_antigravity_are_reported_unproven_found_or_not_and_proven_ones_are_not() {
        for backend in ["cursor", "antigravity"] {
            let service = Service::new(Vec::new(), "/nonexistent/pitroom".into());
            let check = service.worker_check(backend);
            assert!(
                check
                    .detail
                    .contains("unproven: built from the documented format, no real-CLI test"),
                "{backend}: {}",
                check.detail
            );
        }
        assert_eq!(program_of("antigravity"), "agy");
        assert_eq!(unproven_note("codex"), "");
    }

    #[test]
    fn git_versions_are_read() {
        assert_eq!(parse_version("git version 2.47.3"), Some((2, 47)));
        assert_eq!(
            parse_version("git version 2.39.5 (Apple Git-154)"),
            Some((2, 39))
        );
        assert_eq!(parse_version("nonsense"), None);
    }
}
