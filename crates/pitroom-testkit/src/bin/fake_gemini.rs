//! `pitroom-fake-gemini --script FILE [--port-file FILE] [--scenario NAME] [--workdir DIR] [--log FILE]`:
//! runs the scripted fake Gemini API server (Gemini CLI; point it at the server with GOOGLE_GEMINI_BASE_URL) as its own process (see `pitroom_testkit::launcher`).

fn main() -> std::process::ExitCode {
    pitroom_testkit::launcher::main::<pitroom_testkit::fake_gemini::FakeGemini>(
        "pitroom-fake-gemini",
    )
}
