//! The pinned real worker CLIs for end-to-end tests, installed from npm into a cache directory.
//!
//! `.ci/run` installs the same packages at the same versions up front; the functions here install
//! on first use (under a lock, so parallel tests install once) so a plain `cargo test` works too.
//! What comes from Debian rather than npm (ripgrep, Chromium) is installed the same way where the
//! tests run as root ([`debian_package`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The OpenCode version the adapter was measured against.
pub const OPENCODE_VERSION: &str = "1.18.33";

/// One pinned npm package and the executable it provides.
#[derive(Debug, Clone, Copy)]
pub struct NpmCli {
    pub package: &'static str,
    pub version: &'static str,
    /// The name under `node_modules/.bin`.
    pub bin: &'static str,
    /// The variable that overrides the installed binary with another path.
    pub override_var: &'static str,
}

/// OpenCode, pinned.
pub const OPENCODE: NpmCli = NpmCli {
    package: "opencode-ai",
    version: OPENCODE_VERSION,
    bin: "opencode",
    override_var: "PITROOM_E2E_OPENCODE",
};

/// Where the pinned CLIs are installed: `$PITROOM_E2E_CACHE`, else `~/.cache/pitroom-e2e`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("PITROOM_E2E_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                .join(".cache/pitroom-e2e")
        })
}

/// The install prefix of a pinned package: `<cache>/<bin>-<version>`.
pub fn prefix(cli: &NpmCli) -> PathBuf {
    cache_dir().join(format!("{}-{}", cli.bin, cli.version))
}

/// The real binary of `cli`: its override variable, else the pinned version in the cache,
/// installed with npm on first use.
pub fn install(cli: &NpmCli) -> Result<PathBuf, String> {
    install_with(cli, &[])
}

/// Like [`install`], with extra environment for npm (e.g. a `PATH` that puts a newer Node
/// first, for packages whose `engines` field needs it).
pub fn install_with(cli: &NpmCli, npm_env: &[(&str, String)]) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(cli.override_var) {
        return Ok(PathBuf::from(p));
    }
    let prefix = prefix(cli);
    let bin = prefix.join("node_modules/.bin").join(cli.bin);
    npm_install(&prefix, cli.package, cli.version, &bin, npm_env)?;
    Ok(bin)
}

/// Installs `package@version` with npm into `prefix` unless `marker` is there, under a lock in
/// the prefix, so parallel tests install once; an install that leaves no `marker` failed.
fn npm_install(
    prefix: &Path,
    package: &str,
    version: &str,
    marker: &Path,
    npm_env: &[(&str, String)],
) -> Result<(), String> {
    if marker.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    let _lock = lock(&prefix.join(".install.lock")).map_err(|e| e.to_string())?;
    if !marker.exists() {
        let mut npm = Command::new("npm");
        npm.args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(prefix)
            .arg(format!("{package}@{version}"));
        for (k, v) in npm_env {
            npm.env(k, v);
        }
        let status = npm.status().map_err(|e| format!("npm: {e}"))?;
        if !status.success() || !marker.exists() {
            return Err(format!(
                "installing {package}@{version} into {} failed",
                prefix.display()
            ));
        }
    }
    Ok(())
}

/// `path`, created and locked (an exclusive `flock`, released when the file is dropped).
fn lock(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::File::create(path)?;
    // SAFETY: flock on a descriptor we own; released when `file` is dropped.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) };
    Ok(file)
}

/// The real `opencode` binary: `$PITROOM_E2E_OPENCODE`, else the pinned version. Its grep and
/// glob tools need ripgrep on `PATH` (offline, it would try to download one).
pub fn opencode() -> Result<PathBuf, String> {
    debian_package(Path::new(RIPGREP), "ripgrep")?;
    install(&OPENCODE)
}

/// Where Debian's ripgrep puts `rg`.
pub const RIPGREP: &str = "/usr/bin/rg";

