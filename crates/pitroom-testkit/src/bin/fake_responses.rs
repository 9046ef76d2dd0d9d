//! `pitroom-fake-responses --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR] [--log FILE]`:
//! runs the scripted fake OpenAI Responses API server (Codex CLI) as its own process (see `pitroom_testkit::launcher`).

fn main() -> std::process::ExitCode {
    pitroom_testkit::launcher::main::<pitroom_testkit::fake_responses::FakeResponses>(
        "pitroom-fake-responses",
    )
}
