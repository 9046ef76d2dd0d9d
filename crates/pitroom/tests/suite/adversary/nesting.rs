//! Class 11: what a worker leaves behind. It cannot start Pitroom again by unsetting the
//! variable that says it is a worker (what refuses it is the process tree it runs in, which it
//! cannot leave), and what it leaves in its CLI's persistent state is measured and told.

use super::{attack_env, list, users};

#[test]
fn a_nested_pitroom_is_refused_even_with_its_variable_unset() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        let nested = format!(
            "env -u PITROOM_ACTIVE '{}' run 'nested task' 2>&1; echo \"exit=$?\"",
            a.pitroom.display()
        );
        let detached = format!(
            "setsid env -u PITROOM_ACTIVE '{}' run 'nested task' > \"$TMPDIR/out\" 2>&1 & wait $!; cat \"$TMPDIR/out\"",
            a.pitroom.display()
        );
        a.script(&[nested, detached]);
        let (code, out) = a.run(&["start pitroom again"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let calls = a.shell_calls();
        for call in &calls {
            assert!(
                call.2
                    .contains("refusing to delegate from inside a Pitroom worker"),
                "{}: {call:?}",
                a.who()
            );
        }
        assert_eq!(
            list(&a.env.state.join("runs")).len(),
            1,
            "{}: only the outer run exists",
            a.who()
        );
    }
}

#[test]
fn what_a_worker_leaves_in_its_clis_state_is_measured_and_told() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        a.script(&["head -c 68157440 /dev/zero > \"$XDG_DATA_HOME/filler\" && echo filled".into()]);
        let (code, out) = a.run(&["fill the state dir"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let r = a.record();
        assert!(
            r["state_growth_bytes"].as_u64().unwrap_or(0) >= 68_157_440,
            "{}: {r:#}",
            a.who()
        );
        assert!(
            out.contains("the worker left 65 MiB in its CLI's state dir"),
            "{}: {out}",
            a.who()
        );
    }
}
