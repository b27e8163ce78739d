//! Compiles the scaled catalogs the benchmarks and the allocation test use into `OUT_DIR`:
//! `c1000/` always, `c10000/` with the feature `compiled-10k`. Each directory holds the scaled
//! `tools.toml` (made from `../shared/data`, see `src/scale.rs`) and the files
//! `toolcat::include_catalog!` includes. A missing data directory stops the build with a
//! `cargo::error=` line naming it.

use std::path::{Path, PathBuf};

#[path = "src/compile.rs"]
mod compile;
#[path = "src/scale.rs"]
#[allow(dead_code)]
mod scale;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/scale.rs");
    println!("cargo::rerun-if-changed=src/compile.rs");
    println!("cargo::rerun-if-env-changed={}", scale::DATA_ENV);
    let (Some(manifest_dir), Some(out_dir)) = (
        std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
        std::env::var_os("OUT_DIR").map(PathBuf::from),
    ) else {
        println!("cargo::error=`CARGO_MANIFEST_DIR` or `OUT_DIR` is not set; run through cargo");
        return;
    };
    let data = scale::data_dir(&manifest_dir);
    for input in scale::inputs(&data) {
        println!("cargo::rerun-if-changed={}", input.display());
    }
    let mut sizes = vec![1_000];
    if std::env::var_os("CARGO_FEATURE_COMPILED_10K").is_some() {
        sizes.push(10_000);
    }
    if let Err(e) = run(&data, &out_dir, &sizes) {
        for line in e.lines() {
            println!("cargo::error={line}");
        }
    }
}

fn run(data: &Path, out_dir: &Path, sizes: &[usize]) -> Result<(), String> {
    for (n, text) in scale::scaled_texts(data, sizes)? {
        let dir = out_dir.join(format!("c{n}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        let catalog = dir.join("tools.toml");
        toolcat_codegen::build::write_if_changed(&catalog, text.as_bytes())
            .map_err(|e| format!("cannot write `{}`: {e}", catalog.display()))?;
        let stats = compile::compile_catalog_quiet(&catalog, &dir)?;
        if stats.tools != n {
            return Err(format!(
                "the scaled catalog has {} tools, expected {n}",
                stats.tools
            ));
        }
    }
    Ok(())
}
