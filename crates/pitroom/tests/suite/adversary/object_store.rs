//! Class 7: secrets never reach the user's object store through a read copy. A read run that
//! reads a copy (whose object store borrows the user's) must find no blob of an untracked
//! `.env` there, and the user's store must not gain one.

use super::{attack_env, users};

const SECRET: &str = "objstore-secret-9876543210";

#[test]
fn a_read_copy_leaves_no_blob_of_an_untracked_secret_for_any_reader() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        std::fs::write(a.repo.join(".env"), format!("TOKEN={SECRET}\n")).expect(".env");
        a.env.set("PITROOM_READ_VIEW", "copy");
        a.script(&[
            "git cat-file --batch-all-objects --batch 2>&1 | grep -a -c objstore-secret || true"
                .into(),
        ]);
        let (code, out) = a.run(&["look in the object store"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let r = a.record();
        assert_eq!(r["view"], "copy", "{}: {r:#}", a.who());
        let calls = a.shell_calls();
        assert_eq!(calls.len(), 1, "{calls:#?}");
        assert_eq!(calls[0].2.trim(), "0", "{}: {:?}", a.who(), calls[0]);

        let all = a.env.git(
            &a.repo,
            &["cat-file", "--batch-all-objects", "--batch-check"],
        );
        for line in all.lines() {
            let id = line.split_whitespace().next().unwrap_or_default();
            let body = a.env.git(&a.repo, &["cat-file", "-p", id]);
            assert!(!body.contains(SECRET), "{}: object {line}", a.who());
        }
    }
}

/// Whether any object of the user's repository holds `needle`.
fn object_store_holds(a: &super::Attack, needle: &str) -> bool {
    let all = a.env.git(
        &a.repo,
        &["cat-file", "--batch-all-objects", "--batch-check"],
    );
    all.lines().any(|line| {
        let id = line.split_whitespace().next().unwrap_or_default();
        a.env.git(&a.repo, &["cat-file", "-p", id]).contains(needle)
    })
}

#[test]
fn write_and_isolated_runs_never_stage_a_secret_and_report_what_the_worker_did_to_one() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        std::fs::write(a.repo.join(".env"), format!("TOKEN={SECRET}\n")).expect(".env");
        a.script(&[
            "echo 'NEW=objstore-secret-added-by-worker' >> .env && echo '# edit' >> calc.py".into(),
        ]);
        let (code, out) = a.run(&["-w", "edit code and the env file"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let r = a.record();
        let changed = crate::suite::common::changed(&r);
        assert_eq!(changed, ["calc.py"], "{}: {r:#}", a.who());
        assert_eq!(
            r["secret_changes"],
            serde_json::json!([".env"]),
            "{}",
            a.who()
        );
        assert!(
            out.contains("the worker changed secret-looking file(s)"),
            "{}: {out}",
            a.who()
        );
        assert!(!object_store_holds(&a, "objstore-secret"), "{}", a.who());

        a.script(&["cat .env 2>&1; echo '# more' >> calc.py".into()]);
        let (code, out) = a.run(&["-i", "read the env file in the copy"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let calls = a.shell_calls();
        assert!(!calls[0].2.contains(SECRET), "{}: {:?}", a.who(), calls[0]);
        assert!(!object_store_holds(&a, "objstore-secret"), "{}", a.who());
    }
}
