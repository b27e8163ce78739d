//! `generated/` is fresh: every checked-in file equals what `toolcat generate` derives from
//! `tools.toml` now, and each names that command on its first line.

use std::path::Path;

use toolcat_cli::generate;

fn generated_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/generated"))
}

#[test]
fn generated_files_are_fresh() {
    let files =
        generate::files(toolcat_cli::reference_catalog()).expect("the reference catalog exports");
    let stale = generate::stale(generated_dir(), &files);
    assert!(
        stale.is_empty(),
        "stale generated files (run `cargo run -- generate` to rewrite them, then review the diff):\n{}",
        stale.iter().map(|p| format!("  {}", p.display())).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn every_generated_file_names_the_command_on_its_first_line() {
    let files =
        generate::files(toolcat_cli::reference_catalog()).expect("the reference catalog exports");
    assert!(
        files.len() >= 8,
        "expected lists, schema and three exports, got {} files",
        files.len()
    );
    for f in &files {
        let first = f.text.lines().next().unwrap_or("");
        assert!(
            first.contains(generate::COMMAND),
            "generated/{}: first line does not name `{}`: {first}",
            f.path,
            generate::COMMAND
        );
    }
}

#[test]
fn json_artefacts_parse_and_the_schema_covers_every_tool_field() {
    let files =
        generate::files(toolcat_cli::reference_catalog()).expect("the reference catalog exports");
    for f in files.iter().filter(|f| f.path.ends_with(".json")) {
        serde_json::from_str::<serde_json::Value>(&f.text)
            .unwrap_or_else(|e| panic!("generated/{} is not JSON: {e}", f.path));
    }
    let schema = files
        .iter()
        .find(|f| f.path == "tools.schema.json")
        .expect("the schema is generated");
    let schema: serde_json::Value = serde_json::from_str(&schema.text).expect("JSON");
    let text = schema.to_string();
    for field in toolcat_catalog::model::tool_fields() {
        assert!(
            text.contains(&format!("\"{field}\"")),
            "tools.schema.json does not mention tool field `{field}`"
        );
    }
}

#[test]
fn a_reviewer_sees_a_tier_change_in_the_generated_lists() {
    // Moving a gated tool to silent (and making it a read, as the rules demand) must change a line
    // of the checked-in authorization list.
    let source = toolcat_cli::REFERENCE_SOURCE;
    let catalog = toolcat::Catalog::from_source("tools.toml", source)
        .expect("the reference catalog is valid");
    let before = generate::files(&catalog).expect("exports");
    let gated = catalog
        .tools()
        .find(|&t| {
            catalog.tier(t) == toolcat_catalog::model::Tier::Gated
                && catalog.effect(t).kind == toolcat_catalog::model::EffectKind::Write
                && catalog.pair(t).is_none()
        })
        .expect("the reference catalog has a gated write tool outside any pair");
    let name = catalog.name(gated).to_string();
    let header = format!("name = \"{name}\"");
    let start = source.find(&header).expect("row found by its name line");
    let row_end = source[start..]
        .find("[[tool]]")
        .map_or(source.len(), |e| start + e);
    let row = &source[start..row_end];
    let edited_row = row
        .replace("tier = \"gated\"", "tier = \"silent\"")
        .replace("effect = \"write\"", "effect = \"read\"")
        .replace("exposure = \"staging\"", "exposure = \"read-only\"")
        .replace("exposure = \"full\"", "exposure = \"read-only\"");
    let edited = format!("{}{}{}", &source[..start], edited_row, &source[row_end..]);
    let after_catalog =
        toolcat::Catalog::from_source("tools.toml", &edited).expect("the edited catalog is valid");
    let after = generate::files(&after_catalog).expect("exports");
    let auth = |files: &[generate::GeneratedFile]| {
        files
            .iter()
            .find(|f| f.path == "authorization.md")
            .unwrap()
            .text
            .clone()
    };
    assert_ne!(
        auth(&before),
        auth(&after),
        "moving `{name}` from gated to silent did not change authorization.md"
    );
    assert!(
        auth(&after).contains(&format!("`{name}`")),
        "authorization.md does not name `{name}`"
    );
}
