//! Durations as people type them: `90`, `90s`, `20m`, `1h`, `7d`.

use std::time::Duration;

/// Parses plain seconds or a number with an `s`/`m`/`h`/`d` suffix.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = match t
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit() && *c != '.')
    {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; use seconds or 90s, 20m, 1h, 7d"))?;
    let scale = match unit {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        "ms" => 0.001,
        _ => return Err(format!("`{text}` has an unknown unit; use s, m, h or d")),
    };
    if !value.is_finite() || value < 0.0 {
        return Err(format!("`{text}` is not a valid duration"));
    }
    // `99999999999999999999d` is finite but past what a `Duration` holds.
    Duration::try_from_secs_f64(value * scale)
        .map_err(|_| format!("`{text}` is too long a duration"))
}

/// Formats a duration compactly: `850ms`, `42s`, `3m12s`, `1h05m`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_numbers_are_seconds_and_suffixes_scale() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("20m").unwrap(), Duration::from_secs(1200));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(
            parse_duration("7d").unwrap(),
            Duration::from_secs(7 * 86400)
        );
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
    }

    /// Found by fuzzing: a duration past `Duration::MAX` panicked instead of being refused.
    #[test]
    fn a_duration_too_long_to_hold_is_rejected_not_a_panic() {
        assert!(parse_duration("99999999999999999999d")
            .unwrap_err()
            .contains("too long"));
        assert!(parse_duration(&"9".repeat(30)).is_err());
    }

    #[test]
    fn nonsense_is_rejected_with_a_hint() {
        assert!(parse_duration("soon").unwrap_err().contains("20m"));
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn formatting_picks_the_largest_useful_unit() {
        assert_eq!(format_duration(Duration::from_millis(850)), "850ms");
        assert_eq!(format_duration(Duration::from_secs(42)), "42s");
        assert_eq!(format_duration(Duration::from_secs(192)), "3m12s");
        assert_eq!(format_duration(Duration::from_secs(3900)), "1h05m");
    }
}
