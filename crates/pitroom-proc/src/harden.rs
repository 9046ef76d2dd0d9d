//! No privilege in the worker's tree: what the worker's process gives up right before the
//! worker starts, after the mounts and the Landlock ruleset that needed the privilege.
//!
//! - **Capabilities.** A worker started by root, or inside the user namespace an ordinary
//!   user's keeper makes for its PID namespace, would otherwise keep every capability: with
//!   `CAP_SYS_ADMIN` it clones a mount with `open_tree` and writes beneath the read-only `.git`
//!   bind, with `CAP_DAC_READ_SEARCH` it opens files by handle past the blank binds, with
//!   `CAP_MKNOD` and `CAP_NET_ADMIN` it makes devices and reconfigures the network. The
//!   bounding and ambient sets are emptied, the securebits locked so no `execve` (of a setuid
//!   binary, or by uid 0) grants any back, and `no_new_privs` set; then the effective,
//!   permitted and inheritable sets are emptied.
//! - **A seccomp filter** (when the worker is sandboxed by Pitroom) refuses, with `EPERM`,
//!   the system calls no worker needs and that would reach past the sandbox with any privilege
//!   it might still find: the mount API old and new, `open_by_handle_at`, device nodes,
//!   `ptrace` and the cross-process memory calls, the kernel keyrings, module and kexec
//!   loading, `bpf`.
//!
//! A CLI that keeps its own sandbox (Codex) is not hardened here: its bubblewrap, started by
//! root, takes root's privileged path and needs root's capabilities.

use serde::{Deserialize, Serialize};

/// What the worker gave up before it started (capabilities, the seccomp filter), as the sandbox
/// report keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hardening {
    /// Every capability set is empty and none can come back through `execve`.
    #[serde(default)]
    pub capabilities_dropped: bool,
    /// The seccomp filter is installed.
    #[serde(default)]
    pub seccomp: bool,
    /// What did not hold, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Gives up every privilege of the calling thread (which then starts the worker) and installs
