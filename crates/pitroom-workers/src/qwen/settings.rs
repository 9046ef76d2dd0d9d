//! Settings files for CLIs that read their configuration only from files (Qwen Code, Gemini
//! CLI), and the launcher that writes them.
//!
//! Adapters never touch the disk, and the engine only creates directories and links. A CLI
//! whose safety settings live in a file therefore starts through `/bin/sh`, which writes the
//! files from environment variables (not argv, which any local user can read in `/proc`) with
//! a private umask and then `exec`s the CLI: same process, same process group, same stdin.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The shell that writes the files and execs the CLI.
const SHELL: &str = "/bin/sh";

/// `$0` is a label; then pairs of (file, variable name) up to `--`, then the CLI and its args.
/// The variables are unset before the exec, so the CLI never sees its own config twice.
/// The umask is private while writing (settings may hold keys) and restored for the CLI, whose
/// new files must get the user's usual modes. Each write goes through its own `mktemp` file:
/// runs starting together write the same shared file, and inside their PID namespaces every
/// launcher has the same `$$`.
const LAUNCHER: &str = r#"saved_umask=$(umask)
umask 077
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  file=$1; var=$2; shift 2
  mkdir -p "$(dirname "$file")" || exit 70
  tmp=$(mktemp "$file.tmp.XXXXXX") || exit 70
  eval "printf '%s' \"\$$var\"" > "$tmp" && mv -f "$tmp" "$file" || exit 70
  unset "$var"
done
shift
umask "$saved_umask"
exec "$@""#;

/// One file to write before the CLI starts.
#[derive(Debug, Clone)]
pub(crate) struct SettingsFile {
    pub path: PathBuf,
    /// The variable that carries the content to the launcher (`PITROOM_…`).
    pub var: &'static str,
    pub content: String,
}

/// The program, args and extra environment that write `files` and then run `program args`.
pub(crate) fn launch_with_files(
    program: &Path,
    args: Vec<OsString>,
    files: Vec<SettingsFile>,
) -> (PathBuf, Vec<OsString>, Vec<(OsString, OsString)>) {
    let mut sh_args: Vec<OsString> = vec!["-c".into(), LAUNCHER.into(), "pitroom-launch".into()];
    let mut env = Vec::new();
    for file in files {
        sh_args.push(file.path.into_os_string());
        sh_args.push(file.var.into());
        env.push((OsString::from(file.var), OsString::from(file.content)));
    }
    sh_args.push("--".into());
    sh_args.push(program.as_os_str().to_owned());
    sh_args.extend(args);
    (PathBuf::from(SHELL), sh_args, env)
}

/// The CLI and its arguments inside a launcher command line (everything after `--`).
#[cfg(test)]
pub(crate) fn cli_args(args: &[OsString]) -> &[OsString] {
    match args.iter().position(|a| a == "--") {
        Some(i) => &args[i + 1..],
        None => args,
    }
}

/// Reads a JSON settings file; a missing or unparsable one counts as empty (the CLI would
/// refuse a broken file, and Pitroom must not pass it on).
pub(crate) fn read_json_object(path: &Path) -> Map<String, Value> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default()
}

/// Deep merge: objects merge key by key, anything else is replaced.
pub(crate) fn merge(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (k, v) in overlay {
                match base.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        base.insert(k, v);
                    }
                }
            }
        }
        (base, overlay) => *base = overlay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn launcher_writes_each_file_privately_then_runs_the_cli_with_its_args() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b/settings.json");
        let (program, args, env) = launch_with_files(
            Path::new("/bin/sh"),
            vec![
                "-c".into(),
                "cat \"$1\"; echo \" [$2] [${PITROOM_TEST_SETTINGS-unset}] [$(umask)]\"".into(),
                "x".into(),
                file.clone().into(),
                "two words".into(),
            ],
            vec![SettingsFile {
                path: file.clone(),
                var: "PITROOM_TEST_SETTINGS",
                content: "{\"k\": \"it's $HOME \\\\ `x`\"}".into(),
            }],
        );
        // Started under umask 022, as a user's shell would.
        let out = Command::new("/bin/sh")
            .args(["-c", "umask 022; exec \"$@\"", "sh"])
            .arg(program)
            .args(args)
            .envs(env)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "{\"k\": \"it's $HOME \\\\ `x`\"} [two words] [unset] [0022]\n",
            "the CLI runs with the caller's umask, not the launcher's private one"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "settings may hold keys: {mode:o}");
    }

    #[test]
    fn launcher_stops_when_a_file_cannot_be_written() {
        let (program, args, env) = launch_with_files(
            Path::new("/bin/echo"),
            vec!["ran".into()],
            vec![SettingsFile {
                path: "/proc/nope/settings.json".into(),
                var: "PITROOM_TEST_SETTINGS",
                content: "{}".into(),
            }],
        );
        let out = Command::new(program).args(args).envs(env).output().unwrap();
        assert_eq!(out.status.code(), Some(70));
        assert!(out.stdout.is_empty());
    }

    #[test]
    fn cli_args_are_the_ones_after_the_separator() {
        let (_, args, _) = launch_with_files(
            Path::new("/x/qwen"),
            vec!["-o".into(), "stream-json".into()],
            vec![],
        );
        assert_eq!(
            cli_args(&args),
            &[OsString::from("/x/qwen"), "-o".into(), "stream-json".into()]
        );
    }
}
