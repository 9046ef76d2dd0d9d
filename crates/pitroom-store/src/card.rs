//! `savings --card`: a self-contained SVG card (no external fonts, images or scripts).

use crate::stats::Savings;

/// What the card shows.
#[derive(Debug, Clone, PartialEq)]
pub struct CardData {
    /// `last 7 days`, `last 30 days`, `all time`, `since 2026-11-01`.
    pub period: String,
    pub saved: f64,
    pub tokens: u64,
    pub compression: Option<f64>,
    pub runs: u64,
    /// The primary model(s) the saving was estimated against.
    pub primary: String,
}

impl CardData {
    pub fn from_savings(s: &Savings) -> CardData {
        let period = match s.since.as_str() {
            "all" => "all time".to_string(),
            l if l.ends_with('d') && l[..l.len() - 1].parse::<u32>().is_ok() => {
                format!("last {} days", &l[..l.len() - 1])
            }
            l => format!("since {l}"),
        };
        let primary = match s.primaries.as_slice() {
            [] => "your primary model's".to_string(),
            [one] => one.clone(),
            many => many.join(" / "),
        };
        CardData {
            period,
            saved: s.saved,
            tokens: s.tokens,
            compression: s.compression,
            runs: s.runs,
            primary,
        }
    }
}

/// Escapes text for an SVG text node or attribute.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Money as the receipts show it: no decimals from $100, two from $1, else three.
pub(crate) fn money(usd: f64) -> String {
    match usd.abs() {
        a if a >= 100.0 => format!("${usd:.0}"),
        a if a >= 1.0 => format!("${usd:.2}"),
        _ => format!("${usd:.3}"),
    }
}

/// `950`, `12.3k`, `4.5M`.
pub(crate) fn compact(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

const FONT: &str = "font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\"";

fn tile(x: u32, label: &str, value: &str) -> String {
    format!(
        "<g transform=\"translate({x},196)\">\
<rect width=\"208\" height=\"72\" rx=\"10\" fill=\"#1b2130\" stroke=\"#2c3548\"/>\
<text x=\"16\" y=\"26\" {FONT} font-size=\"12\" fill=\"#8d97ab\">{}</text>\
<text x=\"16\" y=\"56\" {FONT} font-size=\"24\" font-weight=\"bold\" fill=\"#e8ecf4\">{}</text>\
</g>",
        xml(label),
        xml(value)
    )
}

/// Renders the card: 720×316, dark surface, the saved amount large, three tiles.
pub fn savings_card(d: &CardData) -> String {
    let compression = d
        .compression
        .map(|c| format!("{c:.0}×"))
        .unwrap_or_else(|| "n/a".into());
    let tiles = [
        tile(32, "Tokens offloaded", &compact(d.tokens)),
        tile(256, "Context compression", &compression),
        tile(480, "Delegated tasks", &d.runs.to_string()),
    ]
    .concat();
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="720" height="316" viewBox="0 0 720 316" role="img" aria-label="Pitroom: {saved} saved, {period}">
<defs>
<radialGradient id="glowA" cx="0.1" cy="0" r="0.7"><stop offset="0" stop-color="#ff8a3d" stop-opacity="0.35"/><stop offset="1" stop-color="#ff8a3d" stop-opacity="0"/></radialGradient>
<radialGradient id="glowB" cx="1" cy="1" r="0.7"><stop offset="0" stop-color="#3d8bff" stop-opacity="0.30"/><stop offset="1" stop-color="#3d8bff" stop-opacity="0"/></radialGradient>
</defs>
<rect width="720" height="316" rx="18" fill="#10141d"/>
<rect width="720" height="316" rx="18" fill="url(#glowA)"/>
<rect width="720" height="316" rx="18" fill="url(#glowB)"/>
<g transform="translate(32,30)">
<rect width="34" height="34" rx="8" fill="#ff8a3d"/>
<path d="M9 25 L17 9 L25 25 Z" fill="#10141d"/>
<text x="46" y="16" {FONT} font-size="18" font-weight="bold" fill="#e8ecf4">Pitroom</text>
<text x="46" y="32" {FONT} font-size="12" fill="#8d97ab">Your agent's pit crew</text>
</g>
<g transform="translate(548,34)">
<rect width="140" height="26" rx="13" fill="#1b2130" stroke="#2c3548"/>
<text x="70" y="17.5" text-anchor="middle" {FONT} font-size="12" fill="#c9d1e0">{period}</text>
</g>
<text x="32" y="110" {FONT} font-size="12" letter-spacing="1.5" fill="#8d97ab">SAVED ON YOUR MAIN CODING AGENT</text>
<text x="32" y="168" {FONT} font-size="54" font-weight="bold" fill="#3ddc84">{saved}</text>
{tiles}
<text x="32" y="296" {FONT} font-size="11" fill="#6b7588">Estimated against {primary} list prices · pitroom savings</text>
</svg>
"##,
        saved = xml(&money(d.saved)),
        period = xml(&d.period),
        primary = xml(&d.primary),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> CardData {
        CardData {
            period: "last 7 days".into(),
            saved: 12.345,
            tokens: 5_492_971,
            compression: Some(715.2),
            runs: 8,
            primary: "Claude <Sonnet> & co".into(),
        }
    }

    #[test]
    fn text_is_escaped_and_figures_formatted() {
        let svg = savings_card(&data());
        for shown in [
            "Claude &lt;Sonnet&gt; &amp; co",
            ">$12.35<",
            ">5.5M<",
            ">715×<",
            ">8<",
        ] {
            assert!(svg.contains(shown), "the card shows {shown}");
        }
        assert!(!svg.contains("<Sonnet>"));
        assert!(!svg.contains("href"), "self-contained: no links or images");
    }

    #[test]
    fn card_renders_with_resvg_and_draws_the_saved_amount() {
        let svg = savings_card(&data());
        let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
            .expect("the card is valid SVG");
        assert_eq!(tree.size().width(), 720.0);
        let mut pixmap = resvg::tiny_skia::Pixmap::new(720, 316).unwrap();
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::default(),
            &mut pixmap.as_mut(),
        );
        let opaque = pixmap.pixels().iter().filter(|p| p.alpha() == 255).count();
        assert!(
            opaque > 720 * 316 * 9 / 10,
            "the surface is drawn: {opaque}"
        );
        // The orange logo mark at (32..66, 30..64): its centre is orange, not the dark surface.
        let logo = pixmap.pixel(36, 34).unwrap();
        assert!(logo.red() > 200 && logo.blue() < 120, "{logo:?}");
    }

    #[test]
    fn card_periods_and_primaries_read_naturally() {
        let mut s = Savings {
            since: "30d".into(),
            primaries: vec!["Claude Sonnet".into()],
            ..Savings::default()
        };
        let d = CardData::from_savings(&s);
        assert_eq!(d.period, "last 30 days");
        assert_eq!(d.primary, "Claude Sonnet");
        s.since = "all".into();
        assert_eq!(CardData::from_savings(&s).period, "all time");
        s.since = "2026-11-01".into();
        assert_eq!(CardData::from_savings(&s).period, "since 2026-11-01");
    }

    #[test]
    fn money_and_counts_are_compact() {
        assert_eq!(money(0.1524), "$0.152");
        assert_eq!(money(3.856), "$3.86");
        assert_eq!(money(250.4), "$250");
        assert_eq!(compact(999), "999");
        assert_eq!(compact(163_000), "163.0k");
        assert_eq!(compact(2_500_000), "2.5M");
    }
}
