//! The macOS counterpart of layer 3, as far as it goes today: the **Seatbelt profile** a
//! worker would run under (`/usr/bin/sandbox-exec -p <profile> -D KEY=PATH … -- <worker>`),
//! rendered from the same platform-neutral [`SandboxSpec`] the Linux keeper turns into a
//! Landlock ruleset and bind mounts.
//!
//! Only the rendering lives here, and it is pure: no file is touched and nothing is spawned,
//! so it compiles and is tested on every OS. Nothing in Pitroom runs `sandbox-exec` yet; the
//! profile has been generated and checked on Linux only (docs/safety.md, "macOS: the Seatbelt
//! profile").
//!
//! The profile says what the Linux floor says, rule by rule:
//!
//! - `(allow default)`: Landlock handles only write rights, so reads, process creation, the
//!   network (workers call their model APIs) and everything else stay open on Linux; they stay
//!   open here too.
//! - `(deny file-write*)`, then `(allow file-write* (subpath …))` for each writable dir, less
//!   the git dirs inside it (`require-not`), and `(allow file-write-data (literal …))` for each
//!   writable file (written and truncated, never created or removed, as on Linux).
//! - `(deny file-write*)` on each git dir inside a writable tree — what the read-only bind
//!   mount does on Linux.
//! - `(deny file-read* file-write*)` on each hidden file and masked path — what binding an
//!   empty read-only file or dir over it does on Linux — and `(deny network-outbound)` to a
//!   masked path as a unix socket, so a session socket cannot be connected to.
//! - `(deny file-read-data)` beneath Pitroom's state dir but for what the run keeps — what the
//!   empty tmpfs over it, with the kept parts bound back, does on Linux.
//!
//! Seatbelt decides by the **last** rule that matches an operation, so the exceptions follow
//! the rules they narrow. The git dirs are also excluded from the write allow itself, so their
//! protection does not depend on that ordering.
//!
//! Every path is passed as a parameter (`(param "WRITABLE_DIR_0")`, given with
//! `-D WRITABLE_DIR_0=<path>`), the way Codex passes its writable roots: the profile text is
//! made of constants only, so no path — whatever quotes, backslashes, parentheses or newlines
//! it holds — is ever parsed as SBPL.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::landlock::{normalize_lexically, GitDirState, SandboxReport, SandboxSpec};

/// The only `sandbox-exec` a worker is started with: a binary on `PATH` could be anyone's.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Top-level dirs macOS reaches through a symlink into `/private`. Seatbelt matches the path
/// a lookup resolves to, so a rule on `/tmp/x` alone would never match.
const PRIVATE_LINKS: [&str; 3] = ["/tmp", "/var", "/etc"];

/// A rendered profile and the parameters it refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatbeltProfile {
    /// The SBPL text, for `sandbox-exec -p`. Holds no path.
    pub text: String,
    /// Each `(param "KEY")` of [`SeatbeltProfile::text`] and its path, for `-D KEY=PATH`.
    pub params: Vec<(String, PathBuf)>,
    /// The run must not start unless this profile is applied (a read run in place): the
    /// caller fails closed when `sandbox-exec` is missing or refuses the profile.
    pub strict: bool,
}

impl SeatbeltProfile {
    /// The arguments of [`SANDBOX_EXEC`] before `--` and the worker's command line.
    pub fn args(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from("-p"), OsString::from(&self.text)];
        for (key, path) in &self.params {
            let mut definition = OsString::from(format!("{key}="));
            definition.push(path.as_os_str());
            args.push(OsString::from("-D"));
            args.push(definition);
        }
        args
    }

    /// The path given for parameter `key`.
    pub fn param(&self, key: &str) -> Option<&Path> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, p)| p.as_path())
    }

    /// The keys whose path is `path`.
    pub fn keys_for(&self, path: &Path) -> Vec<&str> {
        self.params
            .iter()
            .filter(|(_, p)| p == path)
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// The profile as a self-describing `.sb` file: the `-D` parameters as comments, then the
    /// text. What the snapshot fixtures hold.
    pub fn annotated(&self) -> String {
        let mut out = String::from(";; sandbox-exec parameters:\n");
        for (key, path) in &self.params {
            let _ = writeln!(out, ";;   -D {key}={}", path.display());
        }
        out.push('\n');
        out.push_str(&self.text);
        out
    }
}

