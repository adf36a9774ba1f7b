//! Opt-in link tuning: with `GEODE_LINK_ORDER=1`, a release link of the `geode` binary lays out
//! the functions a hosted-adapter task runs first together (`link/hot-symbols.txt`, written by
//! `scripts/hot-symbols.sh`; lld's `--symbol-ordering-file`), so a worker maps a few hundred KB of
//! code rather than pages spread over the whole `.text` (docs/benchmarks.md, "A lean worker").
//! Off by default: the gain is a worker's resident memory, not anything a call's latency shows,
//! and an ordinary build should not depend on a profiled list. Names the binary no longer has are
//! ignored. Only where rustc links with lld by default (x86_64 Linux since Rust 1.90) and no other
//! linker is asked for: GNU ld has no such option.

use std::path::Path;

fn main() {
    let list = Path::new("link/hot-symbols.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=GEODE_LINK_ORDER");
    let wanted = std::env::var("GEODE_LINK_ORDER").is_ok_and(|v| v == "1");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let lld = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu")
        && !std::env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|f| f.contains("linker"))
        && std::env::var_os("RUSTC_LINKER").is_none();
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let path = Path::new(&dir).join(list);
    if wanted && release && lld && path.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=geode=-Wl,--symbol-ordering-file={}",
            path.display()
        );
        println!("cargo:rustc-link-arg-bin=geode=-Wl,--no-warn-symbol-ordering");
    }
}
