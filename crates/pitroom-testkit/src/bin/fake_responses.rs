//! `pitroom-fake-responses --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR] [--log FILE]`:
//! runs the scripted fake OpenAI Responses API server (Codex CLI) as its own process (see `pitroom_testkit::launcher`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

fn main() -> std::process::ExitCode {
    pitroom_testkit::launcher::main::<pitroom_testkit::fake_responses::FakeResponses>(
        "pitroom-fake-responses",
    )
}
