//! Integration tests of the `pitroom` binary: fast CLI tests on the fake worker, end-to-end
//! tests on the real worker CLIs (`suite/real_cli/`, one table entry each) against scripted
//! fake model servers, and process-survival tests.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

mod suite;
