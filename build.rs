//! Links `harness` as a position-dependent executable (`-no-pie`). A PIE
//! binary has its half megabyte of relocated read-only data and its
//! relocation table touched by the loader at every start; a fixed address
//! needs neither, which takes about 1.5 MB off the resident size of every
//! run, most of what a check of a small history takes.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
