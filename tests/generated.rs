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

/// The files of `generated/` for `source` (an edited copy of the reference catalog), loaded as
/// `toolcat generate --catalog FILE` loads it: the reference agent's handlers attached by name.
fn files_of(source: &str) -> Vec<generate::GeneratedFile> {
    let catalog = toolcat::Catalog::from_source_with_handlers(
        "tools.toml",
        source,
        &toolcat_cli::toolcat_generated::HANDLERS,
    )
    .unwrap_or_else(|e| panic!("the edited catalog compiles: {e}"));
    generate::files(&catalog).expect("the edited catalog exports")
}

/// Lines removed plus lines added between two texts (a line diff, as a reviewer reads it).
fn changed_lines(old: &str, new: &str) -> usize {
    similar::TextDiff::from_lines(old, new)
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .count()
}

/// A small edit of the reference catalog changes each generated file by a few lines, not
/// hundreds: every file lists tools in catalog order, one definition after another, so an edit
/// of one row changes that row's lines only.
///
/// The bound, 20 changed lines (removed plus added) per file: each edit below writes at most two
/// fields of one row; in an export a field is at most four lines of that tool's definition (a
/// description one line, the MCP annotations four), so at most 2 × 4 lines go and 2 × 4 come,
/// and a `tool_search` description that lists the discoverable tools may change one line more
/// (2). Anything past 20 is a reflow: lines that did not change shown as changed.
#[test]
fn small_edits_of_the_reference_catalog_change_each_generated_file_by_a_few_lines() {
    let reference = toolcat_cli::REFERENCE_SOURCE;
    let base = files_of(reference);
    // Loaded from the text with the handlers, the catalog gives exactly the checked-in files:
    // the edits below are compared with what `generated/` holds.
    let compiled = generate::files(toolcat_cli::reference_catalog()).expect("exports");
    for (a, b) in base.iter().zip(&compiled) {
        assert_eq!(
            changed_lines(&b.text, &a.text),
            0,
            "generated/{} differs when loaded from the text",
            a.path
        );
    }
    /// `(what, row, [(from, to)])`: replacements within the `[[tool]]` row named `row`.
    type Edit = (
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    );
    let edits: &[Edit] = &[
        (
            "change a description",
            "read_file",
            &[("description = \"", "description = \"Edited: ")],
        ),
        (
            "move a tool from inline to discoverable",
            "edit_file",
            &[("visibility = \"inline\"", "visibility = \"discoverable\"")],
        ),
        (
            "make a gated write destructive",
            "create_directory",
            &[("effect = \"write\"", "effect = \"destructive\"")],
        ),
        (
            "widen exposure and add a profile",
            "write_file",
            &[
                ("exposure = \"full\"", "exposure = \"staging\""),
                (
                    "profiles = [\"coding\"]",
                    "profiles = [\"coding\", \"minimal\"]",
                ),
            ],
        ),
        (
            "change a tier",
            "list_reminders",
            &[("tier = \"silent\"", "tier = \"gated\"")],
        ),
    ];
    for (what, row, replacements) in edits {
        let at = reference
            .find(&format!("name = \"{row}\""))
            .unwrap_or_else(|| panic!("{what}: no row `{row}`"));
        let end = reference[at..]
            .find("[[tool]]")
            .map_or(reference.len(), |e| at + e);
        let mut text = reference[at..end].to_string();
        for (from, to) in *replacements {
            assert!(text.contains(from), "{what}: `{row}` has no `{from}`");
            text = text.replacen(from, to, 1);
        }
        let edited = format!("{}{text}{}", &reference[..at], &reference[end..]);
        assert_eq!(
            changed_lines(reference, &edited),
            2 * replacements.len(),
            "{what}: the edit itself"
        );
        let files = files_of(&edited);
        let mut changed_any = false;
        for (old, new) in base.iter().zip(&files) {
            let n = changed_lines(&old.text, &new.text);
            changed_any |= n > 0;
            assert!(
                n <= 20,
                "{what}: generated/{} changed by {n} lines, more than 20:\n{}",
                old.path,
                similar::TextDiff::from_lines(&old.text, &new.text)
                    .unified_diff()
                    .context_radius(1)
            );
        }
        assert!(changed_any, "{what}: no generated file changed");
    }
}
