//! Layer 1 of the worker guard: the decision behind the `git` shim.
//!
//! Inside a worker, the pitroom binary is first on `PATH` under the name `git`. It hands its
//! argv (without argv\[0\]) to [`decide`], passes the call through to the real git on
//! [`Decision::Allow`] and prints [`refusal_line`] on [`Decision::Block`]. Workers must never
//! change the user's history, refs, index, stash or config, nor throw work away; reading is
//! always fine.
//!
//! This module is pure: it spawns nothing and reads no files. Everything it knows comes from
//! the argv, the environment and the aliases the caller read from the user's config.
//!
//! The model follows git's own `git.c`:
//!
//! * Global options are walked the way `handle_options` walks them. An option git does not
//!   know makes git stop with a usage error, but a newer git might know it, so an
//!   unrecognised option is blocked rather than guessed at. Options that make git print
//!   something and exit (`--exec-path` without `=`, `--html-path`, `--list-cmds=…`, …) allow
//!   the call: no subcommand runs.
//! * `git <cmd> --help` always becomes `git help <cmd>` and is allowed; `git <cmd> -h` on its
//!   own prints usage for git's own commands and is allowed for them (not through an alias,
//!   where `-h` may end up as an option value).
//! * Aliases come from the caller's config, then `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/
//!   `GIT_CONFIG_VALUE_n`, then `GIT_CONFIG_PARAMETERS`, then `-c`/`--config-env` in argv, in
//!   that order, later definitions winning. Expansions are split like git's
//!   `split_cmdline`; `-c alias.…` inside an expansion counts too. Shell aliases (`!…`) are
//!   blocked.
//! * git ignores an alias that shadows one of its own commands. The guard does not rely on
//!   that: when an alias exists for a name, the call is blocked if either the command itself
//!   or the alias expansion would be blocked. An alias that refers back to the command it
//!   shadows (`alias.log = log --oneline`) is harmless, because git never expands it.
//! * `-c include.path=…` (or `includeIf`) in argv, the environment or an alias is blocked:
//!   the included file could define aliases the caller never read.
//! * A subcommand git does not know is allowed (it may be a `git-foo` extension), unless
//!   git's typo autocorrection (`help.autocorrect`) could turn it into a blocked command. The
//!   guard scores candidates as git does; a near-certain typo (one transposition or missing
//!   letter) of a blocked command is always refused, and any pick git could make is refused
//!   once autocorrection may be on (set in visible config, or config files redirected).
//!
//! Callers: the verdict for a word that is not one of git's own commands depends on the
//! aliases passed in, so decide with the user's aliases before refusing such a word.

use std::cell::Cell;

/// Expansions deeper than this are treated as a loop.
const MAX_ALIAS_DEPTH: usize = 10;

/// Command evaluations per decision before giving up (and blocking).
const MAX_EVALUATIONS: usize = 10_000;

/// git's `SIMILARITY_FLOOR`: autocorrection considers candidates scoring below it.
const SIMILARITY_FLOOR: usize = 7;

/// The autocorrection score of a single transposition or missing letter. Unless the guard can
/// see that autocorrection may be on, only typos this close to a blocked command are refused.
const TYPO_SCORE: usize = 2;

const HISTORY: &str = "changes history";
const REFS: &str = "updates refs";
const INDEX: &str = "changes the index";
const DISCARD: &str = "can discard work";
const PUBLISHES: &str = "publishes";
const CONFIG: &str = "writes config";
const STASH: &str = "changes the stash";
const REFLOG: &str = "changes the reflog";
const MOVES_HEAD: &str = "moves HEAD";
const WORKTREES: &str = "changes worktrees";
const SUBMODULES: &str = "changes submodules";
const OBJECTS: &str = "writes objects";
const CREDENTIALS: &str = "handles credentials";
const REINIT: &str = "can reinitialise a repository";
const SHELL_ALIAS: &str = "shell alias";
const ALIAS_LOOP: &str = "alias loop";
const EMPTY_ALIAS: &str = "empty alias";
const BAD_ALIAS: &str = "unparsable alias";
const UNKNOWN_OPTION: &str = "unrecognised git option";
const TOO_COMPLEX: &str = "too complex to check";
const INCLUDES: &str = "includes config the guard cannot check";

/// The guard's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Pass the call through to the real git.
    Allow,
    /// Refuse the call; `reason` is short and says what the command would have done.
    Block { reason: String },
}

/// Where alias definitions come from: config values the caller already read (from
/// `git config --get-regexp ^alias\.` of the real git, done by the caller), plus those in argv
/// (`-c alias.x=…`) and in GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n, and
/// GIT_CONFIG_PARAMETERS — the latter three the module reads from the `env` argument itself.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// name → expansion, from the user's config. The name may be given bare (`ci`) or as the
    /// full config key (`alias.ci`, `alias.ci.command`).
    pub aliases: &'a [(String, String)],
    /// The environment the real git would see.
    pub env: &'a [(String, String)],
}

/// Decides on one git invocation. `args` excludes argv\[0\].
pub fn decide(args: &[String], ctx: &Context<'_>) -> Decision {
    let guard = Guard::new(ctx.env);
    let aliases = Aliases::from_context(ctx);
    guard.process(
        args,
        &aliases,
        Frame {
            depth: 0,
            top_level: true,
            hypothetical: false,
        },
    )
}

/// The one line printed on refusal: `"pitroom: git <sub> is blocked inside a Pitroom worker:
/// <reason>. The primary agent reviews and commits."`
///
/// `<sub>` is the subcommand as typed (after the global options). Control characters in it
/// and in `reason` are escaped, so the result is always a single line.
pub fn refusal_line(args: &[String], reason: &str) -> String {
    let sub = match walk_globals(args, &[], &mut |_, _| {}) {
        Walk::Command(i) | Walk::Unknown(i) => args.get(i).map(String::as_str),
        Walk::NoCommand | Walk::Exits => None,
    };
    let git = match sub {
        Some("") => "git \"\"".to_string(),
        Some(sub) => format!("git {}", one_line(sub)),
        None => "git".to_string(),
    };
    let reason = one_line(reason.trim_end().trim_end_matches('.'));
    format!(
        "pitroom: {git} is blocked inside a Pitroom worker: {reason}. \
         The primary agent reviews and commits."
    )
}

fn block(reason: impl Into<String>) -> Decision {
    Decision::Block {
        reason: reason.into(),
    }
}

fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Command tables
// ---------------------------------------------------------------------------------------------

/// Commands that are refused whatever their arguments.
const BLOCKED: &[(&str, &str)] = &[
    ("commit", HISTORY),
    ("commit-tree", HISTORY),
    ("merge", HISTORY),
    ("rebase", HISTORY),
    ("revert", HISTORY),
    ("cherry-pick", HISTORY),
    ("am", HISTORY),
    ("pull", HISTORY),
    ("filter-branch", HISTORY),
    ("filter-repo", HISTORY),
    ("replay", HISTORY),
    ("history", HISTORY),
    ("rebase--interactive", HISTORY),
    ("rebase--helper", HISTORY),
    ("citool", HISTORY),
    ("gui", HISTORY),
    ("svn", HISTORY),
    ("p4", HISTORY),
    ("cvsimport", HISTORY),
    ("archimport", HISTORY),
    ("quiltimport", HISTORY),
    ("subtree", HISTORY),
    // Well-known third-party commands whose purpose is rewriting history or refs.
    ("absorb", HISTORY),
    ("revise", HISTORY),
    ("branchless", HISTORY),
    ("undo", HISTORY),
    ("squash", HISTORY),
    ("obliterate", HISTORY),
    ("reauthor", HISTORY),
    ("town", HISTORY),
    ("machete", HISTORY),
    ("delete-branch", REFS),
    ("delete-merged-branches", REFS),
    ("delete-tag", REFS),
    ("rename-branch", REFS),
    ("rename-tag", REFS),
    ("review", PUBLISHES),
    // Work tree and object store.
    ("reset", DISCARD),
    ("checkout", DISCARD),
    ("switch", DISCARD),
    ("restore", DISCARD),
    ("checkout-index", DISCARD),
    ("checkout--worker", DISCARD),
    ("gc", DISCARD),
    ("prune", DISCARD),
    ("repack", DISCARD),
    ("maintenance", DISCARD),
    // Index.
    ("add", INDEX),
    ("stage", INDEX),
    ("rm", INDEX),
    ("mv", INDEX),
    ("update-index", INDEX),
    ("read-tree", INDEX),
    ("merge-index", INDEX),
    ("merge-one-file", INDEX),
    ("merge-ours", INDEX),
    ("merge-octopus", INDEX),
    ("merge-recursive", INDEX),
    ("merge-recursive-ours", INDEX),
    ("merge-recursive-theirs", INDEX),
    ("merge-resolve", INDEX),
    ("merge-subtree", INDEX),
    ("mergetool", INDEX),
    // Refs.
    ("update-ref", REFS),
    ("pack-refs", REFS),
    ("fast-import", REFS),
    ("receive-pack", REFS),
    ("http-fetch", REFS),
    ("shell", REFS),
    ("bisect--helper", MOVES_HEAD),
    ("submodule--helper", SUBMODULES),
    // Publishing and serving.
    ("push", PUBLISHES),
    ("send-pack", PUBLISHES),
    ("http-push", PUBLISHES),
    ("send-email", PUBLISHES),
    ("request-pull", PUBLISHES),
    ("imap-send", PUBLISHES),
    ("daemon", PUBLISHES),
    ("instaweb", PUBLISHES),
    ("http-backend", PUBLISHES),
    ("cvsserver", PUBLISHES),
    ("cvsexportcommit", PUBLISHES),
    // Secrets (every `credential*` name is blocked; these are the ones git ships).
    ("credential", CREDENTIALS),
    ("credential-cache", CREDENTIALS),
    ("credential-cache--daemon", CREDENTIALS),
    ("credential-store", CREDENTIALS),
    ("init", REINIT),
    ("init-db", REINIT),
];

/// Commands allowed in some forms only; see [`Guard::rule`].
const CONDITIONAL: &[&str] = &[
    "apply",
    "bisect",
    "branch",
    "clean",
    "config",
    "fetch",
    "for-each-repo",
    "hash-object",
    "lfs",
    "notes",
    "reflog",
    "refs",
    "remote",
    "replace",
    "rerere",
    "sparse-checkout",
    "stash",
    "submodule",
    "symbolic-ref",
    "tag",
    "worktree",
];

/// git's own commands that only read (or write new objects or files outside the repository's
/// history, refs, index and config).
const ALLOWED: &[&str] = &[
    "annotate",
    "archive",
    "backfill",
    "blame",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "cherry",
    "clone",
    "column",
    "commit-graph",
    "count-objects",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-pairs",
    "diff-tree",
    "difftool",
    "fast-export",
    "fetch-pack",
    "fmt-merge-msg",
    "for-each-ref",
    "format-patch",
    "format-rev",
    "fsck",
    "fsck-objects",
    "fsmonitor--daemon",
    "get-tar-commit-id",
    "grep",
    "help",
    "hook",
    "index-pack",
    "interpret-trailers",
    "last-modified",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mktag",
    "mktree",
    "multi-pack-index",
    "name-rev",
    "pack-objects",
    "pack-redundant",
    "patch-id",
    "pickaxe",
    "prune-packed",
    "range-diff",
    "remote-ext",
    "remote-fd",
    "remote-ftp",
    "remote-ftps",
    "remote-http",
    "remote-https",
    "repo",
    "rev-list",
    "rev-parse",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "status",
    "stripspace",
    "unpack-file",
    "unpack-objects",
    "update-server-info",
    "upload-archive",
    "upload-archive--writer",
    "upload-pack",
    "url-parse",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "write-tree",
];

