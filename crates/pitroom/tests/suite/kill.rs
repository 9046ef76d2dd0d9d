//! No worker process or descendant survives its run, even when `pitroom` is SIGKILLed.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;

use super::common::{eventually, fake_env, processes_with_cmdline, processes_with_env};
use super::opencode_e2e::World;

fn sigkill_leaves_no_survivor(
    env: &pitroom_testkit::TestEnv,
    dir: &Path,
    marker: &str,
    args: &[&str],
    started: impl Fn() -> bool,
) {
    let mut child = env
        .pitroom(dir, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("pitroom starts");
    assert!(
        eventually(Duration::from_secs(60), || started()
            && !processes_with_cmdline(marker).is_empty()),
        "the background job started (else this test proves nothing)"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).expect("kill");
    let _ = child.wait();
    let state = env.state.display().to_string();
    let clean = eventually(Duration::from_secs(15), || {
        processes_with_cmdline(marker).is_empty() && processes_with_env(&state).is_empty()
    });
    assert!(
        clean,
        "survivors: marker {:?}, env {:?}",
        processes_with_cmdline(marker),
        processes_with_env(&state)
    );
}

#[test]
fn sigkill_of_pitroom_leaves_no_fake_worker_or_background_job() {
    let marker = "sleep 271.3";
    let env = fake_env(json!([
        {"spawn_bg": format!("{marker}; true")},
        {"step": {"input": 5, "output": 1}},
        {"sleep_ms": 60000}
    ]));
    let dir = env.dir("plain");
    sigkill_leaves_no_survivor(&env, &dir, marker, &["look", "-t", "120s"], || true);
}

#[test]
fn sigkill_of_pitroom_leaves_no_real_opencode_or_its_shell_job() {
    let w = World::new();
    let server = &w.server;
    sigkill_leaves_no_survivor(
        &w.env,
        &w.repo,
        "sleep 313.7",
        &["start a job scenario:bgkill", "-t", "120s"],
        || server.chat_requests().len() >= 2,
    );
}