/// the seccomp filter. Never fails: what did not hold is in the result.
pub fn harden() -> Hardening {
    #[cfg(target_os = "linux")]
    {
        let mut reasons = Vec::new();
        // The filter first: installing it needs `no_new_privs` (set by `apply_filter`), not a
        // capability, and it must not depend on the capability drop having worked.
        let seccomp = linux::install_filter().map_err(|e| reasons.push(e)).is_ok();
        let capabilities_dropped = linux::drop_capabilities()
            .map_err(|e| reasons.push(e))
            .is_ok();
        Hardening {
            capabilities_dropped,
            seccomp,
            reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Hardening {
            capabilities_dropped: false,
            seccomp: false,
            reason: Some("capability and seccomp hardening are Linux only".into()),
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;

    use rustix::thread::{
        capabilities, clear_ambient_capability_set, remove_capability_from_bounding_set,
        set_capabilities, set_capabilities_secure_bits, set_no_new_privs, CapabilitiesSecureBits,
        CapabilitySet, CapabilitySets,
    };
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };

    /// Empties every capability set for good, also for every `execve` by uid 0. The order
    /// matters: the securebits and the bounding set need `CAP_SETPCAP`, which the last step
    /// removes.
    pub(super) fn drop_capabilities() -> Result<(), String> {
        let held = capabilities(None).map_err(|e| format!("reading capabilities: {e}"))?;
        if held.effective.contains(CapabilitySet::SETPCAP) {
            let locked = CapabilitiesSecureBits::NO_ROOT
                | CapabilitiesSecureBits::NO_ROOT_LOCKED
                | CapabilitiesSecureBits::NO_SETUID_FIXUP
                | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
                | CapabilitiesSecureBits::KEEP_CAPS_LOCKED
                | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
                | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED;
            set_capabilities_secure_bits(locked).map_err(|e| format!("locking securebits: {e}"))?;
            empty_bounding_set()?;
        }
        clear_ambient_capability_set().map_err(|e| format!("clearing ambient caps: {e}"))?;
        set_no_new_privs(true).map_err(|e| format!("setting no_new_privs: {e}"))?;
        let none = CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        };
        set_capabilities(None, none).map_err(|e| format!("emptying capabilities: {e}"))?;
        let left = capabilities(None).map_err(|e| format!("reading capabilities: {e}"))?;
        if left != none {
            return Err(format!("capabilities still held: {left:?}"));
        }
        Ok(())
    }

    /// Removes every capability the kernel knows from the bounding set (the kernel answers
    /// `EINVAL` past its last one).
    fn empty_bounding_set() -> Result<(), String> {
        for bit in 0..64u32 {
            let capability = CapabilitySet::from_bits_retain(1u64 << bit);
            match remove_capability_from_bounding_set(capability) {
                Ok(()) => {}
                Err(rustix::io::Errno::INVAL) => break,
                Err(e) => {
                    return Err(format!(
                        "dropping capability {bit} from the bounding set: {e}"
                    ))
                }
            }
        }
        Ok(())
    }

    /// The system calls refused outright.
    fn denied_calls() -> Vec<i64> {
        let mut calls = vec![
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_open_tree,
            libc::SYS_move_mount,
            libc::SYS_fsopen,
            libc::SYS_fsconfig,
            libc::SYS_fsmount,
            libc::SYS_fspick,
            libc::SYS_mount_setattr,
            libc::SYS_open_by_handle_at,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_kexec_load,
            libc::SYS_kexec_file_load,
            libc::SYS_bpf,
        ];
        calls.sort_unstable();
        calls.dedup();
        calls
    }

    /// `mknod`/`mknodat` of a block or character device (a fifo or socket node stays allowed):
    /// one rule per device type on the call's mode argument.
    fn device_node_rules(mode_arg: u8) -> Result<Vec<SeccompRule>, String> {
        [libc::S_IFBLK, libc::S_IFCHR]
            .into_iter()
            .map(|kind| {
                let condition = SeccompCondition::new(
                    mode_arg,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(u64::from(libc::S_IFMT)),
                    u64::from(kind),
                )
                .map_err(|e| e.to_string())?;
                SeccompRule::new(vec![condition]).map_err(|e| e.to_string())
            })
            .collect()
    }

    pub(super) fn install_filter() -> Result<(), String> {
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied_calls()
            .into_iter()
            .map(|call| (call, Vec::new()))
            .collect();
        rules.insert(libc::SYS_mknodat, device_node_rules(2)?);
        #[cfg(target_arch = "x86_64")]
        rules.insert(libc::SYS_mknod, device_node_rules(1)?);
        let arch = std::env::consts::ARCH
            .try_into()
            .map_err(|e| format!("seccomp: {e:?}"))?;
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(|e| format!("seccomp filter: {e}"))?;
        let program: seccompiler::BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| format!("seccomp program: {e}"))?;
        seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))
    }
}

// Every test here proves a Linux mechanism (capabilities, seccomp).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Runs `f` on a thread of its own and returns what it returns. Capabilities, securebits,
    /// `no_new_privs` and a seccomp filter installed without `TSYNC` are the calling thread's:
    /// the hardening ends with the thread and touches no other test (a forked child would hold
    /// copies of every test's descriptors while it lives, and a script another test has just
    /// written could not be run: `ETXTBSY`).
    #[cfg(target_os = "linux")]
    fn in_thread(f: impl FnOnce() -> i32 + Send + 'static) -> i32 {
        std::thread::spawn(f).join().unwrap_or(99)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_hardened_process_holds_no_capability_and_cannot_use_the_denied_calls() {
        let code = in_thread(|| {
            let report = harden();
            if !report.capabilities_dropped || !report.seccomp {
                return 10;
            }
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
            let empty = |key: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .is_some_and(|v| u64::from_str_radix(v.trim(), 16) == Ok(0))
            };
            if !(empty("CapEff:") && empty("CapPrm:") && empty("CapBnd:") && empty("CapAmb:")) {
                return 11;
            }
            // SAFETY: a plain syscall with no pointers that matter: the filter answers first.
            let keyctl = unsafe { libc::syscall(libc::SYS_keyctl, 0, 0, 0, 0, 0) };
            if keyctl != -1 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
                return 12;
            }
            let node = std::ffi::CString::new("/tmp/pitroom-no-such-device").unwrap_or_default();
            // SAFETY: a valid path; the filter refuses the call before it is made.
            let mknod = unsafe { libc::mknod(node.as_ptr(), libc::S_IFCHR | 0o600, 0) };
            if mknod != -1 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
                return 13;
            }
            0
        });
        assert_eq!(code, 0, "the hardened thread reported failure {code}");
    }
}
