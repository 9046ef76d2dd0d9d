//! Class 6: a read run cannot plant what a later run executes. A read run writes git's
//! XDG config in its CLI's shared state with a `core.fsmonitor` command; a later run's `git
//! status` must not run it, because a worker's git reads the global config Pitroom wrote.

use super::{attack_env, users};

#[test]
fn a_git_config_planted_by_a_read_run_is_not_read_by_the_next_runs_git() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        // Without the test kit's own global config, so git would look in $XDG_CONFIG_HOME.
        a.env.unset("GIT_CONFIG_GLOBAL");
        let marker = a.env.state.join("workers/opencode/data/fsmonitor-ran");
        a.script(&[format!(
            "mkdir -p \"$XDG_CONFIG_HOME/git\" && printf '[core]\\n\\tfsmonitor = \"touch {}\"\\n' > \"$XDG_CONFIG_HOME/git/config\"",
            marker.display()
        )]);
        let (code, out) = a.run(&["plant a git config"]);
        assert_eq!(code, 0, "{}: {out}", a.who());

        a.script(&[
            "git status --short >/dev/null; /usr/bin/git status --short >/dev/null; echo done"
                .into(),
        ]);
        let (code, out) = a.run(&["-w", "run git status"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        assert!(
            !marker.exists(),
            "{}: the planted fsmonitor command never ran",
            a.who()
        );
    }
}
