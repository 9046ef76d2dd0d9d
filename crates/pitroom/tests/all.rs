//! Integration tests of the `pitroom` binary: fast CLI tests on the fake worker, end-to-end
//! tests on the real OpenCode CLI against a scripted fake model server, and process-survival
//! tests.

mod suite;
