//! Pitroom's worker guard. Layer 1: the decision behind the `git` shim; beside it the non-git
//! floor and the roles the guard's executables play.
//!
//! A crate of its own, on the standard library and `pitroom-env` (the variables' names) alone:
//! the small `pitroom-guard` executable links it and nothing else, and starts on every git call
//! a worker makes. It knows no other Pitroom crate; `pitroom-core` (`guard_env.rs`) writes the
//! worker environment it reads, by the names in [`mod@env`].
//!
//! Inside a worker, `pitroom-guard` (or, as the fallback, the pitroom binary) is first on `PATH`
//! under the name `git`. It hands its argv (without argv\[0\]) to [`decide`], passes the call
//! through to the real git on [`Decision::Allow`] and prints [`refusal_line`] on
//! [`Decision::Block`]. Workers must never
//! change the user's history, refs, index, stash or config, nor throw work away; reading is
//! always fine.
//!
//! The decision is pure: it spawns nothing and reads no files. Everything it knows comes from
//! the argv, the environment and the aliases the caller read from the user's config. The
//! process side — reading the environment and the disk, refusing, `exec`ing the real program —
//! is [`roles`], shared by the small `pitroom-guard` executable and the `pitroom` binary.
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
//!
//! Beside the decision: [`shim`], the rest of the shim's argv model (which repository a call
//! targets, its subcommand, whether the user's aliases are needed, the real git's path);
//! [`mod@env`], the variable and link names shared by the writer of a worker's environment and the
//! shim that reads it; [`floor`], the non-git floor (`sudo`, publishing, other agent CLIs); and
//! [`roles`], the `git`, hook and floor programs themselves, picked by `argv[0]`.

mod aliases;
pub mod env;
mod eval;
pub mod floor;
mod globals;
pub mod roles;
mod rules;
mod scan;
pub mod shim;
mod tables;
#[cfg(test)]
mod tests;

use aliases::Aliases;
use eval::{EvalCtx, Frame, Guard};
use globals::{walk_globals, Walk};

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
        EvalCtx {
            aliases: &aliases,
            frame: Frame {
                depth: 0,
                top_level: true,
                hypothetical: false,
            },
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