/// git's "common" commands (help.c's `common_mask`) that every git version has: a typed word
/// that starts one of them is never autocorrected.
const COMMON: &[&str] = &[
    "add", "bisect", "branch", "clone", "commit", "diff", "fetch", "grep", "init", "log", "merge",
    "mv", "pull", "push", "rebase", "reset", "restore", "rm", "show", "status", "switch", "tag",
];

/// Allowed commands too new to be installed everywhere: they cannot be relied on to be the
/// better autocorrection candidate.
const RECENT: &[&str] = &[
    "backfill",
    "diff-pairs",
    "format-rev",
    "last-modified",
    "repo",
    "url-parse",
];

/// Names in the tables that are not git's own commands: `-h` is not known to mean "usage"
/// for them.
const THIRD_PARTY: &[&str] = &[
    "filter-repo",
    "lfs",
    "absorb",
    "revise",
    "branchless",
    "undo",
    "squash",
    "obliterate",
    "reauthor",
    "town",
    "machete",
    "delete-branch",
    "delete-merged-branches",
    "delete-tag",
    "rename-branch",
    "rename-tag",
    "review",
];

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

struct Guard<'a> {
    env: &'a [(String, String)],
    /// Command evaluations left; bounds the work hostile alias sets can cause.
    budget: Cell<usize>,
}

#[derive(Clone, Copy)]
struct Frame {
    /// Alias expansions (and nested `for-each-repo` calls) so far.
    depth: usize,
    /// The command word is the one typed to a git process (not an alias expansion), so git's
    /// autocorrection may apply to it.
    top_level: bool,
    /// Evaluating an alias that shadows one of git's commands: git would not expand it, so a
    /// loop on this path means nothing runs.
    hypothetical: bool,
}

impl<'a> Guard<'a> {
    fn new(env: &'a [(String, String)]) -> Self {
        Guard {
            env,
            budget: Cell::new(MAX_EVALUATIONS),
        }
    }

    /// One git process: global options, then the command.
    fn process(&self, words: &[String], aliases: &Aliases, frame: Frame) -> Decision {
        let mut aliases = aliases.clone();
        let walk = walk_globals(words, self.env, &mut |key, value| {
            aliases.push_config(key, value)
        });
        if aliases.includes {
            return block(INCLUDES);
        }
        match walk {
            Walk::NoCommand | Walk::Exits => Decision::Allow,
            Walk::Unknown(_) => block(UNKNOWN_OPTION),
            Walk::Command(i) => self.command(
                &words[i],
                words.get(i + 1..).unwrap_or(&[]),
                &aliases,
                &mut Vec::new(),
                frame,
            ),
        }
    }

    fn command(
        &self,
        cmd: &str,
        rest: &[String],
        aliases: &Aliases,
        stack: &mut Vec<String>,
        frame: Frame,
    ) -> Decision {
        let Some(left) = self.budget.get().checked_sub(1) else {
            return block(TOO_COMPLEX);
        };
        self.budget.set(left);
        if matches!(
            cmd,
            "help" | "version" | "--help" | "-h" | "--version" | "-v"
        ) {
            return Decision::Allow;
        }
        // git turns `git <anything> --help` into `git help <anything>` before looking at it.
        if rest.first().is_some_and(|a| a == "--help") {
            return Decision::Allow;
        }
        // Rules are looked up case-insensitively: on a case-insensitive file system
        // `git COMMIT` can reach git-commit's script or binary.
        let lower = cmd.to_ascii_lowercase();
        let rule = self.rule(&lower, rest, aliases, frame);
        if rule.is_some()
            && !THIRD_PARTY.contains(&lower.as_str())
            && rest.len() == 1
            && rest[0] == "-h"
        {
            return Decision::Allow;
        }
        if let Some(decision @ Decision::Block { .. }) = rule {
            return decision;
        }
        let known = rule.is_some();
        if let Some(expansion) = aliases.lookup(cmd) {
            let frame = Frame {
                hypothetical: frame.hypothetical || known,
                ..frame
            };
            return self.alias(cmd, expansion, rest, aliases, stack, frame);
        }
        if !known && frame.top_level {
            return self.autocorrect(cmd, rest, aliases, stack, frame);
        }
        Decision::Allow
    }

    fn alias(
        &self,
        name: &str,
        expansion: &str,
        rest: &[String],
        aliases: &Aliases,
        stack: &mut Vec<String>,
        frame: Frame,
    ) -> Decision {
        if frame.depth >= MAX_ALIAS_DEPTH {
            return block(ALIAS_LOOP);
        }
        if expansion.starts_with('!') {
            return block(SHELL_ALIAS);
        }
        let Some(words) = split_cmdline(expansion) else {
            return block(BAD_ALIAS);
        };
        let mut aliases = aliases.clone();
        let walk = walk_globals(&words, self.env, &mut |key, value| {
            aliases.push_config(key, value)
        });
        if aliases.includes {
            return block(INCLUDES);
        }
        let head = match walk {
            Walk::Exits => return Decision::Allow,
            Walk::NoCommand => return block(EMPTY_ALIAS),
            Walk::Unknown(_) => return block(UNKNOWN_OPTION),
            Walk::Command(i) => i,
        };
        let cmd = &words[head];
        let looped = cmd.eq_ignore_ascii_case(name)
            || stack.iter().any(|seen| seen.eq_ignore_ascii_case(cmd));
        if looped {
            return if frame.hypothetical {
                Decision::Allow
            } else {
                block(ALIAS_LOOP)
            };
        }
        let mut args = words.get(head + 1..).unwrap_or(&[]).to_vec();
        args.extend_from_slice(rest);
        stack.push(name.to_string());
        let decision = self.command(
            cmd,
            &args,
            &aliases,
            stack,
            Frame {
                depth: frame.depth + 1,
                top_level: false,
                ..frame
            },
        );
        stack.pop();
        decision
    }

    /// git runs an unknown command's closest match when `help.autocorrect` is set. Mirrors
    /// git's choice: nothing when the typed word starts one of the common commands, else the
    /// best-scoring candidate below the similarity floor (ties count as possible picks, since
    /// the installed command set may differ). Where `help.autocorrect` is set in config the
    /// guard sees, or config files are redirected (`GIT_CONFIG_GLOBAL`/`GIT_CONFIG_SYSTEM`),
    /// any such pick counts; otherwise only a near-certain typo of a blocked command does, so
    /// that `git-foo` extensions and alias names stay usable.
    fn autocorrect(
        &self,
        cmd: &str,
        rest: &[String],
        aliases: &Aliases,
        stack: &mut Vec<String>,
        frame: Frame,
    ) -> Decision {
        if COMMON.iter().any(|common| common.starts_with(cmd)) {
            return Decision::Allow;
        }
        let candidates: Vec<(usize, &str)> = BLOCKED
            .iter()
            .map(|(name, _)| *name)
            .chain(CONDITIONAL.iter().copied())
            .chain(
                ALLOWED
                    .iter()
                    .copied()
                    .filter(|name| !RECENT.contains(name)),
            )
            .chain(aliases.names())
            .filter(|candidate| *candidate != cmd)
            .filter_map(|candidate| similarity(cmd, candidate).map(|score| (score, candidate)))
            .collect();
        let Some(best) = candidates.iter().map(|(score, _)| *score).min() else {
            return Decision::Allow;
        };
        let may_autocorrect = aliases.autocorrect
            || env_get(self.env, "GIT_CONFIG_GLOBAL").is_some()
            || env_get(self.env, "GIT_CONFIG_SYSTEM").is_some();
        if !may_autocorrect && best > TYPO_SCORE {
            return Decision::Allow;
        }
        let frame = Frame {
            top_level: false,
            ..frame
        };
        for (_, candidate) in candidates.iter().filter(|(score, _)| *score == best) {
            if let Decision::Block { reason } = self.command(candidate, rest, aliases, stack, frame)
            {
                return block(format!("may autocorrect to {candidate} ({reason})"));
            }
        }
        Decision::Allow
    }

    /// The verdict on one of the commands in the tables; `None` when the command is unknown.
    fn rule(
        &self,
        name: &str,
        rest: &[String],
        aliases: &Aliases,
        frame: Frame,
    ) -> Option<Decision> {
        if let Some((_, reason)) = BLOCKED.iter().find(|(blocked, _)| *blocked == name) {
            return Some(block(*reason));
        }
        if name.starts_with("credential") {
            return Some(block(CREDENTIALS));
        }
        if ALLOWED.contains(&name) {
            return Some(Decision::Allow);
        }
        let verdict = match name {
            "apply" => apply_rule(rest),
            "bisect" => first_arg_in(rest, &["log", "terms", "visualize", "view"], MOVES_HEAD),
            "branch" => branch_rule(rest),
            "clean" => clean_rule(rest),
            "config" => config_rule(rest),
            "fetch" => fetch_rule(rest),
            "for-each-repo" => return Some(self.for_each_repo(rest, aliases, frame)),
            "hash-object" => hash_object_rule(rest),
            "lfs" => lfs_rule(rest),
            "notes" => notes_rule(rest),
            "reflog" => reflog_rule(rest),
            "refs" => first_arg_in(rest, &["verify", "list", "exists"], REFS),
            "remote" => remote_rule(rest),
            "replace" => replace_rule(rest),
            "rerere" => first_arg_in(rest, &["status", "diff", "remaining"], DISCARD),
            "sparse-checkout" => first_arg_in(rest, &["list", "check-rules"], INDEX),
            "stash" => match rest.first().map(String::as_str) {
                Some("list" | "show") => Ok(()),
                _ => Err(STASH),
            },
            "submodule" => submodule_rule(rest),
            "symbolic-ref" => symbolic_ref_rule(rest),
            "tag" => tag_rule(rest),
            "worktree" => first_arg_in(rest, &["list"], WORKTREES),
            _ => return None,
        };
        Some(match verdict {
            Ok(()) => Decision::Allow,
            Err(reason) => block(reason),
        })
    }

    /// `git for-each-repo [--config=<key>] [--keep-going] [--] <git args>` runs
    /// `git -C <repo> <git args>` for each repository: judge those args.
    fn for_each_repo(&self, rest: &[String], aliases: &Aliases, frame: Frame) -> Decision {
        let mut i = 0;
        while let Some(arg) = rest.get(i) {
            match arg.as_str() {
                "--" => {
                    i += 1;
                    break;
                }
                "--keep-going" | "--no-keep-going" => {}
                "--config" => i += 1,
                a if a.starts_with("--config=") => {}
                _ => break,
            }
            i += 1;
        }
        let inner = rest.get(i..).unwrap_or(&[]);
        if inner.is_empty() {
            return Decision::Allow;
        }
        if frame.depth >= MAX_ALIAS_DEPTH {
            return block("nested too deeply");
        }
        self.process(
            inner,
            aliases,
            Frame {
                depth: frame.depth + 1,
                top_level: true,
                ..frame
            },
        )
    }
}

