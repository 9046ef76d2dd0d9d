//! Classes 9 and 10: what a read run must not read, and the ways out that are not processes
//! of the worker's tree. Secret files the old name list missed and one reached through a
//! linked directory, the user's credential dirs in HOME, and the user's session (a tmux
//! socket, the agent variables) are all out of a read worker's reach.

use super::{attack_env, users};

const SECRET: &str = "s3cr3t-value-0123456789";

#[test]
fn a_read_worker_reads_no_secret_file_credential_dir_or_session_socket() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        for name in [
            ".envrc",
            "prod.env",
            ".dev.vars",
            "terraform.tfvars",
            "secrets.toml",
        ] {
            std::fs::write(a.repo.join(name), format!("KEY={SECRET}\n")).expect("secret");
        }
        let outside = a.env.dir("outside-conf");
        std::fs::write(outside.join(".env"), format!("KEY={SECRET}\n")).expect("linked secret");
        std::os::unix::fs::symlink(&outside, a.repo.join("conf")).expect("dir link");
        let ssh = a.env.home.join(".ssh");
        std::fs::create_dir_all(&ssh).expect(".ssh");
        std::fs::write(ssh.join("id_ed25519"), SECRET).expect("key");
        let sockets = a.env.dir("tmux-tmp");
        let uid = match a.user {
            super::User::Unprivileged => pitroom_testkit::env::UNPRIVILEGED_UID,
            // SAFETY: getuid has no failure mode.
            super::User::Current => unsafe { libc::getuid() },
        };
        let tmux = sockets.join(format!("tmux-{uid}"));
        std::fs::create_dir_all(&tmux).expect("tmux dir");
        std::fs::write(tmux.join("default"), "stands in for the server's socket").expect("sock");
        a.env.set("TMUX_TMPDIR", sockets.display().to_string());
        a.env
            .set("TMUX", format!("{}/default,4242,0", tmux.display()));
        a.env
            .set("SSH_AUTH_SOCK", tmux.join("default").display().to_string());
        a.script(&[
            "cat .envrc prod.env .dev.vars terraform.tfvars secrets.toml conf/.env 2>&1".into(),
            "cat \"$HOME/.ssh/id_ed25519\" 2>&1; ls -A \"$HOME/.ssh\"".into(),
            format!(
                "echo \"tmux=[$TMUX] agent=[$SSH_AUTH_SOCK]\"; ls -A '{}'",
                tmux.display()
            ),
        ]);
        if !a.mounts_available() {
            // Without a mount namespace nothing can be masked; the copy view still keeps the
            // project's secrets out (isolate.rs, object_store.rs).
            eprintln!(
                "{}: no private mount namespace here; masking not tested",
                a.who()
            );
            continue;
        }
        let (code, out) = a.run(&["read everything"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let calls = a.shell_calls();
        assert_eq!(calls.len(), 3, "{calls:#?}");
        for call in &calls {
            assert!(!call.2.contains(SECRET), "{}: {call:?}", a.who());
        }
        assert!(
            !calls[1].2.lines().any(|l| l.trim() == "id_ed25519"),
            "{}: ~/.ssh lists empty: {:?}",
            a.who(),
            calls[1]
        );
        assert!(
            calls[2].2.contains("tmux=[] agent=[]"),
            "{}: the session variables are gone: {:?}",
            a.who(),
            calls[2]
        );
        assert!(
            !calls[2].2.contains("default"),
            "{}: the socket dir is masked: {:?}",
            a.who(),
            calls[2]
        );
        let r = a.record();
        assert_eq!(r["view"], "in_place", "{}: {r:#}", a.who());
        assert!(
            r["safety"]["landlock"]["masked"].as_u64().unwrap_or(0) >= 2,
            "{}: {r:#}",
            a.who()
        );
    }
}
