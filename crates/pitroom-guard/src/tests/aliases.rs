//! Aliases from every source, autocorrection, includes and the refusal line.

use super::*;

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
fn a_nested_git_process_expands_its_aliases_afresh() {
    // `for-each-repo` starts a new git process: the aliases being expanded around it do not
    // count as a loop inside it. Here the shadowing `log` alias is judged hypothetically, and
    // the nested `foo` → `log` → `for-each-repo foo` … chain only ends at the nesting limit,
    // which blocks (were the outer `log` counted, the hypothetical loop would allow the call).
    let got = decide_with(
        &argv("log"),
        &[("log", "for-each-repo foo"), ("foo", "log")],
        &[],
    );
    assert_eq!(reason_of(&got), Some("nested too deeply"));
    // Within one process an alias naming one already being expanded is a loop at once.
    let got = decide_with(&argv("a"), &[("a", "b"), ("b", "a")], &[]);
    assert_eq!(reason_of(&got), Some(ALIAS_LOOP));
}