/// Ok when the first argument is absent or one of `allowed`.
fn first_arg_in(
    rest: &[String],
    allowed: &[&str],
    reason: &'static str,
) -> Result<(), &'static str> {
    match rest.first() {
        None => Ok(()),
        Some(sub) if allowed.contains(&sub.as_str()) => Ok(()),
        Some(_) => Err(reason),
    }
}

// ---------------------------------------------------------------------------------------------
// Per-command rules
// ---------------------------------------------------------------------------------------------

/// Plain `git apply` only touches the work tree; `--index`, `--cached`, `--3way` and
/// `--intent-to-add` touch the index. Long options may be abbreviated.
fn apply_rule(rest: &[String]) -> Result<(), &'static str> {
    const INDEX_OPTIONS: &[&str] = &["index", "cached", "3way", "intent-to-add"];
    for arg in before_dashdash(rest) {
        if let Some(long) = arg.strip_prefix("--") {
            if abbreviates(split_eq(long).0, INDEX_OPTIONS) {
                return Err(INDEX);
            }
        } else if let Some(cluster) = short_cluster(arg) {
            for c in cluster.chars() {
                match c {
                    '3' | 'N' => return Err(INDEX),
                    // -p<n> and -C<n>: the rest of the cluster is a number.
                    'p' | 'C' => break,
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// Listing only: no positional name unless a flag puts branch in list mode.
fn branch_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &[
            "--list",
            "--all",
            "--remotes",
            "--verbose",
            "--show-current",
            "--ignore-case",
            "--omit-empty",
            "--quiet",
            "--no-color",
            "--no-column",
            "--no-abbrev",
        ],
        // The filters take an optional argument; a separate one is left for the scan to see.
        optional: &[
            "--color",
            "--column",
            "--abbrev",
            "--contains",
            "--no-contains",
            "--with",
            "--without",
            "--merged",
            "--no-merged",
        ],
        valued: &["--points-at", "--format", "--sort"],
        short_flags: "larvqi",
        ..NO_OPTIONS
    };
    const LISTING: &[&str] = &[
        "-l",
        "--list",
        "--contains",
        "--no-contains",
        "--with",
        "--without",
        "--merged",
        "--no-merged",
        "--points-at",
    ];
    match scan(rest, &SPEC) {
        Some(s) if s.positionals.is_empty() || s.saw(LISTING) => Ok(()),
        _ => Err(REFS),
    }
}

/// Listing and verifying only.
fn tag_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &[
            "--list",
            "--verify",
            "--ignore-case",
            "--omit-empty",
            "--no-color",
            "--no-column",
        ],
        optional: &[
            "--color",
            "--column",
            "--contains",
            "--no-contains",
            "--with",
            "--without",
            "--merged",
            "--no-merged",
        ],
        valued: &["--points-at", "--format", "--sort"],
        short_flags: "lvi",
        short_optional: "n",
        ..NO_OPTIONS
    };
    const LISTING: &[&str] = &[
        "-l",
        "--list",
        "-v",
        "--verify",
        "-n",
        "--contains",
        "--no-contains",
        "--with",
        "--without",
        "--merged",
        "--no-merged",
        "--points-at",
    ];
    match scan(rest, &SPEC) {
        Some(s) if s.positionals.is_empty() || s.saw(LISTING) => Ok(()),
        _ => Err(REFS),
    }
}

/// Reads only: `get`/`list`, the legacy `--get*`/`--list` actions, or a single key.
fn config_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &[
            "--get",
            "--get-all",
            "--get-regexp",
            "--get-urlmatch",
            "--get-color",
            "--get-colorbool",
            "--list",
            "--show-origin",
            "--show-scope",
            "--name-only",
            "--null",
            "--global",
            "--system",
            "--local",
            "--worktree",
            "--bool",
            "--int",
            "--bool-or-int",
            "--path",
            "--expiry-date",
            "--includes",
            "--no-includes",
            "--fixed-value",
            "--no-type",
        ],
        valued: &["--file", "--blob", "--type", "--default"],
        short_flags: "lz",
        short_valued: "f",
        ..NO_OPTIONS
    };
    const GETS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "--list",
        "-l",
    ];
    match rest.first().map(String::as_str) {
        Some("get" | "list") => return Ok(()),
        Some("set" | "unset" | "rename-section" | "remove-section" | "edit") => return Err(CONFIG),
        _ => {}
    }
    match scan(rest, &SPEC) {
        Some(s) if s.saw(GETS) || s.positionals.len() <= 1 => Ok(()),
        _ => Err(CONFIG),
    }
}

/// `git clean` is allowed as a dry run only.
fn clean_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &["--dry-run", "--quiet"],
        valued: &["--exclude"],
        short_flags: "ndxXq",
        short_valued: "e",
        ..NO_OPTIONS
    };
    match scan(rest, &SPEC) {
        Some(s) if s.saw(&["-n", "--dry-run"]) => Ok(()),
        _ => Err(DISCARD),
    }
}

/// Every fetch updates remote-tracking refs or FETCH_HEAD, except a dry run.
fn fetch_rule(rest: &[String]) -> Result<(), &'static str> {
    /// Write refs, config or the shallow file even in a dry run (abbreviations count).
    const RISKY: &[&str] = &[
        "set-upstream",
        "write-commit-graph",
        "unshallow",
        "update-shallow",
        "depth",
        "deepen",
        "shallow-since",
        "shallow-exclude",
        "refetch",
        "update-head-ok",
    ];
    /// Take a separate value, which might itself read `--dry-run`.
    const VALUED: &[&str] = &[
        "upload-pack",
        "refmap",
        "server-option",
        "negotiation-tip",
        "filter",
        "jobs",
        "submodule-prefix",
        "recurse-submodules-default",
    ];
    let mut dry_run = false;
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = split_eq(long);
            if name == "dry-run" {
                dry_run = true;
            } else if name.len() >= 4 && "no-dry-run".starts_with(name) {
                dry_run = false;
            } else if abbreviates(name, RISKY) {
                return Err(REFS);
            } else if value.is_none() && abbreviates(name, VALUED) {
                i += 1;
            }
        } else if let Some(cluster) = short_cluster(arg) {
            for (at, c) in cluster.char_indices() {
                match c {
                    'u' => return Err(REFS),
                    'o' | 'j' => {
                        if at + c.len_utf8() == cluster.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
        i += 1;
    }
    if dry_run {
        Ok(())
    } else {
        Err(REFS)
    }
}

fn hash_object_rule(rest: &[String]) -> Result<(), &'static str> {
    for arg in before_dashdash(rest) {
        if let Some(cluster) = short_cluster(arg) {
            for c in cluster.chars() {
                match c {
                    'w' => return Err(OBJECTS),
                    // -t <type>: the rest of the cluster (or the next argument) is the type.
                    't' => break,
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

fn lfs_rule(rest: &[String]) -> Result<(), &'static str> {
    match rest.first().map(String::as_str) {
        Some("push" | "lock" | "unlock") => Err(PUBLISHES),
        Some("migrate") => Err(HISTORY),
        Some("pull" | "checkout" | "prune" | "dedup") => Err(DISCARD),
        Some("install" | "uninstall" | "update") => Err(CONFIG),
        _ => Ok(()),
    }
}

fn notes_rule(rest: &[String]) -> Result<(), &'static str> {
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        if arg == "--ref" {
            i += 2;
        } else if arg.starts_with("--ref=") {
            i += 1;
        } else {
            break;
        }
    }
    match rest.get(i).map(String::as_str) {
        None | Some("list" | "show" | "get-ref") => Ok(()),
        Some(_) => Err(REFS),
    }
}

fn reflog_rule(rest: &[String]) -> Result<(), &'static str> {
    match rest.first().map(String::as_str) {
        Some("expire" | "delete" | "drop" | "write") => Err(REFLOG),
        _ => Ok(()),
    }
}

fn remote_rule(rest: &[String]) -> Result<(), &'static str> {
    let mut i = 0;
    while matches!(rest.get(i).map(String::as_str), Some("-v" | "--verbose")) {
        i += 1;
    }
    match rest.get(i).map(String::as_str) {
        None | Some("show" | "get-url") => Ok(()),
        Some("prune" | "update") => Err(REFS),
        Some(_) => Err(CONFIG),
    }
}

fn replace_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &["--list"],
        valued: &["--format"],
        short_flags: "l",
        ..NO_OPTIONS
    };
    match scan(rest, &SPEC) {
        Some(s) if s.positionals.is_empty() || s.saw(&["-l", "--list"]) => Ok(()),
        _ => Err(REFS),
    }
}

fn submodule_rule(rest: &[String]) -> Result<(), &'static str> {
    let mut i = 0;
    while matches!(
        rest.get(i).map(String::as_str),
        Some("-q" | "--quiet" | "--cached")
    ) {
        i += 1;
    }
    match rest.get(i).map(String::as_str) {
        None | Some("status" | "summary") => Ok(()),
        Some(_) => Err(SUBMODULES),
    }
}

/// Reading is one name; two names or `--delete` write.
fn symbolic_ref_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &["--quiet", "--short", "--recurse", "--no-recurse"],
        short_flags: "q",
        ..NO_OPTIONS
    };
    match scan(rest, &SPEC) {
        Some(s) if s.positionals.len() <= 1 => Ok(()),
        _ => Err(REFS),
    }
}

// ---------------------------------------------------------------------------------------------
// Option scanning for subcommands
// ---------------------------------------------------------------------------------------------

/// The read-only options a subcommand accepts. Anything else (including abbreviations and
/// negations not listed) makes [`scan`] fail, which the rules treat as a write.
struct Spec {
    /// Long options without a value.
    flags: &'static [&'static str],
    /// Long options with an optional attached value (`--color`, `--color=always`).
    optional: &'static [&'static str],
    /// Long options with a required value, attached or the next argument.
    valued: &'static [&'static str],
    /// Short options without a value, combinable (`-av`).
    short_flags: &'static str,
    /// Short options with a value: the rest of the cluster, else the next argument.
    short_valued: &'static str,
    /// Short options with an optional value in the rest of the cluster (`-n5`).
    short_optional: &'static str,
}

const NO_OPTIONS: Spec = Spec {
    flags: &[],
    optional: &[],
    valued: &[],
    short_flags: "",
    short_valued: "",
    short_optional: "",
};

struct Scan<'a> {
    positionals: Vec<&'a str>,
    /// Options seen, normalised: `--name` for long ones, `-c` for each short one.
    seen: Vec<String>,
}

impl Scan<'_> {
    fn saw(&self, options: &[&str]) -> bool {
        self.seen.iter().any(|s| options.contains(&s.as_str()))
    }
}

