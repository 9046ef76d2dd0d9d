//! Links Pitroom's executables (`pitroom`, `pitroom-guard`) at a fixed address (non-PIE) on
//! Linux. The dynamic loader then applies a few hundred relocations at start-up instead of
//! ~23,000 relative ones into `.data.rel.ro`, each page of which it would copy on write; that
//! was most of what starting `pitroom` (a hook, the status line, `--version`) and `pitroom-guard`
//! (every git call inside a worker) cost beyond the exec itself (docs/benchmarks.md). The price
//! is address randomisation of the executable's own image — its libraries, heap and stack stay
//! randomised. `PITROOM_PIE=1` at build time keeps a position-independent executable.

fn main() {
    println!("cargo:rerun-if-env-changed={}", pitroom_env::PITROOM_PIE);
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && std::env::var_os(pitroom_env::PITROOM_PIE).is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
