//! The page's assets, embedded in the binary. A request names one by its exact file name; a
//! name that is not in this table (`..`, a slash, anything else) is simply not found, so no
//! path can reach outside the set.

/// The page shell; `{{TOKEN}}` becomes the per-start secret.
pub const INDEX_HTML: &str = include_str!("../assets/index.html");

/// Name, content type, bytes.
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/app.js"),
    ),
    (
        "highlight.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/highlight.js"),
    ),
    (
        "markdown.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/markdown.js"),
    ),
    (
        "theme.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/theme.js"),
    ),
    (
        "icon.svg",
        "image/svg+xml",
        include_bytes!("../assets/icon.svg"),
    ),
];

/// The asset called exactly `name`.
pub fn find(name: &str) -> Option<(&'static str, &'static [u8])> {
    ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, mime, bytes)| (*mime, *bytes))
}

/// Every asset's size in bytes, the shell included (the budget is 300 KB).
pub fn total_size() -> usize {
    INDEX_HTML.len() + ASSETS.iter().map(|(_, _, b)| b.len()).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assets_stay_within_300_kb() {
        let total = total_size();
        println!("dashboard assets: {total} bytes");
        assert!(total <= 300 * 1024, "{total} bytes");
    }

    #[test]
    fn only_exact_names_are_found() {
        assert!(find("app.js").is_some());
        for bad in [
            "../Cargo.toml",
            "./app.js",
            "app.js/",
            "APP.JS",
            "",
            "assets/app.js",
        ] {
            assert!(find(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_shell_loads_only_its_own_scripts() {
        assert!(INDEX_HTML.contains("{{TOKEN}}"));
        assert!(!INDEX_HTML.contains("<script>"), "no inline script");
        assert!(!INDEX_HTML.contains("http"), "nothing from elsewhere");
    }
}