fn scan<'a>(args: &'a [String], spec: &Spec) -> Option<Scan<'a>> {
    let mut out = Scan {
        positionals: Vec::new(),
        seen: Vec::new(),
    };
    let mut dashdash = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let arg = arg.as_str();
        if dashdash || arg == "-" || !arg.starts_with('-') {
            out.positionals.push(arg);
        } else if arg == "--" {
            dashdash = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = split_eq(long);
            let option = format!("--{name}");
            let option_ref = option.as_str();
            if spec.valued.contains(&option_ref) {
                if value.is_none() {
                    i += 1;
                }
            } else if !(spec.optional.contains(&option_ref)
                || (spec.flags.contains(&option_ref) && value.is_none()))
            {
                return None;
            }
            out.seen.push(option);
        } else {
            let cluster = arg.strip_prefix('-').unwrap_or(arg);
            for (at, c) in cluster.char_indices() {
                out.seen.push(format!("-{c}"));
                if spec.short_flags.contains(c) {
                    continue;
                }
                if spec.short_valued.contains(c) {
                    if at + c.len_utf8() == cluster.len() {
                        i += 1;
                    }
                    break;
                }
                if spec.short_optional.contains(c) {
                    break;
                }
                return None;
            }
        }
        i += 1;
    }
    Some(out)
}

fn before_dashdash(args: &[String]) -> impl Iterator<Item = &str> {
    args.iter()
        .map(String::as_str)
        .take_while(|arg| *arg != "--")
}

/// The letters of a short-option cluster (`-abc` → `abc`), if `arg` is one.
fn short_cluster(arg: &str) -> Option<&str> {
    if arg.starts_with("--") {
        return None;
    }
    arg.strip_prefix('-').filter(|cluster| !cluster.is_empty())
}

/// `name=value` → (`name`, Some(`value`)).
fn split_eq(text: &str) -> (&str, Option<&str>) {
    match text.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (text, None),
    }
}

/// Whether `name` is one of `options` or a prefix of one (git accepts unique abbreviations of
/// long options).
fn abbreviates(name: &str, options: &[&str]) -> bool {
    !name.is_empty() && options.iter().any(|option| option.starts_with(name))
}

// ---------------------------------------------------------------------------------------------
// Global options (git.c's handle_options)
// ---------------------------------------------------------------------------------------------

enum Walk {
    /// The subcommand is at this index.
    Command(usize),
    /// Options only (or an option missing its value): git runs no subcommand.
    NoCommand,
    /// An option that makes git print something and exit.
    Exits,
    /// An option git's handle_options does not know, at this index.
    Unknown(usize),
}

/// Walks git's global options. Config given with `-c` and `--config-env` goes to `config`.
fn walk_globals(
    words: &[String],
    env: &[(String, String)],
    config: &mut dyn FnMut(&str, Option<&str>),
) -> Walk {
    const FLAGS: &[&str] = &[
        "-p",
        "--paginate",
        "-P",
        "--no-pager",
        "--no-replace-objects",
        "--no-lazy-fetch",
        "--bare",
        "--literal-pathspecs",
        "--no-literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-optional-locks",
        "--no-advice",
    ];
    const VALUED: &[&str] = &[
        "-C",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--attr-source",
        "--super-prefix",
        "--shallow-file",
        "--list-cmds",
    ];
    const ATTACHED: &[&str] = &[
        "--git-dir=",
        "--work-tree=",
        "--namespace=",
        "--attr-source=",
        "--super-prefix=",
        "--shallow-file=",
    ];
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let word = word.as_str();
        if !word.starts_with('-') {
            return Walk::Command(i);
        }
        match word {
            // Legacy spellings of `git help` and `git version`.
            "--help" | "-h" | "--version" | "-v" => return Walk::Command(i),
            "--html-path" | "--man-path" | "--info-path" => return Walk::Exits,
            w if FLAGS.contains(&w) => {}
            "-c" => {
                let Some(text) = words.get(i + 1) else {
                    return Walk::NoCommand;
                };
                push_parameter(text, config);
                i += 1;
            }
            "--config-env" => {
                let Some(spec) = words.get(i + 1) else {
                    return Walk::NoCommand;
                };
                push_config_env(spec, env, config);
                i += 1;
            }
            w if VALUED.contains(&w) => {
                if words.get(i + 1).is_none() {
                    return Walk::NoCommand;
                }
                i += 1;
            }
            w => {
                if let Some(tail) = w.strip_prefix("--exec-path") {
                    // `--exec-path` without `=` prints the path and exits.
                    if !tail.starts_with('=') {
                        return Walk::Exits;
                    }
                } else if let Some(spec) = w.strip_prefix("--config-env=") {
                    push_config_env(spec, env, config);
                } else if w.starts_with("--list-cmds=") {
                    return Walk::Exits;
                } else if !ATTACHED.iter().any(|prefix| w.starts_with(prefix)) {
                    return Walk::Unknown(i);
                }
            }
        }
        i += 1;
    }
    Walk::NoCommand
}

/// `-c name=value` (the first `=` splits; without one the value is missing).
fn push_parameter(text: &str, config: &mut dyn FnMut(&str, Option<&str>)) {
    let (key, value) = split_eq(text);
    config(key, value);
}

/// `--config-env name=ENVVAR` (the last `=` splits).
fn push_config_env(
    spec: &str,
    env: &[(String, String)],
    config: &mut dyn FnMut(&str, Option<&str>),
) {
    if let Some((key, var)) = spec.rsplit_once('=') {
        if let Some(value) = env_get(env, var) {
            config(key, Some(value));
        }
    }
}

fn env_get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

// ---------------------------------------------------------------------------------------------
// Aliases
// ---------------------------------------------------------------------------------------------

/// The config the guard can see: alias definitions, plus whether `help.autocorrect` or an
/// include was set in argv or the environment.
#[derive(Clone, Default)]
struct Aliases {
    /// In definition order; later ones win.
    defs: Vec<AliasDef>,
    autocorrect: bool,
    /// `include.path` or `includeIf.*.path`: a file that may define anything, aliases included.
    includes: bool,
}

#[derive(Clone)]
struct AliasDef {
    name: String,
    /// `[alias "Name"] command = …` names are case-sensitive; `alias.name` ones are not.
    exact: bool,
    expansion: String,
}

impl Aliases {
    fn from_context(ctx: &Context<'_>) -> Self {
        let mut aliases = Self::default();
        for (name, expansion) in ctx.aliases {
            let parsed = match name.get(..6) {
                Some(prefix) if prefix.eq_ignore_ascii_case("alias.") => parse_alias_key(name),
                _ => alias_name(name),
            };
            if let Some((name, exact)) = parsed {
                aliases.push(name, exact, expansion);
            }
        }
        if let Some(count) = env_get(ctx.env, "GIT_CONFIG_COUNT").and_then(parse_count) {
            for n in 0..count {
                let key = env_get(ctx.env, &format!("GIT_CONFIG_KEY_{n}"));
                let value = env_get(ctx.env, &format!("GIT_CONFIG_VALUE_{n}"));
                // git gives up on the first missing pair.
                let (Some(key), Some(value)) = (key, value) else {
                    break;
                };
                aliases.push_config(key, Some(value));
            }
        }
        if let Some(parameters) = env_get(ctx.env, "GIT_CONFIG_PARAMETERS") {
            parse_config_parameters(parameters, &mut |key, value| {
                aliases.push_config(key, value)
            });
        }
        aliases
    }

    fn push(&mut self, name: String, exact: bool, expansion: &str) {
        self.defs.push(AliasDef {
            name,
            exact,
            expansion: expansion.to_string(),
        });
    }

    /// A config entry; only `alias.*` keys with a value define aliases.
    fn push_config(&mut self, key: &str, value: Option<&str>) {
        let lower = key.to_ascii_lowercase();
        if lower == "help.autocorrect" {
            self.autocorrect = true;
        }
        if lower == "include.path" || (lower.starts_with("includeif.") && lower.ends_with(".path"))
        {
            self.includes = true;
        }
        if let (Some((name, exact)), Some(value)) = (parse_alias_key(key), value) {
            self.push(name, exact, value);
        }
    }

    fn lookup(&self, name: &str) -> Option<&str> {
        self.defs
            .iter()
            .rev()
            .find(|def| {
                if def.exact {
                    def.name == name
                } else {
                    def.name.eq_ignore_ascii_case(name)
                }
            })
            .map(|def| def.expansion.as_str())
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        self.defs.iter().map(|def| def.name.as_str())
    }
}

/// `alias.<name>` or `alias.<name>.command` (section name case-insensitive).
fn parse_alias_key(key: &str) -> Option<(String, bool)> {
    let (section, rest) = key.split_once('.')?;
    if !section.eq_ignore_ascii_case("alias") {
        return None;
    }
    alias_name(rest)
}

/// The alias named by the part of a key after `alias.`, and whether it is case-sensitive.
fn alias_name(rest: &str) -> Option<(String, bool)> {
    if rest.is_empty() {
        return None;
    }
    if let Some((subsection, variable)) = rest.rsplit_once('.') {
        if variable.eq_ignore_ascii_case("command") {
            // `[alias ""] command = …` is the plain alias named "command".
            if subsection.is_empty() {
                return Some(("command".to_string(), false));
            }
            return Some((subsection.to_string(), true));
        }
    }
    Some((rest.to_string(), false))
}

