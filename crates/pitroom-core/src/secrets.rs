//! Which files look like secrets (PRODUCT.md §7): kept out of read copies, so a worker that only
//! needs to read code never sees them.

/// The one secret-file policy lives with the worker adapters, which render it into each CLI's
/// rules; read copies, redaction and attachments use the same matcher.
pub use pitroom_workers::secret_files::is_secret_path;

/// Secret-looking files directly inside `dir`, by name.
pub fn secret_files_in(dir: &std::path::Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|name| is_secret_path(name))
        .collect();
    found.sort();
    found
}
