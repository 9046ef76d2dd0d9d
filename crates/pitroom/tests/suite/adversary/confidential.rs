//! Class 12: what a worker may read of what is not its own. Pitroom's state dir holds every
//! other run's stored patch, copy and transcript, and the repository's config may carry the
//! credentials of its remotes (`https://user:token@host/…`, an `http.extraheader`): a worker
//! sees its own run of the state dir and the config without them, whatever mode it runs in.

use serde_json::Value;

use super::{attack_env, users};
use crate::suite::common::last_id;

/// Written by an isolated run into its copy, so into its stored patch. Split so that neither
/// this file nor the transcript of the run that looks for it holds it whole.
const MARK_HEAD: &str = "other-runs-";
const MARK_TAIL: &str = "work-4711";

/// The shell commands a worker runs to look through `state` for the earlier run `earlier`.
fn look_through(state: &std::path::Path, earlier: &str) -> Vec<String> {
    let state = state.display();
    vec![
        format!("ls -A '{state}/runs' 2>&1; echo end"),
        // `[w]` keeps the command's own text (in the run's transcript) from matching.
        format!(
            "grep -rl '{MARK_HEAD}[w]{}' '{state}' 2>&1; echo end",
            &MARK_TAIL[1..]
        ),
        format!("cat '{state}/runs/{earlier}/record.json' 2>&1 | head -c 200; echo"),
    ]
}

#[test]
fn a_worker_sees_no_other_run_in_the_state_dir_in_any_mode() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        if !a.mounts_available() {
            // The state dir is hidden by a tmpfs in the worker's mount namespace; without one,
            // only its modes keep others out (docs/safety.md, "What is not a boundary").
            eprintln!("{}: no private mount namespace; not tested", a.who());
            continue;
        }
        a.script(&[format!("echo '{MARK_HEAD}{MARK_TAIL}' > stolen-from.txt")]);
        let (code, out) = a.run(&["-i", "write the mark"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let earlier = last_id(&a.env, &a.repo);
        let state = a.env.state.clone();

        for mode in ["-r", "-w", "-i"] {
            a.script(&look_through(&state, &earlier));
            let (code, out) = a.run(&[mode, "look around"]);
            assert_eq!(code, 0, "{} {mode}: {out}", a.who());
            let calls = a.shell_calls();
            assert_eq!(calls.len(), 3, "{} {mode}: {calls:#?}", a.who());
            let own = last_id(&a.env, &a.repo);
            let listed: Vec<&str> = calls[0].2.lines().filter(|l| *l != "end").collect();
            assert_eq!(
                listed,
                vec![own.as_str()],
                "{} {mode}: the worker's runs dir holds its own run only",
                a.who()
            );
            assert_eq!(
                calls[1].2.trim(),
                "end",
                "{} {mode}: no file of the state dir holds the other run's work",
                a.who()
            );
            assert!(
                calls[2].2.contains("No such file or directory"),
                "{} {mode}: the other run's record is out of reach: {:?}",
                a.who(),
                calls[2]
            );
            let r = a.record();
            assert_eq!(
                r["safety"]["landlock"]["state_hidden"],
                Value::Bool(true),
                "{} {mode}: the record says the state dir was hidden: {:#}",
                a.who(),
                r["safety"]
            );
        }
        // Hidden from workers, not lost: the earlier run's patch is still there for the user.
        let (code, shown) = a.run(&["show", &earlier, "--patch"]);
        assert_eq!(code, 0, "{}: {shown}", a.who());
        assert!(shown.contains(MARK_TAIL), "{}: {shown}", a.who());
    }
}

#[test]
fn a_worker_reads_the_repository_config_without_its_remote_credentials() {
    const TOKEN: &str = "ghp_0123456789abcdefTOKEN";
    const HEADER_TOKEN: &str = "aGVhZGVyLXNlY3JldA==";
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        if !a.mounts_available() {
            eprintln!("{}: no private mount namespace; not tested", a.who());
            continue;
        }
        a.env.git(
            &a.repo,
            &[
                "remote",
                "add",
                "origin",
                &format!("https://x-access-token:{TOKEN}@example.com/team/repo.git"),
            ],
        );
        a.env.git(
            &a.repo,
            &[
                "config",
                "http.https://example.com/.extraheader",
                &format!("AUTHORIZATION: basic {HEADER_TOKEN}"),
            ],
        );
        let config_before = std::fs::read(a.repo.join(".git/config")).expect("config");

        for mode in ["-r", "-w", "-i"] {
            // By its path: an isolated worker runs in a copy, but can read the user's tree.
            a.script(&[
                format!("cat '{}' 2>&1", a.repo.join(".git/config").display()),
                "git remote -v 2>&1".into(),
                "git config --get-regexp 'http\\..*' 2>&1; echo end".into(),
            ]);
            let (code, out) = a.run(&[mode, "read the config"]);
            assert_eq!(code, 0, "{} {mode}: {out}", a.who());
            let calls = a.shell_calls();
            assert_eq!(calls.len(), 3, "{} {mode}: {calls:#?}", a.who());
            for call in &calls {
                assert!(
                    !call.2.contains(TOKEN) && !call.2.contains(HEADER_TOKEN),
                    "{} {mode}: a credential reached the worker: {call:?}",
                    a.who()
                );
            }
            assert!(
                calls[0]
                    .2
                    .contains("url = https://example.com/team/repo.git"),
                "{} {mode}: the remote is still there, without its credential: {:?}",
                a.who(),
                calls[0]
            );
        }
        assert_eq!(
            std::fs::read(a.repo.join(".git/config")).expect("config"),
            config_before,
            "{}: the user's own config keeps its credentials",
            a.who()
        );
    }
}
