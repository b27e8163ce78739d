//! Compiles ./tools.toml (a scaled catalog written by `bench/run`) into OUT_DIR with the steps of
//! `toolcat_codegen::build::compile_catalog`, without rendering the near-duplicate warnings every
//! copied row produces (see bench/src/compile.rs, included from the repository).

#[path = "@BENCH_SRC@/compile.rs"]
mod compile;

fn main() {
    println!("cargo::rerun-if-changed=tools.toml");
    let dir = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    match compile::compile_catalog_quiet(&dir.join("tools.toml"), &out) {
        Ok(stats) => println!(
            "cargo::warning=compiled {} tools: index {} bytes, declarations {} bytes, glue {} bytes",
            stats.tools, stats.index_bytes, stats.declarations_bytes, stats.glue_bytes
        ),
        Err(e) => {
            for line in e.lines() {
                println!("cargo::error={line}");
            }
        }
    }
}
