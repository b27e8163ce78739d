//! Compiles the reference catalog `tools.toml` into `OUT_DIR` (tables, dispatch, search index);
//! an invalid catalog stops the build with its diagnostics.
fn main() {
    toolcat_codegen::build::compile_catalog("tools.toml");
}
