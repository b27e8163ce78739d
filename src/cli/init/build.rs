fn main() {
    // Validates tools.toml and generates the catalog module, the dispatch table and the search
    // index into OUT_DIR; an invalid tools.toml stops the build with every error at once.
    toolcat_codegen::build::compile_catalog("tools.toml");
}