/// Where Debian's Chromium is, for the dashboard's browser tests.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Makes sure `binary` is there, installing Debian's `package` on first use when it is not
/// (as root, with `apt-get`, under a lock in the cache dir so parallel tests install once).
/// Elsewhere the error says what to install: the tests do not guess at other package managers.
pub fn debian_package(binary: &Path, package: &str) -> Result<(), String> {
    if binary.is_file() {
        return Ok(());
    }
    let how = format!("install it with `apt-get install -y {package}` (as root)");
    // SAFETY: geteuid has no failure mode.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || !Path::new("/usr/bin/apt-get").is_file() {
        return Err(format!("the tests need {}: {how}", binary.display()));
    }
    let cache = cache_dir();
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let _lock = lock(&cache.join(".apt.lock")).map_err(|e| e.to_string())?;
    if binary.is_file() {
        return Ok(());
    }
    for args in [
        &["update", "-qq"][..],
        &["install", "-y", "-qq", package][..],
    ] {
        let out = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .map_err(|e| format!("apt-get: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "apt-get {} failed ({}): {}; {how}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    if binary.is_file() {
        Ok(())
    } else {
        Err(format!(
            "{package} installed no {}; {how}",
            binary.display()
        ))
    }
}

/// Node 22 from the npm registry (`node@22`): Qwen Code's `engines` needs it, and npm under an
/// older Node silently installs an older release.
pub const NODE22: NpmCli = NpmCli {
    package: "node",
    version: "22",
    bin: "node",
    override_var: "PITROOM_E2E_NODE22",
};

/// The directory holding Node 22's `node`, to put first on `PATH` for npm and for the CLI.
pub fn node22_bin_dir() -> Result<PathBuf, String> {
    let node = install(&NODE22)?;
    node.parent()
        .map(std::path::Path::to_path_buf)
        .ok_or_else(|| format!("{} has no parent directory", node.display()))
}

/// `PATH` with Node 22 first.
pub fn path_with_node22() -> Result<String, String> {
    let dir = node22_bin_dir()?;
    let rest = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    Ok(format!("{}:{rest}", dir.display()))
}

/// Installs `cli` with Node 22 first on npm's `PATH`, for a CLI whose `engines` needs it.
fn install_under_node22(cli: &NpmCli) -> Result<PathBuf, String> {
    install_with(cli, &[("PATH", path_with_node22()?)])
}

/// Qwen Code, pinned (the version `docs/workers/qwen.md` was measured with).
pub const QWEN: NpmCli = NpmCli {
    package: "@qwen-code/qwen-code",
    version: "0.24.4",
    bin: "qwen",
    override_var: "PITROOM_E2E_QWEN",
};

/// The real `qwen` binary: `$PITROOM_E2E_QWEN`, else the pinned version, installed under Node 22.
pub fn qwen() -> Result<PathBuf, String> {
    install_under_node22(&QWEN)
}

/// Codex CLI, pinned (the version `docs/workers/codex.md` was measured with).
pub const CODEX: NpmCli = NpmCli {
    package: "@openai/codex",
    version: "0.171.0",
    bin: "codex",
    override_var: "PITROOM_E2E_CODEX",
};

/// The real `codex` binary (its Node launcher): `$PITROOM_E2E_CODEX`, else the pinned version.
pub fn codex() -> Result<PathBuf, String> {
    install(&CODEX)
}

/// Claude Code, pinned. Its `engines` needs Node 22: under an older Node, npm silently picks
/// an older release, so it is installed with Node 22 first on `PATH`.
pub const CLAUDE: NpmCli = NpmCli {
    package: "@anthropic-ai/claude-code",
    version: "2.1.332",
    bin: "claude",
    override_var: "PITROOM_E2E_CLAUDE",
};

/// The real `claude` binary (a native executable): `$PITROOM_E2E_CLAUDE`, else the pinned
/// version, installed under Node 22.
pub fn claude() -> Result<PathBuf, String> {
    install_under_node22(&CLAUDE)
}

/// Kilo Code, pinned: 7.8.1 does not install here (its linux-x64 binary package is missing).
pub const KILO: NpmCli = NpmCli {
    package: "@kilocode/cli",
    version: "7.7.7",
    bin: "kilo",
    override_var: "PITROOM_E2E_KILO",
};

/// The real `kilo` binary: `$PITROOM_E2E_KILO`, else the pinned version.
pub fn kilo() -> Result<PathBuf, String> {
    // An OpenCode fork: the same ripgrep-backed tools.
    debian_package(Path::new(RIPGREP), "ripgrep")?;
    install(&KILO)
}

/// Gemini CLI, pinned (Node 20 is enough).
pub const GEMINI: NpmCli = NpmCli {
    package: "@google/gemini-cli",
    version: "0.61.0",
    bin: "gemini",
    override_var: "PITROOM_E2E_GEMINI",
};

/// The real `gemini` binary: `$PITROOM_E2E_GEMINI`, else the pinned version.
pub fn gemini() -> Result<PathBuf, String> {
    install(&GEMINI)
}

/// The official MCP Python SDK the MCP tests drive `pitroom mcp` with, pinned.
pub const PYTHON_MCP_VERSION: &str = "1.30.0";

/// A Python with the pinned `mcp` package: a virtual environment in the cache dir, made with
/// the machine's `python3` and filled from PyPI on first use (under a lock, so parallel tests
/// install once; a marker file written last, so a half-made one is made again). `.ci/run`
/// makes the same one up front.
pub fn python_mcp() -> Result<PathBuf, String> {
    let venv = cache_dir().join(format!("python-mcp-{PYTHON_MCP_VERSION}"));
    let python = venv.join("bin/python");
    let marker = venv.join(".installed");
    if marker.exists() {
        return Ok(python);
    }
    std::fs::create_dir_all(cache_dir()).map_err(|e| format!("{}: {e}", cache_dir().display()))?;
    let _lock =
        lock(&cache_dir().join(".python-mcp.lock")).map_err(|e| format!("install lock: {e}"))?;
    if marker.exists() {
        return Ok(python);
    }
    let run = |cmd: &mut Command, what: &str| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{what} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    if venv.exists() {
        std::fs::remove_dir_all(&venv).map_err(|e| format!("{}: {e}", venv.display()))?;
    }
    run(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
    )?;
    run(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("mcp=={PYTHON_MCP_VERSION}")),
        "pip install mcp",
    )?;
    std::fs::write(&marker, PYTHON_MCP_VERSION)
        .map_err(|e| format!("{}: {e}", marker.display()))?;
    Ok(python)
}

/// An npm library (not a CLI) the MCP tests load with `NODE_PATH`, pinned.
#[derive(Debug, Clone, Copy)]
pub struct NpmLibrary {
    pub package: &'static str,
    pub version: &'static str,
    /// The cache directory's name before `-<version>`.
    pub dir: &'static str,
}

/// The official MCP TypeScript SDK, v1 line (`Client` from `@modelcontextprotocol/sdk`).
pub const TS_MCP_SDK: NpmLibrary = NpmLibrary {
    package: "@modelcontextprotocol/sdk",
    version: "1.32.2",
    dir: "mcp-sdk",
};

/// The official MCP TypeScript client, v2 line: it can speak the 2026-07-28 revision
/// (`server/discover`, per-request `_meta`, no `initialize`).
pub const TS_MCP_CLIENT_V2: NpmLibrary = NpmLibrary {
    package: "@modelcontextprotocol/client",
    version: "2.4.0",
    dir: "mcp-client",
};

/// A node_modules prefix holding the pinned `@modelcontextprotocol/sdk`: scripts run with
/// `NODE_PATH=<prefix>/node_modules`. `.ci/run` installs the same one up front.
pub fn ts_mcp_sdk() -> Result<PathBuf, String> {
    install_library(&TS_MCP_SDK)
}

/// playwright-core, which drives Chromium in the dashboard's browser tests.
pub const PLAYWRIGHT_CORE: NpmLibrary = NpmLibrary {
    package: "playwright-core",
    version: "1.65.1",
    dir: "playwright-core",
};

/// A node_modules prefix holding the pinned `@modelcontextprotocol/client` v2. `.ci/run`
/// installs the same one up front.
pub fn ts_mcp_client_v2() -> Result<PathBuf, String> {
    install_library(&TS_MCP_CLIENT_V2)
}

/// The prefix `<cache>/<dir>-<version>` holding `lib`, installed from npm on first use (under
/// a lock, so parallel tests install once; its `package.json` is the marker).
pub fn install_library(lib: &NpmLibrary) -> Result<PathBuf, String> {
    let prefix = cache_dir().join(format!("{}-{}", lib.dir, lib.version));
    let marker = prefix
        .join("node_modules")
        .join(lib.package)
        .join("package.json");
    npm_install(&prefix, lib.package, lib.version, &marker, &[])?;
    Ok(prefix)
}