/// `GIT_CONFIG_COUNT` as git's strtoul reads it; `None` when git would reject it.
fn parse_count(text: &str) -> Option<u64> {
    let trimmed = text.trim_start_matches(|c: char| c.is_ascii() && c_isspace(c as u8));
    let digits = trimmed.strip_prefix('+').unwrap_or(trimmed);
    if text.is_empty() {
        return Some(0);
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Parses `GIT_CONFIG_PARAMETERS`: space-separated `'key=value'` (old style) or
/// `'key'='value'` / `'key'=` (new style) items, shell-single-quoted. Stops where git would
/// report a bogus format.
fn parse_config_parameters(text: &str, config: &mut dyn FnMut(&str, Option<&str>)) {
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        let Some((key, next)) = sq_dequote_step(bytes, pos) else {
            return;
        };
        let key = String::from_utf8_lossy(&key);
        match next {
            None => {
                push_parameter(&key, config);
                return;
            }
            Some(at) if bytes.get(at).is_some_and(|b| c_isspace(*b)) => {
                push_parameter(&key, config);
                pos = at;
            }
            Some(at) if bytes.get(at) == Some(&b'=') => {
                let at = at + 1;
                match bytes.get(at) {
                    Some(b'\'') => {
                        let Some((value, after)) = sq_dequote_step(bytes, at) else {
                            return;
                        };
                        if let Some(after) = after {
                            if !bytes.get(after).is_some_and(|b| c_isspace(*b)) {
                                return;
                            }
                        }
                        config(&key, Some(&String::from_utf8_lossy(&value)));
                        match after {
                            Some(after) => pos = after,
                            None => return,
                        }
                    }
                    None => {
                        config(&key, None);
                        return;
                    }
                    Some(b) if c_isspace(*b) => {
                        config(&key, None);
                        pos = at;
                    }
                    Some(_) => return,
                }
            }
            Some(_) => return,
        }
        while bytes.get(pos).is_some_and(|b| c_isspace(*b)) {
            pos += 1;
        }
    }
}

/// git's `sq_dequote_step`: one single-quoted word starting at `start` (where `\'` and `\!`
/// may appear between quoted parts). Returns the word and where parsing continues (`None` at
/// the end of the text).
fn sq_dequote_step(bytes: &[u8], start: usize) -> Option<(Vec<u8>, Option<usize>)> {
    if bytes.get(start) != Some(&b'\'') {
        return None;
    }
    let mut out = Vec::new();
    let mut src = start;
    loop {
        src += 1;
        let c = *bytes.get(src)?;
        if c != b'\'' {
            out.push(c);
            continue;
        }
        src += 1;
        match bytes.get(src) {
            None => return Some((out, None)),
            Some(b'\\') => {
                let escaped = bytes.get(src + 1).copied();
                if matches!(escaped, Some(b'\'' | b'!')) && bytes.get(src + 2) == Some(&b'\'') {
                    out.extend(escaped);
                    src += 2;
                    continue;
                }
                return Some((out, Some(src)));
            }
            Some(_) => return Some((out, Some(src))),
        }
    }
}

/// git's `split_cmdline`: whitespace separates words; single and double quotes group;
/// backslash escapes outside single quotes. `None` for an unclosed quote or a trailing
/// backslash (git refuses such an alias).
fn split_cmdline(text: &str) -> Option<Vec<String>> {
    let bytes = text.as_bytes();
    let mut words = Vec::new();
    let mut word = Vec::new();
    let mut quote = 0u8;
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        if quote == 0 && c_isspace(c) {
            words.push(std::mem::take(&mut word));
            i += 1;
            while bytes.get(i).is_some_and(|b| c_isspace(*b)) {
                i += 1;
            }
        } else if quote == 0 && (c == b'\'' || c == b'"') {
            quote = c;
            i += 1;
        } else if quote != 0 && c == quote {
            quote = 0;
            i += 1;
        } else {
            let mut c = c;
            if c == b'\\' && quote != b'\'' {
                i += 1;
                c = *bytes.get(i)?;
            }
            word.push(c);
            i += 1;
        }
    }
    if quote != 0 {
        return None;
    }
    words.push(word);
    Some(
        words
            .into_iter()
            .map(|w| String::from_utf8_lossy(&w).into_owned())
            .collect(),
    )
}

/// C's `isspace` in the "C" locale.
fn c_isspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// git's autocorrection score for `candidate` when `cmd` was typed, if it is below the floor.
fn similarity(cmd: &str, candidate: &str) -> Option<usize> {
    // Each extra typed byte costs a deletion (3), each missing one an insertion (1): skip the
    // quadratic computation when the lengths alone put the score over the floor.
    let (typed, wanted) = (cmd.len(), candidate.len());
    if typed > wanted + 1 || wanted > typed + SIMILARITY_FLOOR {
        return None;
    }
    let score = levenshtein(cmd.as_bytes(), candidate.as_bytes()) + 1;
    (score < SIMILARITY_FLOOR).then_some(score)
}

