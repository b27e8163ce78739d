//! The README's quick start is the tested fixture: every code block of that section is a verbatim
//! excerpt of a file of tests/fixtures/quickstart.

const README: &str = include_str!("../README.md");

fn quickstart_files() -> Vec<(String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/quickstart");
    ["Cargo.toml", "tools.toml", "build.rs", "src/main.rs"]
        .iter()
        .map(|f| {
            let path = format!("{root}/{f}");
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            (f.to_string(), text)
        })
        .collect()
}

#[test]
fn every_quick_start_block_is_an_excerpt_of_the_fixture() {
    let start = README
        .find("## Quick start")
        .expect("the README has a quick start section");
    let section = &README[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let files = quickstart_files();
    let mut blocks = 0;
    let mut rest = section;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = after.find('\n').expect("a fence line ends") + 1;
        let close = after[body_start..]
            .find("```")
            .expect("every block is closed");
        let body = &after[body_start..body_start + close];
        blocks += 1;
        assert!(
            files.iter().any(|(_, text)| text.contains(body)),
            "README quick-start block {blocks} is not in tests/fixtures/quickstart; update one to match the other:\n{body}"
        );
        rest = &after[body_start + close + 3..];
    }
    assert!(blocks >= 4, "the quick start shows {blocks} code blocks");
}

#[test]
fn every_metric_is_documented_with_its_type_labels_and_unit() {
    use toolcat::telemetry::{MetricKind, METRICS};
    for m in METRICS {
        let row = README
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", m.name)))
            .unwrap_or_else(|| {
                panic!(
                    "README's \"Observability\" table has no row for `{}`",
                    m.name
                )
            });
        let kind = match m.kind {
            MetricKind::Counter => "counter",
            MetricKind::Histogram => "histogram",
        };
        let labels: Vec<String> = m.labels.iter().map(|l| format!("`{l}`")).collect();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells.get(2), Some(&kind), "{}: {row}", m.name);
        assert_eq!(
            cells.get(3),
            Some(&labels.join(", ").as_str()),
            "{}: {row}",
            m.name
        );
        assert_eq!(cells.get(4), Some(&m.unit), "{}: {row}", m.name);
    }
}
