//! The floor every worker stands on, whatever its CLI: no `sudo`, no publishing,
//! no recursive delegation to another agent CLI. Inside a worker these programs are links to
//! the guard's executable, first on `PATH` next to the git shim; it decides here and hands
//! everything allowed to the real program untouched ([`roles`](crate::roles)).

/// Programs that raise privileges.
const PRIVILEGE: &[&str] = &["sudo", "su", "doas", "pkexec"];

/// Programs that publish, or act on a registry or a daemon in the user's name.
const PUBLISHING: &[&str] = &[
    "gh", "npm", "pnpm", "yarn", "cargo", "twine", "gem", "poetry", "uv", "docker", "podman",
];

/// The agent CLIs a worker may not start (it would delegate on the user's behalf, outside the
/// run's limits), by every name they install; the worker's own CLI is let through, as it may
/// re-run itself. `pitroom-workers`' table of CLIs is held equal to this list by its tests.
pub const AGENT_CLIS: &[&str] = &[
    "opencode",
    "codex",
    "claude",
    "gemini",
    "qwen",
    "kilo",
    // Cursor's CLI, under its old and its new name.
    "cursor-agent",
    "agent",
    // Antigravity's binary is `agy`.
    "agy",
    "antigravity",
];

/// Every program the floor stands in front of (each gets a link in the worker's shim dir).
pub fn guarded_programs() -> impl Iterator<Item = &'static str> {
    PRIVILEGE
        .iter()
        .chain(PUBLISHING)
        .chain(AGENT_CLIS)
        .copied()
}

/// Whether the floor stands in front of `program`.
pub fn is_guarded(program: &str) -> bool {
    guarded_programs().any(|p| p == program)
}

/// Whether `program args` may run inside a worker; `Err` carries the one-line reason.
/// `own_cli` is the file name of the worker's own CLI.
pub fn decide(program: &str, args: &[String], own_cli: Option<&str>) -> Result<(), String> {
    let first = first_word(args);
    match program {
        _ if PRIVILEGE.contains(&program) => Err(format!(
            "{program} refused inside a Pitroom worker: workers never raise their privileges"
        )),
        "gh" => Err(
            "gh refused inside a Pitroom worker: it acts on GitHub in your name; workers never publish"
                .into(),
        ),
        _ if AGENT_CLIS.contains(&program) && Some(program) != own_cli => Err(format!(
            "{program} refused inside a Pitroom worker: no delegation from a worker to another agent"
        )),
        "npm" | "pnpm" | "yarn" => refuse_if(
            program,
            first,
            &[
                "publish", "unpublish", "deprecate", "dist-tag", "owner", "access", "token",
                "adduser", "login", "team", "org", "hook", "npm",
            ],
        ),
        "cargo" => refuse_if(program, first, &["publish", "yank", "owner", "login", "logout"]),
        "twine" => refuse_if(program, first, &["upload", "register"]),
        "gem" => refuse_if(program, first, &["push", "yank", "owner", "signin"]),
        "poetry" | "uv" => refuse_if(program, first, &["publish"]),
        "docker" | "podman" => refuse_if(program, first, &["push", "login"]),
        _ => Ok(()),
    }
}

fn refuse_if(program: &str, sub: Option<&str>, refused: &[&str]) -> Result<(), String> {
    match sub {
        Some(s) if refused.contains(&s) => Err(format!(
            "`{program} {s}` refused inside a Pitroom worker: workers never publish or log in; the primary agent does that"
        )),
        _ => Ok(()),
    }
}

/// The subcommand: the first argument that is not an option (options with values before the
/// subcommand, such as `cargo +nightly` or `npm --prefix dir`, are skipped conservatively).
fn first_word(args: &[String]) -> Option<&str> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            return args.get(i + 1).map(String::as_str);
        }
        if a.starts_with('+') || a.starts_with('-') {
            // `--opt value` forms we know take a value.
            let takes_value = matches!(
                a,
                "--prefix"
                    | "-C"
                    | "--cwd"
                    | "--dir"
                    | "--manifest-path"
                    | "--config"
                    | "-Z"
                    | "--registry"
                    | "--userconfig"
                    | "--workspace"
                    | "-w"
                    | "--filter"
                    | "-F"
            );
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        return Some(a);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, own: Option<&str>) -> Result<(), String> {
        let mut words = line.split_whitespace().map(str::to_string);
        let program = words.next().unwrap();
        let args: Vec<String> = words.collect();
        decide(&program, &args, own)
    }

    #[test]
    fn privilege_publishing_and_other_agents_are_refused() {
        let refused = [
            "sudo rm -rf /",
            "sudo -n true",
            "su -c id",
            "doas sh",
            "pkexec id",
            "gh pr create --fill",
            "gh repo list",
            "npm publish",
            "npm --prefix pkg publish",
            "npm unpublish x@1",
            "pnpm publish --no-git-checks",
            "yarn npm publish",
            "npm login",
            "cargo publish",
            "cargo +nightly publish --dry-run",
            "cargo --manifest-path a/Cargo.toml publish",
            "cargo yank --version 1.0.0",
            "twine upload dist/*",
            "gem push x.gem",
            "poetry publish --build",
            "uv publish",
            "docker push ghcr.io/me/x",
            "podman login quay.io",
            "codex exec hi",
            "claude -p hi",
            "opencode run hi",
            "gemini -p hi",
            "qwen -p hi",
            "kilo run x",
            "cursor-agent -p x",
            "agent -p x",
            "agy -p x",
        ];
        for line in refused {
            assert!(check(line, None).is_err(), "{line} passed");
        }
        assert!(check("opencode run hi", Some("codex")).is_err());
    }

    #[test]
    fn everyday_commands_pass_through() {
        let allowed = [
            "npm test",
            "npm run build",
            "npm install",
            "npm --version",
            "pnpm install --frozen-lockfile",
            "yarn",
            "cargo test --workspace",
            "cargo +nightly fmt",
            "cargo build --release",
            "cargo publishing-notes",
            "twine check dist/*",
            "gem list",
            "poetry install",
            "uv run pytest",
            "uv pip install x",
            "docker build .",
            "docker run --rm x",
            "opencode run again",
        ];
        for line in allowed {
            assert!(
                check(line, Some("opencode")).is_ok(),
                "{line}: {:?}",
                check(line, Some("opencode"))
            );
        }
    }

    #[test]
    fn refusals_are_one_line_that_says_why() {
        let why = check("cargo publish", None).unwrap_err();
        assert!(!why.contains('\n'));
        assert!(
            why.contains("cargo publish") && why.contains("primary agent"),
            "{why}"
        );
    }
}