/// Readies a worker confined by `spec` to start under its Seatbelt profile, through
/// `sandbox_exec` ([`SANDBOX_EXEC`] but in tests): returns the command line the worker's own
/// follows (`sandbox_exec -p PROFILE -D KEY=PATH … --`) and makes `report` say what the
/// profile enforces. Without `sandbox_exec`, returns nothing and says why in `report`: the
/// worker then runs with layers 1–2 only, and a strict run fails on the report.
pub fn confine_with(
    spec: &SandboxSpec,
    report: &mut SandboxReport,
    sandbox_exec: &Path,
) -> Vec<OsString> {
    if !sandbox_exec.is_file() {
        let missing = format!("no {}: no Seatbelt profile applied", sandbox_exec.display());
        report.reason = Some(match report.reason.take() {
            Some(earlier) => format!("{earlier}; {missing}"),
            None => missing,
        });
        return Vec::new();
    }
    let profile = render_profile(spec);
    report.seatbelt = true;
    report.writable = spec.writable_dirs.clone();
    report.hidden = count(&spec.hidden_files);
    report.masked = count(&spec.masked);
    report.state_hidden = spec.state_dir.is_some();
    if !spec.read_only_binds.is_empty() {
        report.git_dir = GitDirState::Seatbelt;
    }
    let mut command = vec![sandbox_exec.as_os_str().to_owned()];
    command.extend(profile.args());
    command.push(OsString::from("--"));
    command
}

fn count(paths: &[PathBuf]) -> u32 {
    u32::try_from(paths.len()).unwrap_or(u32::MAX)
}

/// One path of the spec, as the parameters that name it: the path, and its `/private` form
/// when it lies beneath `/tmp`, `/var` or `/etc`.
struct Named {
    path: PathBuf,
    keys: Vec<String>,
}

struct Params {
    list: Vec<(String, PathBuf)>,
}

impl Params {
    /// Names each of `paths` under `prefix` (`PREFIX_0`, `PREFIX_1`, … over every form).
    fn name(&mut self, prefix: &str, paths: &[PathBuf]) -> Vec<Named> {
        let mut next = 0;
        let mut named: Vec<Named> = Vec::new();
        for path in paths {
            let path = normalize_lexically(path);
            if named.iter().any(|n| n.path == path) {
                continue;
            }
            let mut keys = Vec::new();
            for form in forms(&path) {
                let key = format!("{prefix}_{next}");
                next += 1;
                self.list.push((key.clone(), form));
                keys.push(key);
            }
            named.push(Named { path, keys });
        }
        named
    }
}

/// `path`, and `/private<path>` when it starts with `/tmp`, `/var` or `/etc`.
fn forms(path: &Path) -> Vec<PathBuf> {
    let mut forms = vec![path.to_path_buf()];
    if PRIVATE_LINKS.iter().any(|link| path.starts_with(link)) {
        let mut private = PathBuf::from("/private");
        private.push(path.strip_prefix("/").unwrap_or(path));
        forms.push(private);
    }
    forms
}

fn param(key: &str) -> String {
    format!("(param \"{key}\")")
}

/// A rule with one filter a line: `(head\n    filter\n    filter)`.
fn rule(out: &mut String, comment: &str, head: &str, filters: &[String]) {
    if filters.is_empty() {
        return;
    }
    out.push('\n');
    for line in comment.lines() {
        let _ = writeln!(out, "; {line}");
    }
    let _ = write!(out, "({head}");
    for filter in filters {
        let _ = write!(out, "\n    {filter}");
    }
    out.push_str(")\n");
}

