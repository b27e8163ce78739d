//! Text-level invariants of `tools.toml`, read as text rather than through the loader, so they hold
//! even where the loader would be lenient. Each failure names the file, the line and the rule.

use std::collections::BTreeSet;

use toolcat_catalog::model;

const TOOLS_TOML: &str = include_str!("../tools.toml");

/// The legend: the comment block at the top of the file, before the first non-comment line.
fn legend() -> Vec<&'static str> {
    TOOLS_TOML
        .lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .collect()
}

/// Field names the legend documents for the section that starts at a line equal to `header`
/// (`#   [profile.NAME]`, …), or for `[[tool]]` rows.
fn legend_fields(header_prefix: &str, indent: usize) -> BTreeSet<String> {
    let lines = legend();
    let start = lines
        .iter()
        .position(|l| l.starts_with(header_prefix))
        .unwrap_or_else(|| panic!("tools.toml: the legend has no section `{header_prefix}`"));
    let mut fields = BTreeSet::new();
    for line in &lines[start + 1..] {
        let body = line.trim_start_matches('#');
        let lead = body.len() - body.trim_start().len();
        let word: String = body
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if body.trim_start().starts_with('[') || (lead < indent && !body.trim().is_empty()) {
            break; // next section
        }
        if lead == indent && !word.is_empty() {
            // A field line starts with the field name: `name  meaning`, or `command, args  meaning`
            // for two fields documented together. Prose lines start with a capital or a bracket.
            for token in body.split_whitespace() {
                let name = token.trim_end_matches(',');
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    break;
                }
                fields.insert(name.to_string());
                if !token.ends_with(',') {
                    break;
                }
            }
        }
    }
    fields
}

#[test]
fn legend_documents_exactly_the_tool_fields_the_loader_accepts() {
    let documented = legend_fields("# [[tool]] rows", 3);
    let accepted: BTreeSet<String> = model::tool_fields().into_iter().collect();
    assert_eq!(
        documented, accepted,
        "tools.toml legend vs the fields of `model::ToolDecl`: add the missing ones to the legend (or the model)"
    );
}

#[test]
fn legend_documents_exactly_the_side_table_fields_the_loader_accepts() {
    for table in ["mcp_server", "profile", "toolset", "preset"] {
        let documented = legend_fields(&format!("#   [{table}.NAME]"), 7);
        let accepted: BTreeSet<String> = model::table_fields(table)
            .expect("a known table")
            .into_iter()
            .collect();
        assert_eq!(
            documented, accepted,
            "tools.toml legend of `[{table}.NAME]` vs the model's fields"
        );
    }
}

/// Splits the file into `[[tool]]` rows: (line number of the header, lines of the row).
fn tool_rows() -> Vec<(usize, Vec<&'static str>)> {
    let mut rows: Vec<(usize, Vec<&str>)> = Vec::new();
    let mut in_row = false;
    for (n, line) in TOOLS_TOML.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed == "[[tool]]" {
            rows.push((n + 1, Vec::new()));
            in_row = true;
        } else if trimmed.starts_with("[[")
            || (trimmed.starts_with('[') && !trimmed.starts_with("[tool."))
        {
            in_row = false;
        } else if in_row {
            if let Some(row) = rows.last_mut() {
                row.1.push(line);
            }
        }
    }
    rows
}

#[test]
fn every_tool_row_has_an_owner_and_a_description() {
    let rows = tool_rows();
    assert!(
        rows.len() >= 100,
        "the reference catalog declares {} tools; it must declare at least 100",
        rows.len()
    );
    let mut faults = Vec::new();
    for (line, body) in &rows {
        for field in ["owner", "description"] {
            let present = body.iter().any(|l| {
                let l = l.trim_start();
                l.strip_prefix(field)
                    .map(|rest| {
                        rest.trim_start().starts_with('=')
                            && rest
                                .split_once('=')
                                .is_some_and(|(_, v)| v.trim() != "\"\"")
                    })
                    .unwrap_or(false)
            });
            if !present {
                faults.push(format!(
                    "tools.toml:{line}: the `[[tool]]` row has no non-empty `{field}`"
                ));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}
