//! Two link settings of `harness` that keep a check of a small history
//! small in memory; neither changes what the binary does.
//!
//! - Position-dependent (`-no-pie`): a PIE binary has its half megabyte of
//!   relocated read-only data and its relocation table touched by the
//!   loader at every start; a fixed address needs neither, which takes
//!   about 1.5 MB off the resident size of every run.
//! - The functions a check runs first in the text segment
//!   (`linker/hot-symbols.txt`, made by `scripts/hot-symbols.sh`): the
//!   kernel maps code 64 KiB around each page touched, so functions strewn
//!   over the text cost far more than their size. Only LLD takes the list;
//!   it is the default linker of Rust 1.90 and later on x86-64 Linux.
use std::process::Command;

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
        if arch == "x86_64" && rustc_minor().is_some_and(|m| m >= 90) {
            let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={dir}/linker/hot-symbols.txt"
            );
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=linker/hot-symbols.txt");
}

/// The minor version of the compiler building us (`rustc 1.95.0 ...` gives 95).
fn rustc_minor() -> Option<u32> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-V").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.split_whitespace()
        .nth(1)?
        .split('.')
        .nth(1)?
        .parse()
        .ok()
}
