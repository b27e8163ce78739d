fn main() {
    // Validates this crate's own tools.toml and generates its catalog into OUT_DIR.
    toolcat_codegen::build::compile_catalog("tools.toml");
}
