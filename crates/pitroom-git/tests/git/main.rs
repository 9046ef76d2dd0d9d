//! `pitroom-git` on real repositories, in one test binary: snapshots, diffs, reverse application
//! and read copies ([`snapshots`]); property tests of isolated copies and of `git apply`
//! ([`roundtrip`]).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

mod roundtrip;
mod snapshots;
