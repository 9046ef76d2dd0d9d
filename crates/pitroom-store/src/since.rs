//! `--since`: `7d`, `30d`, `12h`, `2w`, `all`, a date (`2026-11-01`) or a timestamp.

use pitroom_core::duration::parse_duration;

/// The start of a period.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Since {
    /// What the user typed (`7d`, `all`, `2026-11-01`), for labels.
    pub label: String,
    /// Unix milliseconds; `None` means all time.
    pub from_ms: Option<i64>,
}

impl Since {
    pub fn all() -> Since {
        Since {
            label: "all".into(),
            from_ms: None,
        }
    }

    /// A period of `days` ending at `now`.
    pub fn days(days: i64, now: jiff::Timestamp) -> Since {
        Since {
            label: format!("{days}d"),
            from_ms: Some(now.as_millisecond() - days * 86_400_000),
        }
    }
}

/// Parses a `--since` value relative to `now`.
pub fn parse_since(text: &str, now: jiff::Timestamp) -> Result<Since, String> {
    let t = text.trim();
    let label = t.to_string();
    if t.eq_ignore_ascii_case("all") {
        return Ok(Since::all());
    }
    if let Ok(date) = t.parse::<jiff::civil::Date>() {
        let start = date
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map_err(|e| format!("--since {t}: {e}"))?;
        return Ok(Since {
            label,
            from_ms: Some(start.timestamp().as_millisecond()),
        });
    }
    if let Ok(at) = t.parse::<jiff::Timestamp>() {
        return Ok(Since {
            label,
            from_ms: Some(at.as_millisecond()),
        });
    }
    let span = match t.strip_suffix('w') {
        Some(weeks) => parse_duration(&format!("{weeks}d")).map(|d| d * 7),
        None => parse_duration(t),
    }
    .map_err(|_| {
        format!("--since `{t}`: use 7d, 30d, 12h, 2w, all, or a date such as 2026-11-01")
    })?;
    let ms = i64::try_from(span.as_millis()).unwrap_or(i64::MAX);
    Ok(Since {
        label,
        from_ms: Some(now.as_millisecond().saturating_sub(ms)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-11-30T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn relative_periods_count_back_from_now() {
        let day = 86_400_000;
        let n = now().as_millisecond();
        assert_eq!(parse_since("7d", now()).unwrap().from_ms, Some(n - 7 * day));
        assert_eq!(
            parse_since("2w", now()).unwrap().from_ms,
            Some(n - 14 * day)
        );
        assert_eq!(
            parse_since("12h", now()).unwrap().from_ms,
            Some(n - day / 2)
        );
    }

    #[test]
    fn all_dates_and_timestamps() {
        assert_eq!(parse_since("all", now()).unwrap().from_ms, None);
        let d = parse_since("2026-11-01", now()).unwrap();
        let expected: jiff::Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
        assert_eq!(d.from_ms, Some(expected.as_millisecond()));
        assert_eq!(d.label, "2026-11-01");
        let t = parse_since("2026-11-02T10:00:00Z", now()).unwrap();
        assert!(t.from_ms.unwrap() > expected.as_millisecond());
    }

    #[test]
    fn nonsense_is_an_error_that_says_what_works() {
        let e = parse_since("last tuesday", now()).unwrap_err();
        assert!(e.contains("7d"), "{e}");
    }
}
