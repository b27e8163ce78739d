//! Compiles the reference catalog `tools.toml` into `OUT_DIR` (tables, dispatch, search index);
//! an invalid catalog stops the build with its diagnostics. With feature `semantic`, also writes
//! the catalog's tool vectors to `OUT_DIR/toolcat_tool_vectors.bin`: encoded by the model in
//! `TOOLCAT_MODEL_DIR` when that is set for the build, an empty file otherwise.
fn main() {
    toolcat_codegen::build::compile_catalog("tools.toml");
    #[cfg(feature = "semantic")]
    for line in toolcat_semantic::embed_catalog_vectors("tools.toml") {
        println!("{line}");
    }
}