/// The Seatbelt profile for a worker confined by `spec`.
pub fn render_profile(spec: &SandboxSpec) -> SeatbeltProfile {
    let mut params = Params { list: Vec::new() };
    let dirs = params.name("WRITABLE_DIR", &spec.writable_dirs);
    let files = params.name("WRITABLE_FILE", &spec.writable_files);
    let read_only = params.name("READ_ONLY", &spec.read_only_binds);
    let hidden = params.name("HIDDEN", &spec.hidden_files);
    let masked = params.name("MASKED", &spec.masked);

    let mut text = String::from(
        "(version 1)\n\
         ; A Pitroom worker, rendered from its SandboxSpec by pitroom_proc::seatbelt.\n\
         ; Every path is a parameter (sandbox-exec -D KEY=PATH); none is spelled here.\n\
         ; The last rule that matches an operation decides it.\n",
    );

    text.push_str(
        "\n; Open unless a rule below says otherwise, as on Linux where Landlock handles writes\n\
         ; only: reads, process-fork and process-exec (children inherit this profile), the\n\
         ; network (workers call their model APIs), signals, mach lookups.\n\
         (allow default)\n",
    );

    text.push_str(
        "\n; No write anywhere, but for the exceptions that follow.\n(deny file-write*)\n",
    );

    let mut allowed = Vec::new();
    for dir in &dirs {
        let inside: Vec<&Named> = read_only
            .iter()
            .filter(|g| {
                // In any form: a `/tmp/x` tree holds a `/private/tmp/x/.git`.
                forms(&g.path)
                    .iter()
                    .any(|g| forms(&dir.path).iter().any(|d| g.starts_with(d)))
            })
            .collect();
        for key in &dir.keys {
            if inside.is_empty() {
                allowed.push(format!("(subpath {})", param(key)));
                continue;
            }
            let mut filter = format!("(require-all\n        (subpath {})", param(key));
            for git in &inside {
                for g in &git.keys {
                    let _ = write!(
                        filter,
                        "\n        (require-not (literal {p}))\n        (require-not (subpath {p}))",
                        p = param(g)
                    );
                }
            }
            filter.push(')');
            allowed.push(filter);
        }
    }
    rule(
        &mut text,
        "Beneath each writable dir (the scratch dir, the CLI's state dirs, a write run's\n\
         tree), less the git dirs inside it.",
        "allow file-write*",
        &allowed,
    );

    let single: Vec<String> = files
        .iter()
        .flat_map(|f| f.keys.iter().map(|k| format!("(literal {})", param(k))))
        .collect();
    rule(
        &mut text,
        "Single files, written and truncated but never created or removed (/dev/null, a\n\
         credentials file a private state dir links to).",
        "allow file-write-data",
        &single,
    );
    let devices = [
        "(literal \"/dev/null\")",
        "(literal \"/dev/tty\")",
        "(literal \"/dev/stdout\")",
        "(literal \"/dev/stderr\")",
        "(regex #\"^/dev/fd/[0-9]+$\")",
        "(regex #\"^/dev/ttys[0-9]+$\")",
    ]
    .map(String::from)
    .to_vec();
    rule(
        &mut text,
        "The terminal and the standard streams, by name.",
        "allow file-write-data",
        &devices,
    );

    rule(
        &mut text,
        "Git dirs (or a linked worktree's .git file) inside a writable tree stay read-only.",
        "deny file-write*",
        &path_and_beneath(&read_only),
    );

    let secrets: Vec<String> = hidden
        .iter()
        .flat_map(|h| h.keys.iter().map(|k| format!("(literal {})", param(k))))
        .collect();
    rule(
        &mut text,
        "Secret-looking files of a project read in place: neither read nor written.",
        "deny file-read* file-write*",
        &secrets,
    );

    rule(
        &mut text,
        "Session sockets and credential dirs: neither read nor written,",
        "deny file-read* file-write*",
        &path_and_beneath(&masked),
    );
    let sockets: Vec<String> = masked
        .iter()
        .flat_map(|m| {
            m.keys
                .iter()
                .map(|k| format!("(remote unix-socket (subpath {}))", param(k)))
        })
        .collect();
    rule(
        &mut text,
        "nor connected to as unix sockets.",
        "deny network-outbound",
        &sockets,
    );

    let state = params.name("STATE_DIR", spec.state_dir.as_slice());
    let kept = params.name("STATE_KEPT", &spec.state_kept);
    rule(
        &mut text,
        "Pitroom's state dir, but for the run's own parts: other runs' patches, copies and\n\
         transcripts are neither listed nor read. Metadata stays readable: a lookup of a kept\n\
         path stats the dirs above it.",
        "deny file-read-data",
        &all_beneath_but(&state, &kept),
    );

    SeatbeltProfile {
        text,
        params: params.list,
        strict: spec.strict,
    }
}

