//! A reviewer's verdict (`pitroom review`): the line every review answer must end with,
//! `SPEC: PASS|FAIL · QUALITY: APPROVED|NEEDS_FIXES · ISSUES: critical=N important=N minor=N`.
//! A review without one is a failed review, never a pass.

use serde::{Deserialize, Serialize};

/// What the reviewer concluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The change does what the brief asked.
    pub spec_pass: bool,
    /// The change is fit to land as it is.
    pub approved: bool,
    pub critical: u32,
    pub important: u32,
    pub minor: u32,
}

impl Verdict {
    /// `SPEC PASS · QUALITY NEEDS_FIXES · critical 0, important 2, minor 1`.
    pub fn line(&self) -> String {
        format!(
            "SPEC {} · QUALITY {} · critical {}, important {}, minor {}",
            if self.spec_pass { "PASS" } else { "FAIL" },
            if self.approved {
                "APPROVED"
            } else {
                "NEEDS_FIXES"
            },
            self.critical,
            self.important,
            self.minor
        )
    }

    /// Whether the change may land: the spec passed, quality approved, nothing critical.
    pub fn clean(&self) -> bool {
        self.spec_pass && self.approved && self.critical == 0
    }
}

/// A panel's verdict from its reviewers' verdicts: the strictest wins — the spec fails if any
/// reviewer failed it, quality needs fixes if any reviewer said so, and each severity counts
/// what the reviewer who found the most issues of it found (reviewers who found the same issue
/// are not added up). `None` when no reviewer gave a verdict.
pub fn strictest<'a>(verdicts: impl IntoIterator<Item = &'a Verdict>) -> Option<Verdict> {
    verdicts.into_iter().fold(None, |merged, v| {
        Some(match merged {
            None => v.clone(),
            Some(m) => Verdict {
                spec_pass: m.spec_pass && v.spec_pass,
                approved: m.approved && v.approved,
                critical: m.critical.max(v.critical),
                important: m.important.max(v.important),
                minor: m.minor.max(v.minor),
            },
        })
    })
}

/// What the reviewer is asked to end with (the reviewer's prompt quotes it).
pub const VERDICT_FORMAT: &str =
    "SPEC: PASS|FAIL · QUALITY: APPROVED|NEEDS_FIXES · ISSUES: critical=N important=N minor=N";

/// The last verdict line of an answer. Tolerant of the separators models use (`·`, `|`, `,`,
/// `;`, or separate lines) and of markdown emphasis; `None` when any of the three parts is
/// missing.
pub fn parse(answer: &str) -> Option<Verdict> {
    let upper = answer
        .to_ascii_uppercase()
        .replace(['*', '`'], " ")
        .replace("NEEDS FIXES", "NEEDS_FIXES")
        .replace("NEEDS-FIXES", "NEEDS_FIXES");
    let spec_at = upper.rfind("SPEC:")?;
    let tail = &upper[spec_at..];
    let spec_pass = match first_word_after(tail, "SPEC:")? {
        "PASS" => true,
        "FAIL" => false,
        _ => return None,
    };
    let approved = match first_word_after(tail, "QUALITY:")? {
        "APPROVED" => true,
        "NEEDS_FIXES" | "NEEDSFIXES" => false,
        _ => return None,
    };
    let issues_at = tail.find("ISSUES:")?;
    let issues = &tail[issues_at..];
    Some(Verdict {
        spec_pass,
        approved,
        critical: count(issues, "CRITICAL")?,
        important: count(issues, "IMPORTANT")?,
        minor: count(issues, "MINOR")?,
    })
}

fn first_word_after<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    let at = text.find(label)? + label.len();
    text[at..]
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| !w.is_empty())
}

/// `critical=2` (or `critical: 2`, `critical 2`).
fn count(text: &str, name: &str) -> Option<u32> {
    let at = text.find(name)? + name.len();
    let digits: String = text[at..]
        .trim_start_matches(|c: char| c == '=' || c == ':' || c.is_whitespace())
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::strictest;

    fn verdict(spec_pass: bool, approved: bool, counts: [u32; 3]) -> super::Verdict {
        super::Verdict {
            spec_pass,
            approved,
            critical: counts[0],
            important: counts[1],
            minor: counts[2],
        }
    }

    #[test]
    fn a_panel_takes_the_strictest_of_its_verdicts() {
        let pass = verdict(true, true, [0, 0, 2]);
        let fixes = verdict(true, false, [0, 1, 0]);
        let fail = verdict(false, false, [1, 0, 1]);
        assert_eq!(strictest([&pass]), Some(pass.clone()));
        assert_eq!(
            strictest([&pass, &fixes]),
            Some(verdict(true, false, [0, 1, 2]))
        );
        assert_eq!(
            strictest([&pass, &fixes, &fail]),
            Some(verdict(false, false, [1, 1, 2]))
        );
        assert!(!strictest([&pass, &fixes]).is_some_and(|v| v.clean()));
        assert_eq!(strictest(std::iter::empty()), None);
    }

    use super::*;

    #[test]
    fn the_documented_line_parses() {
        let v = parse("SUMMARY: two problems\nSPEC: PASS · QUALITY: NEEDS_FIXES · ISSUES: critical=0 important=2 minor=1")
            .expect("a verdict");
        assert_eq!(
            v,
            Verdict {
                spec_pass: true,
                approved: false,
                critical: 0,
                important: 2,
                minor: 1
            }
        );
        assert!(!v.clean());
        assert_eq!(
            v.line(),
            "SPEC PASS · QUALITY NEEDS_FIXES · critical 0, important 2, minor 1"
        );
    }

    #[test]
    fn markdown_and_other_separators_are_tolerated() {
        let v = parse("**SPEC:** FAIL | **QUALITY:** Needs fixes\n**ISSUES:** critical: 1, important: 0, minor: 3")
            .expect("a verdict");
        assert!(!v.spec_pass && !v.approved);
        assert_eq!((v.critical, v.important, v.minor), (1, 0, 3));
    }

    #[test]
    fn the_last_verdict_counts() {
        let v = parse("SPEC: FAIL · QUALITY: NEEDS_FIXES · ISSUES: critical=1 important=0 minor=0\nafter the fix:\nSPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=0 minor=0")
            .expect("a verdict");
        assert!(v.clean());
    }

    #[test]
    fn an_answer_without_a_complete_verdict_has_none() {
        assert_eq!(parse("Looks good to me!"), None);
        assert_eq!(parse("SPEC: PASS · QUALITY: APPROVED"), None);
        assert_eq!(
            parse("SPEC: MAYBE · QUALITY: APPROVED · ISSUES: critical=0 important=0 minor=0"),
            None
        );
        assert_eq!(
            parse("SPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=0"),
            None
        );
    }
}
