//! Desktop notifications (`notify = true`): `notify-send` on Linux, `osascript` on macOS. The
//! notifier is a child in its own process group with a bounded wait; where none is installed
//! nothing is shown and nothing fails, since a notification is a courtesy, never a result.

use std::io;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a notifier may take before it is killed.
const NOTIFIER_LIMIT: Duration = Duration::from_secs(5);

/// Shows a desktop notification; `Ok(false)` when this machine has no notifier.
pub fn desktop_notification(title: &str, body: &str) -> io::Result<bool> {
    let (program, args) = notifier(title, body);
    let mut command = Command::new(program);
    command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let deadline = Instant::now() + NOTIFIER_LIMIT;
    loop {
        if let Some(status) = child.try_wait()? {
            return if status.success() {
                Ok(true)
            } else {
                Err(io::Error::other(format!("{program} exited with {status}")))
            };
        }
        if Instant::now() >= deadline {
            // Best effort: the process group is ours alone.
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other(format!(
                "{program} took more than {}s; it was stopped",
                NOTIFIER_LIMIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The notifier of this platform and its arguments.
fn notifier(title: &str, body: &str) -> (&'static str, Vec<String>) {
    if cfg!(target_os = "macos") {
        osascript(title, body)
    } else {
        notify_send(title, body)
    }
}

fn notify_send(title: &str, body: &str) -> (&'static str, Vec<String>) {
    (
        "notify-send",
        vec![
            "--app-name=Pitroom".into(),
            "--".into(),
            title.into(),
            body.into(),
        ],
    )
}

fn osascript(title: &str, body: &str) -> (&'static str, Vec<String>) {
    (
        "osascript",
        vec![
            "-e".into(),
            format!(
                "display notification {} with title {}",
                applescript_string(body),
                applescript_string(title)
            ),
        ],
    )
}

/// `text` as an AppleScript string literal: quotes and backslashes escaped, so a task's text
/// cannot end the literal and run script of its own.
fn applescript_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            '\n' | '\r' => quoted.push(' '),
            _ => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_cannot_break_out_of_the_applescript_literal() {
        let (program, args) = osascript("Pitroom", "fix \"x\" \\\" & do shell script \"rm\"\nnext");
        assert_eq!(program, "osascript");
        assert_eq!(
            args[1],
            r#"display notification "fix \"x\" \\\" & do shell script \"rm\" next" with title "Pitroom""#
        );
    }

    #[test]
    fn notify_send_takes_the_title_and_body_after_the_end_of_options() {
        let (program, args) = notify_send("-title", "body");
        assert_eq!(program, "notify-send");
        assert_eq!(args, ["--app-name=Pitroom", "--", "-title", "body"]);
    }
}