/// `(subpath P)` less `(subpath K)` for every `K` of `kept`, for every form of every path.
fn all_beneath_but(named: &[Named], kept: &[Named]) -> Vec<String> {
    named
        .iter()
        .flat_map(|n| &n.keys)
        .map(|key| {
            let mut filter = format!("(require-all\n        (subpath {})", param(key));
            for k in kept.iter().flat_map(|k| &k.keys) {
                let _ = write!(filter, "\n        (require-not (subpath {}))", param(k));
            }
            filter.push(')');
            filter
        })
        .collect()
}

/// `(literal P)` and `(subpath P)` for every form of every path: the path itself, whether a
/// file, a socket or a dir, and all beneath it.
fn path_and_beneath(named: &[Named]) -> Vec<String> {
    named
        .iter()
        .flat_map(|n| {
            n.keys.iter().flat_map(|k| {
                [
                    format!("(literal {})", param(k)),
                    format!("(subpath {})", param(k)),
                ]
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seatbelt");

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    const SCRATCH: &str = "/Users/ana/Library/Caches/pitroom/runs/7/scratch";
    const STATE: &str = "/Users/ana/Library/Application Support/pitroom/state/claude/read-3f2a";
    const AGENT: &str = "/tmp/ssh-k3J9/agent.4242";

    /// A read run of /Users/ana/code/shop in place, as `for_worker(ReadOnly, …)`,
    /// `reading_in_place` and `masking` build it.
    fn read_run() -> SandboxSpec {
        SandboxSpec {
            writable_dirs: paths(&[SCRATCH, STATE]),
            writable_files: paths(&["/dev/null"]),
            hidden_files: paths(&[
                "/Users/ana/code/shop/.env",
                "/Users/ana/code/shop/config/server.key",
                "/Users/ana/code/shop/node_modules/pay/.npmrc",
            ]),
            blank_file: Some(PathBuf::from(
                "/Users/ana/Library/Caches/pitroom/runs/7/blank",
            )),
            masked: paths(&[AGENT, "/Users/ana/.ssh", "/Users/ana/.aws"]),
            blank_dir: Some(PathBuf::from(
                "/Users/ana/Library/Caches/pitroom/runs/7/blank.d",
            )),
            strict: true,
            report_file: PathBuf::from("/Users/ana/Library/Caches/pitroom/runs/7/sandbox.json"),
            state_dir: Some(PathBuf::from("/Users/ana/Library/Caches/pitroom")),
            state_kept: paths(&[
                "/Users/ana/Library/Caches/pitroom/bin",
                "/Users/ana/Library/Caches/pitroom/runs/7",
            ]),
            ..SandboxSpec::default()
        }
    }

    /// An isolated run: a writable copy of the project in a temp dir, its `.git` read-only.
    fn isolate_run() -> SandboxSpec {
        SandboxSpec {
            writable_dirs: paths(&[
                "/var/folders/zz/xy_1/T/pitroom-run-8/copy",
                "/var/folders/zz/xy_1/T/pitroom-run-8/scratch",
            ]),
            writable_files: paths(&["/dev/null"]),
            read_only_binds: paths(&["/var/folders/zz/xy_1/T/pitroom-run-8/copy/.git"]),
            masked: paths(&[AGENT]),
            ..SandboxSpec::default()
        }
    }

    /// A write run in the user's tree, with a linked credentials file.
    fn write_run() -> SandboxSpec {
        SandboxSpec {
            writable_dirs: paths(&["/Users/ana/code/shop", SCRATCH, STATE]),
            writable_files: paths(&["/dev/null", "/Users/ana/.claude/.credentials.json"]),
            read_only_binds: paths(&["/Users/ana/code/shop/.git"]),
            masked: paths(&[AGENT]),
            ..SandboxSpec::default()
        }
    }

    /// Compares `profile` with the fixture `name`, or rewrites the fixture when
    /// `PITROOM_BLESS=1`.
    fn assert_fixture(name: &str, profile: &SeatbeltProfile) {
        let path = Path::new(FIXTURES).join(name);
        let actual = profile.annotated();
        if std::env::var_os(pitroom_env::PITROOM_BLESS).is_some_and(|v| v == "1") {
            std::fs::create_dir_all(FIXTURES).unwrap();
            std::fs::write(&path, &actual).unwrap();
            return;
        }
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (PITROOM_BLESS=1 writes it)", path.display()));
        if let Some(report) = difference(&path, &expected, &actual) {
            panic!("{report}");
        }
    }

    /// Each line where `actual` differs from `expected` as `- old` / `+ new`, then the whole
    /// of `actual`; `None` when they are equal.
    fn difference(path: &Path, expected: &str, actual: &str) -> Option<String> {
        if expected == actual {
            return None;
        }
        let mut report = format!(
            "the rendered profile differs from {} (PITROOM_BLESS=1 rewrites it):\n",
            path.display()
        );
        let (old, new): (Vec<&str>, Vec<&str>) =
            (expected.lines().collect(), actual.lines().collect());
        for i in 0..old.len().max(new.len()) {
            let (o, n) = (old.get(i), new.get(i));
            if o != n {
                let _ = writeln!(report, "  line {}:", i + 1);
                let _ = writeln!(report, "  - {}", o.copied().unwrap_or("<none>"));
                let _ = writeln!(report, "  + {}", n.copied().unwrap_or("<none>"));
            }
        }
        if expected.lines().eq(actual.lines()) {
            report.push_str("  (the line endings or the final newline differ)\n");
        }
        let _ = write!(report, "--- rendered ---\n{actual}");
        Some(report)
    }

    #[test]
    fn a_profile_that_drifts_from_its_fixture_is_reported_line_by_line() {
        let path = Path::new(FIXTURES).join("write.sb");
        let expected = std::fs::read_to_string(&path).unwrap();
        let drifted = expected.replace("(deny file-write*)", "(allow file-write*)");
        let report = difference(&path, &expected, &drifted).unwrap();
        assert!(
            report.contains("  - (deny file-write*)\n  + (allow file-write*)\n"),
            "{report}"
        );
        let unterminated = expected.trim_end_matches('\n');
        assert!(difference(&path, &expected, unterminated)
            .unwrap()
            .contains("final newline"));
        assert_eq!(difference(&path, &expected, &expected), None);
    }

    /// A top-level rule: its head (`deny file-read*`) and the parameter keys it names.
    #[derive(Debug)]
    struct Rule {
        head: String,
        keys: Vec<String>,
        text: String,
    }

    /// Splits `text` into its top-level forms, checking along the way that every string and
    /// regex literal is closed and every parenthesis balanced.
    fn parse_rules(text: &str) -> Vec<Rule> {
        let mut rules = Vec::new();
        let mut depth = 0usize;
        let mut start = 0;
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                ';' => {
                    for (_, c) in chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                '"' => {
                    let mut closed = false;
                    while let Some((_, c)) = chars.next() {
                        match c {
                            '\\' => {
                                chars.next();
                            }
                            '"' => {
                                closed = true;
                                break;
                            }
                            _ => {}
                        }
                    }
                    assert!(closed, "unclosed string literal in:\n{text}");
                }
                '(' => {
                    if depth == 0 {
                        start = i;
                    }
                    depth += 1;
                }
                ')' => {
                    assert!(depth > 0, "unbalanced ')' at byte {i} in:\n{text}");
                    depth -= 1;
                    if depth == 0 {
                        let form = &text[start..=i];
                        let head = form[1..]
                            .split(['(', ')', '\n'])
                            .next()
                            .unwrap()
                            .trim()
                            .to_string();
                        let keys = form
                            .split("(param \"")
                            .skip(1)
                            .map(|rest| rest.split('"').next().unwrap().to_string())
                            .collect();
                        rules.push(Rule {
                            head,
                            keys,
                            text: form.to_string(),
                        });
                    }
                }
                _ => {}
            }
        }
        assert_eq!(depth, 0, "unbalanced '(' in:\n{text}");
        rules
    }

    /// Whether some rule whose head starts with `head` names `key` outside any `require-not`.
    fn named_by(rules: &[Rule], head: &str, key: &str) -> bool {
        let quoted = format!("(param \"{key}\")");
        rules.iter().any(|r| {
            r.head.starts_with(head)
                && r.text
                    .lines()
                    .any(|l| l.contains(&quoted) && !l.trim_start().starts_with("(require-not"))
        })
    }

    #[test]
    fn a_read_run_in_place_renders_its_fixture() {
        assert_fixture("read_in_place.sb", &render_profile(&read_run()));
    }

    #[test]
    fn an_isolated_run_renders_its_fixture() {
        assert_fixture("isolate.sb", &render_profile(&isolate_run()));
    }

    #[test]
    fn a_write_run_with_its_git_dir_inside_the_tree_renders_its_fixture() {
        assert_fixture("write.sb", &render_profile(&write_run()));
    }

    #[test]
    fn every_hidden_secret_is_denied_to_read_and_a_read_run_cannot_write_its_tree() {
        // The samples of the secret-file policy, one or more per rule family, as the walk of a
        // tree read in place would list them.
        const SECRETS: &[&str] = pitroom_workers::secret_files::SAMPLE_SECRETS;
        let tree = Path::new("/Users/ana/code/shop");
        let spec = SandboxSpec {
            hidden_files: SECRETS.iter().map(|s| tree.join(s)).collect(),
            ..read_run()
        };
        let profile = render_profile(&spec);
        let rules = parse_rules(&profile.text);
        for secret in &spec.hidden_files {
            let keys = profile.keys_for(secret);
            assert_eq!(keys.len(), 1, "{}", secret.display());
            assert!(
                named_by(&rules, "deny file-read*", keys[0]),
                "{} is not denied to read:\n{}",
                secret.display(),
                profile.text
            );
        }
        for masked in &spec.masked {
            for form in forms(masked) {
                let key = profile.keys_for(&form)[0];
                assert!(named_by(&rules, "deny file-read*", key), "{key}");
                assert!(named_by(&rules, "deny network-outbound", key), "{key}");
            }
        }
        // No rule grants a read, so no rule order can let one win over these denies: only the
        // default allows reads.
        assert!(!rules.iter().any(|r| r.head.starts_with("allow file-read")));
        // Nothing beneath the project is granted any write.
        for (key, path) in &profile.params {
            if path.starts_with(tree) {
                assert!(
                    !named_by(&rules, "allow", key),
                    "{key} = {} is allowed something:\n{}",
                    path.display(),
                    profile.text
                );
            }
        }
        let writable: Vec<&Path> = profile
            .params
            .iter()
            .filter(|(k, _)| named_by(&rules, "allow file-write", k))
            .map(|(_, p)| p.as_path())
            .collect();
        assert_eq!(
            writable,
            [Path::new(SCRATCH), Path::new(STATE), Path::new("/dev/null")]
        );
        assert!(profile.strict);
    }

    #[test]
    fn a_worker_is_started_through_sandbox_exec_with_its_profile_and_the_report_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sandbox_exec = dir.path().join("sandbox-exec");
        std::fs::write(&sandbox_exec, "").expect("stand-in");
        let spec = write_run();
        let mut report = SandboxReport::unknown("Landlock is Linux only");
        let command = confine_with(&spec, &mut report, &sandbox_exec);

        let mut expected = vec![sandbox_exec.clone().into_os_string()];
        expected.extend(render_profile(&spec).args());
        expected.push(OsString::from("--"));
        assert_eq!(command, expected);
        assert!(report.seatbelt);
        assert_eq!(report.git_dir, GitDirState::Seatbelt);
        assert_eq!(report.writable, spec.writable_dirs);
        assert_eq!(report.masked, 1);
    }

    #[test]
    fn without_sandbox_exec_the_worker_gets_no_prefix_and_the_report_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut report = SandboxReport::unknown("Landlock is Linux only");
        let command = confine_with(&read_run(), &mut report, &dir.path().join("absent"));
        assert!(command.is_empty());
        assert!(!report.seatbelt);
        let reason = report.reason.expect("a reason");
        assert!(
            reason.starts_with("Landlock is Linux only; no ")
                && reason.ends_with("no Seatbelt profile applied"),
            "{reason}"
        );
    }

    #[test]
    fn the_state_dir_is_unreadable_to_a_worker_but_for_what_its_run_keeps() {
        let spec = read_run();
        let profile = render_profile(&spec);
        let rules = parse_rules(&profile.text);
        let state = spec.state_dir.clone().expect("state dir");
        let state_key = profile.keys_for(&state)[0].to_string();
        assert!(
            named_by(&rules, "deny file-read-data", &state_key),
            "{}",
            profile.text
        );
        let deny = rules
            .iter()
            .find(|r| r.head.starts_with("deny file-read-data"))
            .expect("the state dir's rule");
        for kept in &spec.state_kept {
            let key = profile.keys_for(kept)[0].to_string();
            assert!(
                deny.text
                    .contains(&format!("(require-not (subpath (param \"{key}\")))")),
                "{} is kept: {}",
                kept.display(),
                deny.text
            );
        }
        // No state dir in the spec, no rule.
        let none = render_profile(&isolate_run());
        assert!(!none.text.contains("deny file-read-data"), "{}", none.text);
    }

    #[test]
    fn a_write_runs_git_dir_is_denied_writes_while_its_tree_is_allowed() {
        // The spec as the Linux keeper gets it, from real dirs (beneath /tmp, so each path has
        // a /private form too).
        let root = tempfile::tempdir().unwrap();
        let tree = root.path().join("shop");
        let git = tree.join(".git");
        let scratch = root.path().join("scratch");
        for dir in [&git, &scratch] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let spec = SandboxSpec::for_worker(
            crate::TreeAccess::Writable {
                tree: &tree,
                git_dirs: std::slice::from_ref(&git),
            },
            std::slice::from_ref(&scratch),
            &[],
            root.path().join("sandbox.json"),
        );
        let tree = std::fs::canonicalize(&tree).unwrap();
        let git = std::fs::canonicalize(&git).unwrap();
        assert_eq!(spec.read_only_binds, std::slice::from_ref(&git));

        let profile = render_profile(&spec);
        let rules = parse_rules(&profile.text);
        for form in forms(&tree) {
            let key = profile.keys_for(&form)[0];
            assert!(named_by(&rules, "allow file-write*", key), "{key}");
        }
        let tree_keys: Vec<&str> = forms(&tree)
            .iter()
            .map(|f| profile.keys_for(f)[0])
            .collect();
        for form in forms(&git) {
            let key = profile.keys_for(&form)[0];
            // Denied by a rule of its own after the allow, …
            let deny = rules
                .iter()
                .rposition(|r| r.head == "deny file-write*" && r.keys.iter().any(|k| k == key))
                .unwrap_or_else(|| panic!("{key} is not denied writes:\n{}", profile.text));
            let allow = rules
                .iter()
                .position(|r| r.head == "allow file-write*")
                .unwrap();
            assert!(deny > allow, "the deny must follow the allow it narrows");
            // … and excluded from each form of the tree's allow, whatever the rule order.
            let allow = &rules[allow].text;
            for tree_key in &tree_keys {
                let clause = allow
                    .split("(require-all")
                    .find(|c| c.contains(&format!("(subpath (param \"{tree_key}\"))")))
                    .unwrap();
                assert!(
                    clause.contains(&format!("(require-not (subpath (param \"{key}\")))")),
                    "{tree_key} does not exclude {key}:\n{}",
                    profile.text
                );
            }
            assert!(
                !named_by(&rules, "allow", key),
                "{key} is allowed:\n{}",
                profile.text
            );
        }
        assert!(!profile.strict);
    }

    #[test]
    fn a_path_with_quotes_or_backslashes_cannot_break_out_of_the_profile() {
        let evil = [
            r#"/Users/ana/code/a") (allow file-write* (subpath "/"#,
            r"/Users/ana/code/back\slash\",
            "/Users/ana/code/new\nline ; (allow default)",
            "/Users/ana/code/paren)(",
        ];
        let plain = [
            "/Users/ana/code/a",
            "/Users/ana/code/b",
            "/Users/ana/code/c",
            "/Users/ana/code/d",
        ];
        let spec = |list: &[&str; 4]| SandboxSpec {
            writable_dirs: paths(&[list[0]]),
            writable_files: paths(&[list[1]]),
            read_only_binds: paths(&[&format!("{}/.git", list[0])]),
            hidden_files: paths(&[list[2]]),
            masked: paths(&[list[3]]),
            ..SandboxSpec::default()
        };
        let profile = render_profile(&spec(&evil));
        // The text does not depend on the paths at all: it is the same as for plain ones …
        assert_eq!(profile.text, render_profile(&spec(&plain)).text);
        for path in evil {
            assert!(!profile.text.contains(path));
        }
        // … it parses into the same rules, none granting more than before …
        let rules = parse_rules(&profile.text);
        assert!(!rules.iter().any(|r| r.text.contains("(subpath \"/\")")));
        // … and each path reaches sandbox-exec whole, as one -D argument.
        let args = profile.args();
        for (key, path) in &profile.params {
            let mut definition = OsString::from(format!("{key}="));
            definition.push(path);
            let at = args.iter().position(|a| *a == definition).unwrap();
            assert_eq!(args[at - 1], "-D");
        }
        assert_eq!(profile.param("WRITABLE_DIR_0"), Some(Path::new(evil[0])));
    }

    #[test]
    fn paths_beneath_tmp_var_and_etc_are_given_in_their_private_form_too() {
        let spec = SandboxSpec {
            writable_dirs: paths(&["/tmp/run", "/var/folders/x/T", "/private/tmp/y", "/tmpfoo"]),
            hidden_files: paths(&["/etc/secret.key"]),
            ..SandboxSpec::default()
        };
        let profile = render_profile(&spec);
        let given = |key: &str| profile.param(key).unwrap().to_str().unwrap().to_string();
        assert_eq!(given("WRITABLE_DIR_0"), "/tmp/run");
        assert_eq!(given("WRITABLE_DIR_1"), "/private/tmp/run");
        assert_eq!(given("WRITABLE_DIR_2"), "/var/folders/x/T");
        assert_eq!(given("WRITABLE_DIR_3"), "/private/var/folders/x/T");
        assert_eq!(given("WRITABLE_DIR_4"), "/private/tmp/y");
        // A dir merely named like one of them is left alone.
        assert_eq!(given("WRITABLE_DIR_5"), "/tmpfoo");
        assert_eq!(profile.param("WRITABLE_DIR_6"), None);
        assert_eq!(given("HIDDEN_0"), "/etc/secret.key");
        assert_eq!(given("HIDDEN_1"), "/private/etc/secret.key");
        let rules = parse_rules(&profile.text);
        assert!(named_by(&rules, "deny file-read*", "HIDDEN_1"));

        // A git dir given in the other form is still excluded from its tree's allow.
        let profile = render_profile(&SandboxSpec {
            writable_dirs: paths(&["/tmp/run"]),
            read_only_binds: paths(&["/private/tmp/run/.git"]),
            ..SandboxSpec::default()
        });
        let allow = parse_rules(&profile.text)
            .into_iter()
            .find(|r| r.head == "allow file-write*")
            .unwrap();
        assert_eq!(
            allow
                .text
                .matches("(require-not (subpath (param \"READ_ONLY_0\")))")
                .count(),
            2
        );
    }

    #[test]
    fn the_arguments_are_the_profile_then_one_definition_per_parameter() {
        let profile = render_profile(&write_run());
        let args = profile.args();
        assert_eq!(args[0], "-p");
        assert_eq!(args[1], OsString::from(&profile.text));
        assert_eq!(args.len(), 2 + 2 * profile.params.len());
        assert_eq!(args[2], "-D");
        assert_eq!(args[3], "WRITABLE_DIR_0=/Users/ana/code/shop");
        // Every parameter the text names is defined, and every one defined is named.
        let named: std::collections::BTreeSet<String> = parse_rules(&profile.text)
            .into_iter()
            .flat_map(|r| r.keys)
            .collect();
        let defined: std::collections::BTreeSet<String> =
            profile.params.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(named, defined);
    }

    #[test]
    fn a_spec_with_nothing_writable_denies_every_write_but_the_terminal() {
        let profile = render_profile(&SandboxSpec::default());
        assert!(profile.params.is_empty());
        let rules = parse_rules(&profile.text);
        let heads: Vec<&str> = rules.iter().map(|r| r.head.as_str()).collect();
        assert_eq!(
            heads,
            [
                "version 1",
                "allow default",
                "deny file-write*",
                "allow file-write-data"
            ]
        );
    }
}
