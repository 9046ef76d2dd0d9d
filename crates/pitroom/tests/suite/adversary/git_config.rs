//! Class 6: a run cannot plant what a later run executes. A read run writes git's XDG config
//! in its CLI's state with a `core.fsmonitor` command; the next run that shares that state (the
//! same mode, the same directory) runs `git status`, which must not run it: a worker's git
//! reads the global config Pitroom wrote for its run.

use super::{attack_env, users};

#[test]
fn a_git_config_planted_by_a_read_run_is_not_read_by_the_next_runs_git() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        // Without the test kit's own global config, so git would look in $XDG_CONFIG_HOME.
        a.env.unset("GIT_CONFIG_GLOBAL");
        // The command marks a file in the CLI's state, which the next run shares.
        a.script(&[concat!(
            "mkdir -p \"$XDG_CONFIG_HOME/git\" && ",
            "printf '[core]\\n\\tfsmonitor = \"touch %s/fsmonitor-ran\"\\n' \"$XDG_DATA_HOME\" ",
            "> \"$XDG_CONFIG_HOME/git/config\""
        )
        .into()]);
        let (code, out) = a.run(&["plant a git config"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let state = a.cli_state_dir();
        assert!(state.join("config/git/config").is_file(), "{}", a.who());

        a.script(&[
            "git status --short >/dev/null; /usr/bin/git status --short >/dev/null; echo done"
                .into(),
        ]);
        let (code, out) = a.run(&["run git status"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        assert_eq!(a.cli_state_dir(), state, "{}: the same state", a.who());
        assert!(
            !state.join("data/fsmonitor-ran").exists(),
            "{}: the planted fsmonitor command never ran",
            a.who()
        );
    }
}
