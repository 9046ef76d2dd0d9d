//! What a tool hands back: a short text for the model next to `structuredContent` of a fixed
//! schema, both well under the clients' caps (Claude Code stops at 25,000 tokens).

use pitroom_service::runs::set_exit;
use pitroom_service::{report, Exit, RunRecord, Selector};
use schemars::JsonSchema;
use serde::Serialize;

/// Text results are cut here (about 10k tokens at four characters a token), with a note that
/// says where the rest is. A result carries its text twice — as the text block and as
/// `structuredContent.report`, because Claude Code forwards only the structured content to the
/// model when there is one — so both together stay under Claude Code's 25,000-token cap.
pub const TEXT_CAP: usize = 40_000;

/// One run, as every tool reports it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunView {
    pub run: String,
    /// queued, running, done, failed, timeout or stopped.
    pub state: String,
    pub mode: String,
    /// backend[:model].
    pub worker: String,
    /// What `pitroom` would exit with: 0 ok, 1 failed, 4 timeout, 5 read-only violation,
    /// 6 verify failed, 75 still running.
    pub exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Citations checked: verified/total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refs: Option<String>,
    /// Files the run changed.
    pub changes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The last thing the worker did (while it runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
    pub steps: u32,
    pub tools: u32,
    /// A review's verdict line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// A queued run waiting out a rate limit: when it starts at the latest (`14:05 UTC`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_until: Option<String>,
}

impl RunView {
    pub fn of(record: &RunRecord) -> RunView {
        RunView {
            run: record.id.clone(),
            state: record.state.as_str().into(),
            mode: record.spec.mode.as_str().into(),
            worker: record.worker_target(),
            exit_code: record.exit_code(),
            summary: record
                .answer
                .as_deref()
                .and_then(report::summary_line)
                .map(str::to_string),
            refs: record
                .refs
                .as_ref()
                .map(|r| format!("{}/{}", r.verified, r.total)),
            changes: record.changes.len(),
            error: record.error.clone(),
            last: record
                .last_step
                .clone()
                .filter(|_| record.state.is_active()),
            steps: record.tally.steps,
            tools: record.tally.tool_calls,
            verdict: record.verdict.as_ref().map(|v| v.line()),
            held_until: record.held_until_short(),
        }
    }
}

/// The call that goes on waiting.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NextCall {
    pub tool: String,
    pub arguments: serde_json::Value,
}

/// What `pitroom_run` and `pitroom_wait` return.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunsResult {
    pub runs: Vec<RunView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub finished: usize,
    pub active: usize,
    /// Present while runs are still going: call this to wait for them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<NextCall>,
    /// The reports as `pitroom` prints them (the same text as the text block).
    pub report: String,
}

/// The result of a set of runs: the structured value, its text, and whether it is an error
/// (a finished run failed: the same meaning as a non-zero exit code).
pub fn runs_result(
    records: &[RunRecord],
    selector: &Selector,
    wait_seconds: u64,
) -> (RunsResult, String, bool) {
    let active: Vec<&RunRecord> = records.iter().filter(|r| r.state.is_active()).collect();
    let group = match selector {
        Selector::Group(g) => Some(g.clone()),
        _ => None,
    };
    let next = (!active.is_empty()).then(|| NextCall {
        tool: "pitroom_wait".into(),
        arguments: match &group {
            Some(g) => serde_json::json!({"group": g, "wait_seconds": wait_seconds}),
            None => serde_json::json!({
                "runs": active.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
                "wait_seconds": wait_seconds,
            }),
        },
    });
    let mut text = String::new();
    for r in records {
        if r.state.is_active() {
            text.push_str(&report::brief(r));
            text.push('\n');
        } else {
            text.push_str(&report::render(r, false));
            text.push('\n');
        }
    }
    if let Some(next) = &next {
        text.push_str(&format!(
            "{} run(s) still going. Call {} with {} to wait for them (the runs go on meanwhile).\n",
            active.len(),
            next.tool,
            next.arguments
        ));
    }
    let finished: Vec<RunRecord> = records
        .iter()
        .filter(|r| !r.state.is_active())
        .cloned()
        .collect();
    let failed = set_exit(&finished) != Exit::Ok;
    let text = cap(text, "pitroom://run/<id>");
    let result = RunsResult {
        runs: records.iter().map(RunView::of).collect(),
        group,
        finished: finished.len(),
        active: active.len(),
        next,
        report: text.clone(),
    };
    (result, text, failed)
}

/// Cuts `text` to [`TEXT_CAP`] on a character boundary, saying where the whole is.
pub fn cap(text: String, whole: &str) -> String {
    if text.len() <= TEXT_CAP {
        return text;
    }
    let mut end = TEXT_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… cut at {} of {} characters to stay under the client's size limit; the whole text is the resource {whole}\n",
        &text[..end],
        end,
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_on_a_char_boundary_with_a_pointer_to_the_whole() {
        let text = "é".repeat(TEXT_CAP);
        let cut = cap(text, "pitroom://run/x/patch");
        assert!(cut.len() < TEXT_CAP + 200);
        assert!(cut.contains("the whole text is the resource pitroom://run/x/patch"));
    }

    #[test]
    fn a_held_run_says_until_when_and_a_queued_one_does_not() {
        let spec =
            pitroom_service::RunSpec::new("t", pitroom_service::Mode::Read, "opencode", "/tmp");
        let mut record = RunRecord::new(
            "20260101-000000-0000".into(),
            spec,
            "2026-01-01T00:00:00Z".parse().expect("a stamp"),
        );
        assert_eq!(RunView::of(&record).held_until, None);
        record.phase = Some(pitroom_service::RunPhase::Held);
        record.held_until = Some("2026-01-01T14:05:00Z".parse().expect("a stamp"));
        assert_eq!(
            RunView::of(&record).held_until.as_deref(),
            Some("14:05 UTC")
        );
        let (_, text, _) = runs_result(&[record], &Selector::Runs(Vec::new()), 50);
        assert!(text.contains("held"), "{text}");
    }

    #[test]
    fn a_short_text_is_left_alone() {
        assert_eq!(cap("abc".into(), "u"), "abc");
    }
}
