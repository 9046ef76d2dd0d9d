//! Integration tests of the `pitroom` binary: fast CLI tests on the fake worker, end-to-end
//! tests on the real OpenCode CLI against a scripted fake model server, and process-survival
//! tests.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

mod suite;
