//! A class found while red-teaming (not in the list): a write-run worker that makes the
//! "after" snapshot fail — a nested repository with no commit yet makes `git add -A` fatal —
//! kept every change it made out of the record (no patch, no revert, "changes: none"). Git now
//! leaves such a path out and names it; every other change is recorded and reverts.

use super::{attack_env, users};

#[test]
fn a_nested_repository_without_a_commit_cannot_hide_a_write_runs_other_changes() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        a.script(&[
            "mkdir sub && /usr/bin/git -C sub init -q && echo x > sub/f && echo changed >> calc.py && echo done"
                .into(),
        ]);
        let before = std::fs::read(a.repo.join("calc.py")).expect("calc.py");
        let (code, out) = a.run(&["-w", "hide my edit"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        assert!(
            out.contains("git could not record 1 path(s)") && out.contains("sub/"),
            "{}: {out}",
            a.who()
        );
        let r = a.record();
        let changed = crate::suite::common::changed(&r);
        assert_eq!(changed, ["calc.py"], "{}: {r:#}", a.who());
        let (code, out) = a.run(&["revert"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        assert_eq!(
            std::fs::read(a.repo.join("calc.py")).expect("calc.py"),
            before,
            "{}: the recorded change reverts",
            a.who()
        );
    }
}
