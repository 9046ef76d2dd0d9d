//! Evaluation: one git invocation, its aliases and autocorrection candidates, walked to a verdict.

use std::cell::{Cell, RefCell};

use crate::aliases::{similarity, split_cmdline, Aliases};
use crate::env;
use crate::globals::{env_get, walk_globals, Walk};
use crate::rules::{
    apply_rule, branch_rule, clean_rule, config_rule, fetch_rule, hash_object_rule, lfs_rule,
    notes_rule, reflog_rule, remote_rule, replace_rule, submodule_rule, symbolic_ref_rule,
    tag_rule,
};
use crate::tables::{ALLOWED, BLOCKED, COMMON, CONDITIONAL, RECENT, THIRD_PARTY};
use crate::{
    block, Decision, ALIAS_LOOP, BAD_ALIAS, CREDENTIALS, DISCARD, EMPTY_ALIAS, INCLUDES, INDEX,
    MAX_ALIAS_DEPTH, MAX_EVALUATIONS, MOVES_HEAD, REFS, SHELL_ALIAS, STASH, TOO_COMPLEX,
    TYPO_SCORE, UNKNOWN_OPTION, WORKTREES,
};

pub(super) struct Guard<'a> {
    pub(super) env: &'a [(String, String)],
    /// Command evaluations left; bounds the work hostile alias sets can cause.
    pub(super) budget: Cell<usize>,
    /// The aliases being expanded in the current git process, outermost first: an expansion
    /// that names one of them again is a loop. Pushed and popped around each expansion, and
    /// set aside while a nested process (`for-each-repo`) is judged, which expands from scratch.
    pub(super) expanding: RefCell<Vec<String>>,
}

/// What an evaluation carries down to the commands it reaches: the aliases in force there and
/// where in the walk it is.
#[derive(Clone, Copy)]
pub(super) struct EvalCtx<'a> {
    pub(super) aliases: &'a Aliases,
    pub(super) frame: Frame,
}

#[derive(Clone, Copy)]
pub(super) struct Frame {
    /// Alias expansions (and nested `for-each-repo` calls) so far.
    pub(super) depth: usize,
    /// The command word is the one typed to a git process (not an alias expansion), so git's
    /// autocorrection may apply to it.
    pub(super) top_level: bool,
    /// Evaluating an alias that shadows one of git's commands: git would not expand it, so a
    /// loop on this path means nothing runs.
    pub(super) hypothetical: bool,
}

impl<'a> Guard<'a> {
    pub(super) fn new(env: &'a [(String, String)]) -> Self {
        Guard {
            env,
            budget: Cell::new(MAX_EVALUATIONS),
            expanding: RefCell::new(Vec::new()),
        }
    }

    /// One git process: global options, then the command.
    pub(super) fn process(&self, words: &[String], ctx: EvalCtx<'_>) -> Decision {
        let outer = self.expanding.take();
        let decision = self.process_fresh(words, ctx);
        self.expanding.replace(outer);
        decision
    }

    fn process_fresh(&self, words: &[String], ctx: EvalCtx<'_>) -> Decision {
        let mut aliases = ctx.aliases.clone();
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
                EvalCtx {
                    aliases: &aliases,
                    ..ctx
                },
            ),
        }
    }

    pub(super) fn command(&self, cmd: &str, rest: &[String], ctx: EvalCtx<'_>) -> Decision {
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
        let rule = self.rule(&lower, rest, ctx);
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
        if let Some(expansion) = ctx.aliases.lookup(cmd) {
            let frame = Frame {
                hypothetical: ctx.frame.hypothetical || known,
                ..ctx.frame
            };
            return self.alias(cmd, expansion, rest, EvalCtx { frame, ..ctx });
        }
        if !known && ctx.frame.top_level {
            return self.autocorrect(cmd, rest, ctx);
        }
        Decision::Allow
    }

    pub(super) fn alias(
        &self,
        name: &str,
        expansion: &str,
        rest: &[String],
        ctx: EvalCtx<'_>,
    ) -> Decision {
        let frame = ctx.frame;
        if frame.depth >= MAX_ALIAS_DEPTH {
            return block(ALIAS_LOOP);
        }
        if expansion.starts_with('!') {
            return block(SHELL_ALIAS);
        }
        let Some(words) = split_cmdline(expansion) else {
            return block(BAD_ALIAS);
        };
        let mut aliases = ctx.aliases.clone();
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
            || self
                .expanding
                .borrow()
                .iter()
                .any(|seen| seen.eq_ignore_ascii_case(cmd));
        if looped {
            return if frame.hypothetical {
                Decision::Allow
            } else {
                block(ALIAS_LOOP)
            };
        }
        let mut args = words.get(head + 1..).unwrap_or(&[]).to_vec();
        args.extend_from_slice(rest);
        self.expanding.borrow_mut().push(name.to_string());
        let decision = self.command(
            cmd,
            &args,
            EvalCtx {
                aliases: &aliases,
                frame: Frame {
                    depth: frame.depth + 1,
                    top_level: false,
                    ..frame
                },
            },
        );
        self.expanding.borrow_mut().pop();
        decision
    }

    /// git runs an unknown command's closest match when `help.autocorrect` is set. Mirrors
    /// git's choice: nothing when the typed word starts one of the common commands, else the
    /// best-scoring candidate below the similarity floor (ties count as possible picks, since
    /// the installed command set may differ). Where `help.autocorrect` is set in config the
    /// guard sees, or config files are redirected (`GIT_CONFIG_GLOBAL`/`GIT_CONFIG_SYSTEM`),
    /// any such pick counts; otherwise only a near-certain typo of a blocked command does, so
    /// that `git-foo` extensions and alias names stay usable.
    pub(super) fn autocorrect(&self, cmd: &str, rest: &[String], ctx: EvalCtx<'_>) -> Decision {
        let aliases = ctx.aliases;
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
            || env_get(self.env, env::GIT_CONFIG_GLOBAL).is_some()
            || env_get(self.env, env::GIT_CONFIG_SYSTEM).is_some();
        if !may_autocorrect && best > TYPO_SCORE {
            return Decision::Allow;
        }
        let ctx = EvalCtx {
            frame: Frame {
                top_level: false,
                ..ctx.frame
            },
            ..ctx
        };
        for (_, candidate) in candidates.iter().filter(|(score, _)| *score == best) {
            if let Decision::Block { reason } = self.command(candidate, rest, ctx) {
                return block(format!("may autocorrect to {candidate} ({reason})"));
            }
        }
        Decision::Allow
    }

    /// The verdict on one of the commands in the tables; `None` when the command is unknown.
    pub(super) fn rule(&self, name: &str, rest: &[String], ctx: EvalCtx<'_>) -> Option<Decision> {
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
            "for-each-repo" => return Some(self.for_each_repo(rest, ctx)),
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
    pub(super) fn for_each_repo(&self, rest: &[String], ctx: EvalCtx<'_>) -> Decision {
        let frame = ctx.frame;
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
            EvalCtx {
                frame: Frame {
                    depth: frame.depth + 1,
                    top_level: true,
                    ..frame
                },
                ..ctx
            },
        )
    }
}

/// Ok when the first argument is absent or one of `allowed`.
pub(super) fn first_arg_in(
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
