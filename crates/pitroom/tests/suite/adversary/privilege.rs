//! Class 3: no privilege in the worker's tree. Started by root (or inside the user namespace
//! an ordinary user's keeper makes), the worker holds no capability and the calls that would
//! reach past the read-only `.git` and the blank binds are refused.

use super::{attack_env, users};

/// `open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | O_CLOEXEC)`, then a hook written through the
/// clone: with `CAP_SYS_ADMIN` it gets past the read-only bind of `.git`.
fn open_tree_attack(repo: &std::path::Path) -> String {
    let hook = repo.join(".git/hooks/post-checkout");
    let rel = hook
        .strip_prefix("/")
        .unwrap_or(&hook)
        .display()
        .to_string();
    format!(
        "python3 -c 'import ctypes,os\n\
libc=ctypes.CDLL(None,use_errno=True)\n\
fd=libc.syscall(428,-100,b\"/\",1|0o2000000)\n\
print(\"open_tree\",fd,ctypes.get_errno())\n\
if fd>=0:\n  h=os.open(\"{rel}\",os.O_CREAT|os.O_WRONLY,0o755,dir_fd=fd); os.write(h,b\"#!/bin/sh\\n\"); print(\"hook written\")\n'"
    )
}

#[test]
fn a_worker_holds_no_capability_and_cannot_clone_mounts_or_make_devices() {
    for user in users() {
        let mut a = attack_env(user, serde_json::json!([]));
        a.script(&[
            "grep -E '^Cap(Eff|Prm|Amb):' /proc/self/status".into(),
            "mknod \"$TMPDIR/disk\" b 8 0".into(),
            open_tree_attack(&a.repo),
        ]);
        let before = a.git_state();
        let (code, out) = a.run(&["-w", "try privileges"]);
        assert_eq!(code, 0, "{}: {out}", a.who());
        let calls = a.shell_calls();
        assert_eq!(calls.len(), 3, "{calls:#?}");
        for line in calls[0].2.lines() {
            let value = line.split_whitespace().last().unwrap_or_default();
            assert_eq!(u64::from_str_radix(value, 16), Ok(0), "{}: {line}", a.who());
        }
        assert_ne!(
            calls[1].1,
            0,
            "{}: mknod of a block device: {:?}",
            a.who(),
            calls[1]
        );
        assert!(
            calls[2].2.contains("open_tree -1 1"),
            "{}: open_tree is refused with EPERM: {:?}",
            a.who(),
            calls[2]
        );
        assert_eq!(a.git_state(), before, "{}", a.who());
        let r = a.record();
        let hardening = &r["safety"]["landlock"]["hardening"];
        assert_eq!(
            hardening["capabilities_dropped"],
            true,
            "{}: {r:#}",
            a.who()
        );
        assert_eq!(hardening["seccomp"], true, "{}: {r:#}", a.who());
        let expected = if a.mounts_available() {
            "read_only_mount"
        } else {
            "writable"
        };
        assert_eq!(
            r["safety"]["landlock"]["git_dir"],
            expected,
            "{}: the ordinary user gets the read-only .git too where the kernel allows: {r:#}",
            a.who()
        );
    }
}