/// git's weighted Damerau-Levenshtein distance as used for autocorrection: swap 0,
/// substitution 2, insertion 1, deletion 3 (from `typed` to `candidate`).
fn levenshtein(typed: &[u8], candidate: &[u8]) -> usize {
    const SWAP: usize = 0;
    const SUBSTITUTE: usize = 2;
    const INSERT: usize = 1;
    const DELETE: usize = 3;
    let len2 = candidate.len();
    let mut row0 = vec![0usize; len2 + 1];
    let mut row1: Vec<usize> = (0..=len2).map(|j| j * INSERT).collect();
    let mut row2 = vec![0usize; len2 + 1];
    for (i, &a) in typed.iter().enumerate() {
        row2[0] = (i + 1) * DELETE;
        for (j, &b) in candidate.iter().enumerate() {
            let mut cost = row1[j] + if a == b { 0 } else { SUBSTITUTE };
            if i > 0 && j > 0 && typed[i - 1] == b && a == candidate[j - 1] {
                cost = cost.min(row0[j - 1] + SWAP);
            }
            cost = cost.min(row1[j + 1] + DELETE);
            cost = cost.min(row2[j] + INSERT);
            row2[j + 1] = cost;
        }
        std::mem::swap(&mut row0, &mut row1);
        std::mem::swap(&mut row1, &mut row2);
    }
    row1[len2]
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOW: bool = true;
    const BLOCK: bool = false;

    fn strings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn decide_with(args: &[String], aliases: &[(&str, &str)], env: &[(&str, &str)]) -> Decision {
        let aliases = strings(aliases);
        let env = strings(env);
        decide(
            args,
            &Context {
                aliases: &aliases,
                env: &env,
            },
        )
    }

    fn reason_of(decision: &Decision) -> Option<&str> {
        match decision {
            Decision::Allow => None,
            Decision::Block { reason } => Some(reason),
        }
    }

    /// Runs a table of whitespace-split command lines with no aliases and no environment.
    fn check(cases: &[(&str, bool)]) {
        check_with(cases, &[], &[]);
    }

    fn check_with(cases: &[(&str, bool)], aliases: &[(&str, &str)], env: &[(&str, &str)]) {
        let mut failures = Vec::new();
        for (line, allow) in cases {
            let got = decide_with(&argv(line), aliases, env);
            if (got == Decision::Allow) != *allow {
                let want = if *allow { "Allow" } else { "Block" };
                failures.push(format!("git {line}: wanted {want}, got {got:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn read_commands_pass_through() {
        check(&[
            ("status", ALLOW),
            ("status --porcelain=v2", ALLOW),
            ("log --oneline -n 5", ALLOW),
            ("show HEAD:src/main.rs", ALLOW),
            ("diff --cached", ALLOW),
            ("grep -n foo", ALLOW),
            ("blame src/lib.rs", ALLOW),
            ("ls-files -z", ALLOW),
            ("ls-tree -r HEAD", ALLOW),
            ("rev-parse --show-toplevel", ALLOW),
            ("rev-list --count HEAD", ALLOW),
            ("cat-file -p HEAD", ALLOW),
            ("describe --tags", ALLOW),
            ("shortlog -sn", ALLOW),
            ("whatchanged", ALLOW),
            ("cherry -v main", ALLOW),
            ("range-diff a...b", ALLOW),
            ("merge-base HEAD main", ALLOW),
            ("name-rev HEAD", ALLOW),
            ("for-each-ref refs/heads", ALLOW),
            ("show-ref --heads", ALLOW),
            ("check-ignore -v target", ALLOW),
            ("check-attr -a file", ALLOW),
            ("count-objects -v", ALLOW),
            ("fsck", ALLOW),
            ("var GIT_EDITOR", ALLOW),
            ("format-patch -1 -o /tmp/p", ALLOW),
            ("diff-tree -r HEAD", ALLOW),
            ("diff-files", ALLOW),
            ("diff-index HEAD", ALLOW),
            ("ls-remote origin", ALLOW),
            ("write-tree", ALLOW),
            ("commit-graph write", ALLOW),
            ("mktree", ALLOW),
            ("mktag", ALLOW),
            ("archive HEAD -o /tmp/a.tar", ALLOW),
            ("clone https://example.com/r.git /tmp/r", ALLOW),
            ("merge-tree --write-tree a b", ALLOW),
            ("version", ALLOW),
            ("help", ALLOW),
            ("frobnicate --all", ALLOW),
        ]);
    }

    #[test]
    fn no_subcommand_is_allowed() {
        check(&[
            ("", ALLOW),
            ("--no-pager", ALLOW),
            ("-C dir", ALLOW),
            ("-c user.name=x", ALLOW),
        ]);
    }

    #[test]
    fn global_options_are_walked_before_the_subcommand() {
        check(&[
            ("-C dir -c x=y --git-dir=.git commit -m wip", BLOCK),
            ("-C dir -c x=y --git-dir=.git status", ALLOW),
            ("--git-dir .git --work-tree . commit", BLOCK),
            ("--git-dir .git --work-tree . log", ALLOW),
            ("--work-tree=. --namespace ns push", BLOCK),
            ("--namespace=ns log", ALLOW),
            ("-p log", ALLOW),
            ("--paginate reset --hard", BLOCK),
            ("-P commit", BLOCK),
            ("--no-pager diff", ALLOW),
            (
                "--bare --no-replace-objects --no-lazy-fetch --literal-pathspecs --glob-pathspecs \
                 --noglob-pathspecs --icase-pathspecs --no-optional-locks --no-advice rebase main",
                BLOCK,
            ),
            (
                "--bare --no-replace-objects --no-lazy-fetch --literal-pathspecs --glob-pathspecs \
                 --noglob-pathspecs --icase-pathspecs --no-optional-locks --no-advice log",
                ALLOW,
            ),
            ("--exec-path=/opt/git commit", BLOCK),
            ("--exec-path=/opt/git status", ALLOW),
            ("--super-prefix=sub/ commit", BLOCK),
            ("--super-prefix sub/ commit", BLOCK),
            ("--attr-source HEAD add .", BLOCK),
            ("--attr-source=HEAD diff", ALLOW),
            ("--shallow-file f reset", BLOCK),
            ("--list-cmds main commit", BLOCK),
            ("--config-env=core.editor=EDITOR commit", BLOCK),
            ("--config-env core.editor=EDITOR status", ALLOW),
            ("-C commit status", ALLOW),
            ("-c commit status", ALLOW),
            ("--git-dir commit log", ALLOW),
        ]);
    }

    #[test]
    fn options_that_make_git_exit_allow_the_call() {
        check(&[
            ("--exec-path", ALLOW),
            ("--exec-path commit", ALLOW),
            ("--html-path", ALLOW),
            ("--man-path commit", ALLOW),
            ("--info-path", ALLOW),
            ("--list-cmds=main,others", ALLOW),
        ]);
    }

    #[test]
    fn unrecognised_global_options_are_blocked() {
        check(&[
            ("--frobnicate commit", BLOCK),
            ("--frobnicate status", BLOCK),
            ("-cuser.name=x commit", BLOCK),
            ("- status", BLOCK),
        ]);
        let got = decide_with(&argv("--frobnicate status"), &[], &[]);
        assert_eq!(reason_of(&got), Some(UNKNOWN_OPTION));
    }

    #[test]
    fn help_forms_of_blocked_commands_are_allowed() {
        check(&[
            ("commit --help", ALLOW),
            ("help commit", ALLOW),
            ("commit -h", ALLOW),
            ("push --help", ALLOW),
            ("reset -h", ALLOW),
            ("--help commit", ALLOW),
            ("-h", ALLOW),
            ("--help", ALLOW),
            ("--version", ALLOW),
            ("-v commit", ALLOW),
            ("-c x=y --version", ALLOW),
            ("-C dir rebase --help", ALLOW),
            ("branch -h", ALLOW),
            ("stash -h", ALLOW),
            // -h among other arguments is not the help form.
            ("commit -m -h", BLOCK),
            ("commit -h -m x", BLOCK),
        ]);
    }

    #[test]
    fn history_writers_are_blocked() {
        check(&[
            ("commit -m wip", BLOCK),
            ("commit --amend --no-edit", BLOCK),
            ("commit-tree HEAD^{tree}", BLOCK),
            ("merge feature", BLOCK),
            ("merge --abort", BLOCK),
            ("rebase -i HEAD~3", BLOCK),
            ("revert HEAD", BLOCK),
            ("cherry-pick abc123", BLOCK),
            ("am 0001.patch", BLOCK),
            ("pull", BLOCK),
            ("pull --rebase origin main", BLOCK),
            ("filter-branch --tree-filter x", BLOCK),
            ("filter-repo --path src", BLOCK),
            ("replay --onto main a..b", BLOCK),
            ("COMMIT -m x", BLOCK),
        ]);
        let got = decide_with(&argv("commit -m x"), &[], &[]);
        assert_eq!(reason_of(&got), Some(HISTORY));
    }

    #[test]
    fn work_tree_and_index_writers_are_blocked() {
        check(&[
            ("reset", BLOCK),
            ("reset --hard HEAD~1", BLOCK),
            ("checkout main", BLOCK),
            ("checkout -- src/lib.rs", BLOCK),
            ("checkout -b topic", BLOCK),
            ("switch -c topic", BLOCK),
            ("restore src/lib.rs", BLOCK),
            ("restore --staged .", BLOCK),
            ("clean -fdx", BLOCK),
            ("clean -f -n", BLOCK),
            ("clean --no-dry-run -n", BLOCK),
            ("rm file", BLOCK),
            ("rm --cached file", BLOCK),
            ("mv a b", BLOCK),
            ("add .", BLOCK),
            ("add -p", BLOCK),
            ("stage file", BLOCK),
            ("update-index --refresh", BLOCK),
            ("read-tree HEAD", BLOCK),
            ("checkout-index -a -f", BLOCK),
            ("mergetool", BLOCK),
            ("gc --prune=now", BLOCK),
            ("prune", BLOCK),
            ("repack -ad", BLOCK),
            ("maintenance run", BLOCK),
            ("init", BLOCK),
            ("init-db", BLOCK),
        ]);
        assert_eq!(
            reason_of(&decide_with(&argv("add ."), &[], &[])),
            Some(INDEX)
        );
        assert_eq!(
            reason_of(&decide_with(&argv("reset --hard"), &[], &[])),
            Some(DISCARD)
        );
    }

    #[test]
    fn clean_is_allowed_as_a_dry_run_only() {
        check(&[
            ("clean -n", ALLOW),
            ("clean --dry-run -d", ALLOW),
            ("clean -ndx", ALLOW),
            ("clean -n -e target", ALLOW),
            ("clean -nd -- src", ALLOW),
            ("clean -d", BLOCK),
            ("clean -ni", BLOCK),
        ]);
    }

    #[test]
    fn ref_writers_and_publishers_are_blocked() {
        check(&[
            ("update-ref refs/heads/x HEAD", BLOCK),
            ("pack-refs --all", BLOCK),
            ("fast-import", BLOCK),
            ("push origin main", BLOCK),
            ("push --dry-run", BLOCK),
            ("send-email 0001.patch", BLOCK),
            ("request-pull v1 origin", BLOCK),
            ("daemon --export-all", BLOCK),
            ("instaweb", BLOCK),
            ("http-backend", BLOCK),
            ("send-pack remote", BLOCK),
            ("credential fill", BLOCK),
            ("credential-store get", BLOCK),
            ("credential-osxkeychain get", BLOCK),
        ]);
        assert_eq!(
            reason_of(&decide_with(&argv("push"), &[], &[])),
            Some(PUBLISHES)
        );
    }

    #[test]
    fn stash_is_blocked_except_list_and_show() {
        check(&[
            ("stash", BLOCK),
            ("stash push -m x", BLOCK),
            ("stash -u", BLOCK),
            ("stash pop", BLOCK),
            ("stash apply", BLOCK),
            ("stash drop", BLOCK),
            ("stash clear", BLOCK),
            ("stash branch b", BLOCK),
            ("stash store abc", BLOCK),
            ("stash create", BLOCK),
            ("stash save wip", BLOCK),
            ("stash list", ALLOW),
            ("stash show -p stash@{0}", ALLOW),
        ]);
    }

    #[test]
    fn branch_lists_but_never_writes() {
        check(&[
            ("branch", ALLOW),
            ("branch -l", ALLOW),
            ("branch --list feat*", ALLOW),
            ("branch -a", ALLOW),
            ("branch -r", ALLOW),
            ("branch -v", ALLOW),
            ("branch -vv", ALLOW),
            ("branch -av", ALLOW),
            ("branch --show-current", ALLOW),
            ("branch --contains HEAD", ALLOW),
            ("branch --contains", ALLOW),
            ("branch --merged", ALLOW),
            ("branch --no-merged main", ALLOW),
            ("branch --points-at HEAD", ALLOW),
            ("branch --format=%(refname:short)", ALLOW),
            ("branch --format %(refname)", ALLOW),
            ("branch --sort=-committerdate", ALLOW),
            ("branch --sort refname", ALLOW),
            ("branch --column", ALLOW),
            ("branch --no-column", ALLOW),
            ("branch --color=always", ALLOW),
            ("branch --no-color", ALLOW),
            ("branch topic", BLOCK),
            ("branch topic main", BLOCK),
            ("branch -v topic", BLOCK),
            ("branch -a topic", BLOCK),
            ("branch --sort=refname topic", BLOCK),
            ("branch -d topic", BLOCK),
            ("branch -D topic", BLOCK),
            ("branch --delete topic", BLOCK),
            ("branch --del topic", BLOCK),
            ("branch -m a b", BLOCK),
            ("branch -M b", BLOCK),
            ("branch --move a b", BLOCK),
            ("branch -c a b", BLOCK),
            ("branch -C a b", BLOCK),
            ("branch --copy a b", BLOCK),
            ("branch -f topic HEAD", BLOCK),
            ("branch --force topic", BLOCK),
            ("branch -u origin/topic", BLOCK),
            ("branch --set-upstream-to=origin/topic", BLOCK),
            ("branch --unset-upstream", BLOCK),
            ("branch --edit-description", BLOCK),
            ("branch -t topic origin/topic", BLOCK),
            ("branch --track topic origin/topic", BLOCK),
            ("branch --no-track topic origin/topic", BLOCK),
            ("branch --list -d topic", BLOCK),
            ("branch --contains -D topic", BLOCK),
            ("branch -- topic", BLOCK),
        ]);
    }

    #[test]
    fn tag_lists_and_verifies_but_never_writes() {
        check(&[
            ("tag", ALLOW),
            ("tag -l", ALLOW),
            ("tag --list v1.*", ALLOW),
            ("tag -l -n3 v*", ALLOW),
            ("tag -n", ALLOW),
            ("tag -v v1.0", ALLOW),
            ("tag --verify v1.0", ALLOW),
            ("tag --contains HEAD", ALLOW),
            ("tag --points-at HEAD", ALLOW),
            ("tag --sort=-v:refname", ALLOW),
            ("tag v1.0", BLOCK),
            ("tag v1.0 HEAD~2", BLOCK),
            ("tag -d v1.0", BLOCK),
            ("tag -a v1.0 -m msg", BLOCK),
            ("tag -s v1.0", BLOCK),
            ("tag -m msg v1.0", BLOCK),
            ("tag -f v1.0", BLOCK),
            ("tag -l -f v1.0", BLOCK),
        ]);
    }

    #[test]
    fn config_reads_but_never_writes() {
        check(&[
            ("config user.name", ALLOW),
            ("config --get user.name", ALLOW),
            ("config --get-all remote.origin.fetch", ALLOW),
            ("config --get-regexp ^alias\\.", ALLOW),
            ("config --get-urlmatch http https://x", ALLOW),
            ("config -l", ALLOW),
            ("config --list --show-origin", ALLOW),
            ("config --global --list", ALLOW),
            ("config -f .gitmodules --get-regexp path", ALLOW),
            ("config --type=bool --get core.bare", ALLOW),
            ("config get user.name", ALLOW),
            ("config list --global", ALLOW),
            ("config user.name Mallory", BLOCK),
            ("config --global user.name Mallory", BLOCK),
            ("config set user.name x", BLOCK),
            ("config unset user.name", BLOCK),
            ("config rename-section a b", BLOCK),
            ("config remove-section a", BLOCK),
            ("config edit", BLOCK),
            ("config -e", BLOCK),
            ("config --edit", BLOCK),
            ("config --add a.b c", BLOCK),
            ("config --unset user.name", BLOCK),
            ("config --unset-all user.name", BLOCK),
            ("config --replace-all a.b c", BLOCK),
            ("config --rename-section a b", BLOCK),
            ("config --remove-section a", BLOCK),
            ("config --list --unset a.b", BLOCK),
        ]);
        assert_eq!(
            reason_of(&decide_with(&argv("config a.b c"), &[], &[])),
            Some(CONFIG)
        );
    }

    #[test]
    fn remote_reads_but_never_writes() {
        check(&[
            ("remote", ALLOW),
            ("remote -v", ALLOW),
            ("remote show origin", ALLOW),
            ("remote -v show origin", ALLOW),
            ("remote get-url origin", ALLOW),
            ("remote add fork https://x", BLOCK),
            ("remote remove origin", BLOCK),
            ("remote rm origin", BLOCK),
            ("remote rename origin upstream", BLOCK),
            ("remote set-url origin https://x", BLOCK),
            ("remote set-head origin -a", BLOCK),
            ("remote set-branches origin main", BLOCK),
            ("remote prune origin", BLOCK),
            ("remote update", BLOCK),
        ]);
    }

    #[test]
    fn reflog_shows_but_never_expires() {
        check(&[
            ("reflog", ALLOW),
            ("reflog show main", ALLOW),
            ("reflog HEAD", ALLOW),
            ("reflog exists refs/heads/main", ALLOW),
            ("reflog list", ALLOW),
            ("reflog expire --expire=now --all", BLOCK),
            ("reflog delete HEAD@{1}", BLOCK),
            ("reflog drop main", BLOCK),
        ]);
    }

    #[test]
    fn notes_worktree_sparse_checkout_and_submodule_read_forms_only() {
        check(&[
            ("notes", ALLOW),
            ("notes list", ALLOW),
            ("notes show HEAD", ALLOW),
            ("notes --ref=review show HEAD", ALLOW),
            ("notes --ref review list", ALLOW),
            ("notes add -m x", BLOCK),
            ("notes append -m x", BLOCK),
            ("notes copy a b", BLOCK),
            ("notes edit", BLOCK),
            ("notes merge other", BLOCK),
            ("notes remove HEAD", BLOCK),
            ("notes prune", BLOCK),
            ("notes --ref review add -m x", BLOCK),
            ("worktree list", ALLOW),
            ("worktree list --porcelain", ALLOW),
            ("worktree add ../x", BLOCK),
            ("worktree remove ../x", BLOCK),
            ("worktree move a b", BLOCK),
            ("worktree prune", BLOCK),
            ("worktree lock x", BLOCK),
            ("worktree unlock x", BLOCK),
            ("worktree repair", BLOCK),
            ("sparse-checkout list", ALLOW),
            ("sparse-checkout set src", BLOCK),
            ("sparse-checkout add docs", BLOCK),
            ("sparse-checkout reapply", BLOCK),
            ("sparse-checkout init --cone", BLOCK),
            ("sparse-checkout disable", BLOCK),
            ("submodule", ALLOW),
            ("submodule status --recursive", ALLOW),
            ("submodule summary", ALLOW),
            ("submodule --quiet status", ALLOW),
            ("submodule update --init", BLOCK),
            ("submodule add https://x sub", BLOCK),
            ("submodule foreach git reset --hard", BLOCK),
            ("submodule deinit sub", BLOCK),
        ]);
    }

    #[test]
    fn apply_is_allowed_unless_it_touches_the_index() {
        check(&[
            ("apply fix.patch", ALLOW),
            ("apply --check fix.patch", ALLOW),
            ("apply --stat fix.patch", ALLOW),
            ("apply --numstat fix.patch", ALLOW),
            ("apply --summary fix.patch", ALLOW),
            ("apply -p1 -R fix.patch", ALLOW),
            ("apply -C3 fix.patch", ALLOW),
            ("apply --index fix.patch", BLOCK),
            ("apply --cached fix.patch", BLOCK),
            ("apply --3way fix.patch", BLOCK),
            ("apply -3 fix.patch", BLOCK),
            ("apply -v3 fix.patch", BLOCK),
            ("apply --ind fix.patch", BLOCK),
            ("apply --cach fix.patch", BLOCK),
            ("apply -N fix.patch", BLOCK),
            ("apply --intent-to-add fix.patch", BLOCK),
        ]);
    }

    #[test]
    fn fetch_is_allowed_as_a_dry_run_only() {
        check(&[
            ("fetch --dry-run", ALLOW),
            ("fetch --dry-run origin main:main", ALLOW),
            ("fetch -v --dry-run --prune origin", ALLOW),
            ("fetch", BLOCK),
            ("fetch origin", BLOCK),
            ("fetch origin main:main", BLOCK),
            ("fetch --prune", BLOCK),
            ("fetch --dry-run --no-dry-run", BLOCK),
            ("fetch --dry-run --no-dry", BLOCK),
            ("fetch --upload-pack --dry-run origin", BLOCK),
            ("fetch --upload --dry-run origin", BLOCK),
            ("fetch --dry-run --set-upstream origin main", BLOCK),
            ("fetch --dry-run --unshallow", BLOCK),
            ("fetch --dry-run -u origin", BLOCK),
        ]);
    }

    #[test]
    fn symbolic_ref_reads_one_name_only() {
        check(&[
            ("symbolic-ref HEAD", ALLOW),
            ("symbolic-ref --short HEAD", ALLOW),
            ("symbolic-ref -q HEAD", ALLOW),
            ("symbolic-ref HEAD refs/heads/x", BLOCK),
            ("symbolic-ref -m why HEAD refs/heads/x", BLOCK),
            ("symbolic-ref -d HEAD", BLOCK),
            ("symbolic-ref --delete HEAD", BLOCK),
        ]);
    }

    #[test]
    fn remaining_conditional_commands_allow_their_read_forms() {
        check(&[
            ("bisect log", ALLOW),
            ("bisect terms", ALLOW),
            ("bisect start", BLOCK),
            ("bisect good", BLOCK),
            ("bisect bad HEAD", BLOCK),
            ("bisect reset", BLOCK),
            ("bisect run make test", BLOCK),
            ("hash-object file", ALLOW),
            ("hash-object -t blob file", ALLOW),
            ("hash-object -tw file", ALLOW),
            ("hash-object -w file", BLOCK),
            ("hash-object --stdin -w", BLOCK),
            ("lfs ls-files", ALLOW),
            ("lfs status", ALLOW),
            ("lfs push origin main", BLOCK),
            ("lfs migrate import", BLOCK),
            ("replace", ALLOW),
            ("replace -l", ALLOW),
            ("replace --list --format=long", ALLOW),
            ("replace abc def", BLOCK),
            ("replace -d abc", BLOCK),
            ("refs verify", ALLOW),
            ("refs migrate --ref-format=reftable", BLOCK),
            ("rerere status", ALLOW),
            ("rerere forget path", BLOCK),
            ("for-each-repo --config=maintenance.repo log -1", ALLOW),
            ("for-each-repo --config=maintenance.repo gc", BLOCK),
            (
                "for-each-repo --config maintenance.repo -- commit -m x",
                BLOCK,
            ),
            ("shell -c git-receive-pack", BLOCK),
        ]);
    }

    #[test]
    fn every_blocked_command_is_blocked_with_any_arguments() {
        for (name, reason) in BLOCKED {
            for tail in ["", " --dry-run", " -n", " list"] {
                let got = decide_with(&argv(&format!("{name}{tail}")), &[], &[]);
                assert_eq!(reason_of(&got), Some(*reason), "git {name}{tail}");
            }
        }
    }

    #[test]
    fn every_table_command_is_known() {
        let guard = Guard::new(&[]);
        let frame = Frame {
            depth: 0,
            top_level: true,
            hypothetical: false,
        };
        let aliases = Aliases::default();
        for name in BLOCKED
            .iter()
            .map(|(n, _)| *n)
            .chain(CONDITIONAL.iter().copied())
            .chain(ALLOWED.iter().copied())
        {
            assert!(
                guard.rule(name, &[], &aliases, frame).is_some(),
                "{name} has no rule"
            );
        }
        for name in ALLOWED {
            assert_eq!(
                decide_with(&argv(name), &[], &[]),
                Decision::Allow,
                "git {name}"
            );
        }
    }

    #[test]
    fn aliases_from_the_callers_config_are_resolved() {
        let aliases = [
            ("ci", "commit -v"),
            ("st", "status -sb"),
            ("lg", "log --graph --oneline"),
            ("alias.unstage", "reset HEAD --"),
            ("alias.Fixup.command", "commit --fixup"),
            ("br", "branch"),
        ];
        check_with(
            &[
                ("ci -m x", BLOCK),
                ("st", ALLOW),
                ("lg -n 3", ALLOW),
                ("unstage file", BLOCK),
                ("Fixup HEAD", BLOCK),
                ("br", ALLOW),
                ("br -a", ALLOW),
                ("br -D topic", BLOCK),
                ("-C dir ci", BLOCK),
                ("ci --help", ALLOW),
            ],
            &aliases,
            &[],
        );
    }

    #[test]
    fn alias_names_are_case_insensitive() {
        check_with(
            &[("CI -m x", BLOCK), ("Ci", BLOCK), ("ST", ALLOW)],
            &[("ci", "commit"), ("st", "status")],
            &[],
        );
        check(&[
            ("-c alias.CI=commit ci", BLOCK),
            ("-c Alias.Ci=commit CI", BLOCK),
        ]);
    }

    #[test]
    fn aliases_from_dash_c_in_argv_are_resolved() {
        check(&[
            ("-c alias.ci=commit ci -m x", BLOCK),
            ("-c alias.s=status s", ALLOW),
            ("-c alias.x.command=reset x", BLOCK),
            ("-c alias.x=!sh x", BLOCK),
        ]);
    }

    #[test]
    fn aliases_from_git_config_count_are_resolved() {
        let env = [
            ("GIT_CONFIG_COUNT", "2"),
            ("GIT_CONFIG_KEY_0", "alias.ci"),
            ("GIT_CONFIG_VALUE_0", "commit -a"),
            ("GIT_CONFIG_KEY_1", "alias.s"),
            ("GIT_CONFIG_VALUE_1", "status"),
        ];
        check_with(&[("ci", BLOCK), ("s", ALLOW)], &[], &env);
        // Entries past the count are not read.
        let env = [
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "alias.s"),
            ("GIT_CONFIG_VALUE_0", "status"),
            ("GIT_CONFIG_KEY_1", "alias.s"),
            ("GIT_CONFIG_VALUE_1", "commit"),
        ];
        check_with(&[("s", ALLOW)], &[], &env);
    }

    #[test]
    fn aliases_from_git_config_parameters_are_resolved() {
        check_with(
            &[("ci", BLOCK), ("s", ALLOW)],
            &[],
            &[(
                "GIT_CONFIG_PARAMETERS",
                "'core.pager=less' 'alias.ci=commit -m x' 'alias.s=status'",
            )],
        );
        check_with(
            &[("ci", BLOCK), ("s", ALLOW), ("q", BLOCK)],
            &[],
            &[(
                "GIT_CONFIG_PARAMETERS",
                "'alias.ci'='commit' 'alias.flag'= 'alias.s'='status' \
                 'alias.q'='!echo '\\''hi'\\'''",
            )],
        );
    }

    #[test]
    fn aliases_from_config_env_are_resolved() {
        check_with(
            &[
                ("--config-env alias.ci=CI_EXPANSION ci", BLOCK),
                ("--config-env=alias.ci=CI_EXPANSION ci", BLOCK),
                ("--config-env=alias.s=S_EXPANSION s", ALLOW),
            ],
            &[],
            &[
                ("CI_EXPANSION", "commit --amend"),
                ("S_EXPANSION", "status"),
            ],
        );
    }

    #[test]
    fn later_alias_definitions_win() {
        let env = [
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "alias.x"),
            ("GIT_CONFIG_VALUE_0", "status"),
            ("GIT_CONFIG_PARAMETERS", "'alias.y'='commit'"),
        ];
        // ctx < GIT_CONFIG_COUNT < GIT_CONFIG_PARAMETERS < argv.
        check_with(
            &[
                ("x", ALLOW),
                ("y", BLOCK),
                ("-c alias.y=log y", ALLOW),
                ("-c alias.x=commit x", BLOCK),
                ("-c alias.x=commit -c alias.x=status x", ALLOW),
            ],
            &[("x", "commit"), ("y", "log")],
            &env,
        );
    }

    #[test]
    fn nested_aliases_are_followed() {
        let aliases = [
            ("a", "b --verbose"),
            ("b", "c"),
            ("c", "commit"),
            ("l", "ll"),
            ("ll", "log --oneline"),
            ("opts", "-c alias.inner=reset inner"),
        ];
        check_with(
            &[("a", BLOCK), ("l", ALLOW), ("opts", BLOCK)],
            &aliases,
            &[],
        );
    }

    #[test]
    fn alias_loops_and_deep_chains_are_blocked() {
        let aliases = [("a", "b"), ("b", "a"), ("self", "self --x")];
        for line in ["a", "b", "self"] {
            let got = decide_with(&argv(line), &aliases, &[]);
            assert_eq!(reason_of(&got), Some(ALIAS_LOOP), "git {line}");
        }
        let chain: Vec<(String, String)> = (0..12)
            .map(|i| (format!("x{i}"), format!("x{}", i + 1)))
            .chain(std::iter::once(("x12".to_string(), "status".to_string())))
            .collect();
        let chain_refs: Vec<(&str, &str)> = chain
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let got = decide_with(&argv("x0"), &chain_refs, &[]);
        assert_eq!(reason_of(&got), Some(ALIAS_LOOP));
        assert_eq!(decide_with(&argv("x5"), &chain_refs, &[]), Decision::Allow);
    }

    #[test]
    fn shell_aliases_are_blocked() {
        let got = decide_with(
            &argv("wip"),
            &[("wip", "!git add -A && git commit -m wip")],
            &[],
        );
        assert_eq!(reason_of(&got), Some(SHELL_ALIAS));
        let got = decide_with(&argv("hi -h"), &[("hi", "!echo hi")], &[]);
        assert_eq!(reason_of(&got), Some(SHELL_ALIAS));
    }

    #[test]
    fn aliases_shadowing_git_commands_cannot_hide_a_write() {
        check_with(
            &[
                ("log", ALLOW),
                ("status", BLOCK),
                ("commit", BLOCK),
                ("diff --stat", ALLOW),
            ],
            &[
                ("log", "log --oneline"),
                ("status", "commit -a"),
                ("commit", "status"),
                ("diff", "d"),
                ("d", "diff --color"),
            ],
            &[],
        );
    }

    #[test]
    fn malformed_aliases_are_blocked() {
        check_with(
            &[("q", BLOCK), ("bs", BLOCK), ("opts", BLOCK), ("dir", BLOCK)],
            &[
                ("q", "log 'unclosed"),
                ("bs", "log \\"),
                ("opts", "-c x=y"),
                ("dir", "--frobnicate log"),
            ],
            &[],
        );
        check_with(
            &[("quoted", ALLOW)],
            &[("quoted", "log --format='%h %s'")],
            &[],
        );
    }

    #[test]
    fn autocorrection_to_a_blocked_command_is_blocked() {
        check(&[
            // Near-certain typos: a transposition or a missing letter.
            ("comit -m x", BLOCK),
            ("cmomit", BLOCK),
            ("psuh", BLOCK),
            ("brnach -D topic", BLOCK),
            ("stsah", BLOCK),
            ("brnach", ALLOW),
            ("stsah list", ALLOW),
            // A prefix of a common command is never autocorrected.
            ("comm", ALLOW),
            ("frobnicate", ALLOW),
            ("foo", ALLOW),
            // Third-party extensions git may find on PATH.
            ("flow init", ALLOW),
            ("crypt unlock", ALLOW),
            ("annex get", ALLOW),
            ("secrets --scan", ALLOW),
            ("sizer", ALLOW),
            ("standup", ALLOW),
            ("extras", ALLOW),
            ("info", ALLOW),
            ("sync", ALLOW),
            // Farther typos only count where autocorrection may be on.
            ("pussh", ALLOW),
            ("commitx", ALLOW),
            ("-c help.autocorrect=immediate pussh", BLOCK),
            ("-c Help.AutoCorrect=1 commitx", BLOCK),
            ("-c help.autocorrect=10 info", BLOCK),
        ]);
        check_with(
            &[("pussh", BLOCK), ("commitx", BLOCK), ("frobnicate", ALLOW)],
            &[],
            &[("GIT_CONFIG_PARAMETERS", "'help.autocorrect'='immediate'")],
        );
        check_with(
            &[("pussh", BLOCK), ("comm", ALLOW)],
            &[],
            &[("GIT_CONFIG_GLOBAL", "/tmp/worker.gitconfig")],
        );
        let got = decide_with(&argv("comit"), &[], &[]);
        assert_eq!(
            reason_of(&got),
            Some("may autocorrect to commit (changes history)")
        );
        // Aliases are candidates too.
        check_with(&[("shp", BLOCK)], &[("ship", "push")], &[]);
    }

    #[test]
    fn common_alias_names_are_not_mistaken_for_typos() {
        // The caller may decide once without the user's aliases first: those names must not
        // be refused as typos of blocked commands.
        check(&[
            ("ci", ALLOW),
            ("st", ALLOW),
            ("co", ALLOW),
            ("br", ALLOW),
            ("lg", ALLOW),
            ("ll", ALLOW),
            ("last", ALLOW),
            ("hist", ALLOW),
            ("unstage", ALLOW),
            ("amend", ALLOW),
            ("wip", ALLOW),
            ("up", ALLOW),
            ("cm", ALLOW),
            ("rb", ALLOW),
            ("dc", ALLOW),
            ("save", ALLOW),
            ("staged", ALLOW),
            ("tags", ALLOW),
            ("branches", ALLOW),
        ]);
    }

    #[test]
    fn config_includes_are_blocked() {
        check(&[
            ("-c include.path=/tmp/evil.cfg zzz", BLOCK),
            ("-c includeIf.gitdir:/.path=/tmp/evil.cfg status", BLOCK),
        ]);
        check_with(
            &[("status", BLOCK)],
            &[],
            &[("GIT_CONFIG_PARAMETERS", "'include.path'='/tmp/evil.cfg'")],
        );
        check_with(
            &[("x", BLOCK)],
            &[("x", "-c include.path=/tmp/evil.cfg zzz")],
            &[],
        );
        let got = decide_with(&argv("-c include.path=/x log"), &[], &[]);
        assert_eq!(reason_of(&got), Some(INCLUDES));
    }

    #[test]
    fn refusal_line_names_the_subcommand_and_reason() {
        assert_eq!(
            refusal_line(&argv("-C dir -c x=y commit -m wip"), "changes history"),
            "pitroom: git commit is blocked inside a Pitroom worker: changes history. \
             The primary agent reviews and commits."
        );
        assert_eq!(
            refusal_line(&argv("ci"), "changes history."),
            "pitroom: git ci is blocked inside a Pitroom worker: changes history. \
             The primary agent reviews and commits."
        );
        let odd = refusal_line(&["re\nset".to_string()], "can\rdiscard");
        assert!(!odd.contains('\n') && !odd.contains('\r'), "{odd}");
        assert!(refusal_line(&[], "x").starts_with("pitroom: git is blocked"));
        assert!(refusal_line(&[String::new()], "x").starts_with("pitroom: git \"\" is blocked"));
    }

    #[test]
    fn odd_argv_never_panics() {
        let odd: Vec<Vec<String>> = vec![
            vec!["-c".into()],
            vec!["-C".into()],
            vec!["--git-dir".into()],
            vec!["--config-env".into()],
            vec!["--config-env".into(), "novalue".into()],
            vec!["--config-env=alias.x=".into(), "x".into()],
            vec!["-c".into(), "=".into(), "x".into()],
            vec!["-c".into(), "alias.".into(), "x".into()],
            vec![
                "-c".into(),
                "alias..command=commit".into(),
                "command".into(),
            ],
            vec!["".into()],
            vec!["".into(), "".into()],
            vec!["-".into()],
            vec!["--".into()],
            vec!["--=".into()],
            vec!["ünïcödé".into(), "-ü".into()],
            vec!["branch".into(), "-ü".into(), "--ü=ü".into()],
            vec!["tag".into(), "-né".into()],
            vec!["fetch".into(), "-oé".into(), "-jé".into()],
            vec!["apply".into(), "-é3".into()],
            vec!["config".into(), "-f".into()],
            vec!["for-each-repo".into(), "--config".into()],
            vec!["notes".into(), "--ref".into()],
            vec!["\u{0}".into(), "\u{7f}".into()],
            vec!["-c".into(), "alias.x=\\".into(), "x".into()],
            vec!["-c".into(), "alias.x='".into(), "x".into()],
            vec!["-c".into(), "alias.x=".into(), "x".into()],
            vec!["-c".into(), "alias.x=  ".into(), "x".into()],
        ];
        let envs: Vec<Vec<(String, String)>> = vec![
            vec![],
            strings(&[("GIT_CONFIG_COUNT", "99999999999999999999")]),
            strings(&[("GIT_CONFIG_COUNT", "-1")]),
            strings(&[("GIT_CONFIG_COUNT", "4294967295")]),
            strings(&[("GIT_CONFIG_COUNT", "ü")]),
            strings(&[("GIT_CONFIG_PARAMETERS", "'")]),
            strings(&[("GIT_CONFIG_PARAMETERS", "'a'='")]),
            strings(&[("GIT_CONFIG_PARAMETERS", "'a'\\")]),
            strings(&[("GIT_CONFIG_PARAMETERS", "'alias.x'=x")]),
            strings(&[("GIT_CONFIG_PARAMETERS", "'ü'='é' 'alias.é'='ü'")]),
            strings(&[("GIT_CONFIG_PARAMETERS", "   ")]),
        ];
        let aliases = strings(&[("", ""), ("alias.", "x"), ("x", "x"), ("é", "!")]);
        for args in &odd {
            for env in &envs {
                let ctx = Context {
                    aliases: &aliases,
                    env,
                };
                let decision = decide(args, &ctx);
                if let Decision::Block { reason } = &decision {
                    let _ = refusal_line(args, reason);
                }
            }
        }
    }

    #[test]
    fn random_argv_never_panics() {
        const WORDS: &[&str] = &[
            "-c",
            "-C",
            "--git-dir",
            "--git-dir=",
            "--config-env",
            "alias.a=commit",
            "alias.b=!x",
            "alias.c=a",
            "a",
            "b",
            "c",
            "commit",
            "branch",
            "tag",
            "config",
            "fetch",
            "apply",
            "-",
            "--",
            "-h",
            "--help",
            "-d",
            "-l",
            "--list",
            "=",
            "'",
            "\"",
            "\\",
            "é",
            "",
            "for-each-repo",
            "stash",
            "list",
            "--dry-run",
            "-3",
            "-n",
            "x y",
        ];
        let aliases = strings(&[("a", "b"), ("b", "c -c alias.a=a a"), ("c", "a")]);
        let env = strings(&[("GIT_CONFIG_PARAMETERS", "'alias.z'='for-each-repo z'")]);
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..3000 {
            let mut args = Vec::new();
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let len = (seed >> 59) as usize;
            for _ in 0..len {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                args.push(WORDS[(seed >> 33) as usize % WORDS.len()].to_string());
            }
            let ctx = Context {
                aliases: &aliases,
                env: &env,
            };
            let decision = decide(&args, &ctx);
            let _ = refusal_line(&args, reason_of(&decision).unwrap_or(""));
        }
    }

    #[test]
    fn levenshtein_matches_gits_weights() {
        assert_eq!(levenshtein(b"comit", b"commit"), 1);
        assert_eq!(levenshtein(b"commitx", b"commit"), 3);
        assert_eq!(levenshtein(b"cmomit", b"commit"), 0);
        assert_eq!(levenshtein(b"", b"rm"), 2);
        assert_eq!(levenshtein(b"rm", b""), 6);
    }

    #[test]
    fn split_cmdline_matches_git() {
        assert_eq!(
            split_cmdline("log  --format='%h %s' \"a b\" c\\ d"),
            Some(vec![
                "log".to_string(),
                "--format=%h %s".to_string(),
                "a b".to_string(),
                "c d".to_string(),
            ])
        );
        assert_eq!(
            split_cmdline(" x "),
            Some(vec![String::new(), "x".into(), String::new()])
        );
        assert_eq!(split_cmdline("a 'b"), None);
        assert_eq!(split_cmdline("a \\"), None);
    }
}
