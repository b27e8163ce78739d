//! Real queries for search latency: the questions of LiveMCPBench's dev tasks and MetaTool's
//! single-tool dev queries.

use std::path::Path;

/// MetaTool dev queries taken: every [`METATOOL_STRIDE`]-th row of `queries_dev.csv`.
pub const METATOOL_STRIDE: usize = 15;

/// The question of every LiveMCPBench dev task (`livemcpbench/tasks_dev.json`), whitespace
/// collapsed, in file order.
///
/// # Errors
/// A message naming the file when it cannot be read or is not the expected JSON.
pub fn livemcpbench(data: &Path) -> Result<Vec<String>, String> {
    let path = data.join("livemcpbench/tasks_dev.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let tasks: Vec<serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| format!("`{}` is not a JSON array: {e}", path.display()))?;
    Ok(tasks
        .iter()
        .filter_map(|t| t.get("Question").and_then(|q| q.as_str()))
        .map(|q| q.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect())
}

/// Every [`METATOOL_STRIDE`]-th query of MetaTool's `metatool/queries_dev.csv` (columns
/// `Query,Tool`), starting with the first.
///
/// # Errors
/// A message naming the file when it cannot be read or parsed.
pub fn metatool(data: &Path) -> Result<Vec<String>, String> {
    let path = data.join("metatool/queries_dev.csv");
    let mut reader = csv::Reader::from_path(&path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, row) in reader.records().enumerate() {
        let row = row.map_err(|e| format!("`{}`: {e}", path.display()))?;
        if i % METATOOL_STRIDE == 0 {
            if let Some(q) = row.get(0) {
                out.push(q.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
    }
    Ok(out)
}

/// Both sets, tagged: `("livemcpbench" | "metatool", query)`.
///
/// # Errors
/// As [`livemcpbench`] and [`metatool`].
pub fn all(data: &Path) -> Result<Vec<(&'static str, String)>, String> {
    let mut out: Vec<(&'static str, String)> = livemcpbench(data)?
        .into_iter()
        .map(|q| ("livemcpbench", q))
        .collect();
    out.extend(metatool(data)?.into_iter().map(|q| ("metatool", q)));
    Ok(out)
}
