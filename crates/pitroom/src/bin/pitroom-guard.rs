//! `pitroom-guard`: the small executable a worker's `git`, floor programs (`sudo`, `npm`, other
//! agent CLIs…) and git's `reference-transaction` hook link to, so that every git call a worker
//! makes pays for starting this, not the whole `pitroom` binary. It links the `pitroom-guard`
//! crate (which needs only the standard library and `pitroom-env`'s names) and nothing else;
//! the roles themselves live in `pitroom_guard::roles`, which `pitroom` also plays when this
//! executable is missing.
//!
//! `main` is the C entry point (`no_main`): the standard library's start-up (its stack-overflow
//! handler, `SIGPIPE` set to ignored, the check that fds 0–2 are open) costs ~0.1 ms per call
//! here, and skipping it also hands the real git the signal dispositions its caller gave,
//! untouched. Arguments still come from `std::env::args_os` (glibc passes them to the standard
//! library before `main`); nothing here writes to stdout, so no buffer is left to flush.

#![no_main]

use std::ffi::{c_char, c_int};

/// The exit status of a start under a name that plays no role (the CLI's usage error).
const USAGE: c_int = 2;

#[no_mangle]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    pitroom_guard::roles::run(&argv).unwrap_or_else(|| {
        eprintln!(
            "pitroom-guard: not meant to be run directly: Pitroom links a worker's `git`, its \
             floor programs and git's reference-transaction hook to it"
        );
        USAGE
    })
}
