//! toolcat's OpenAI exports read as the OpenAI SDK's own types (async-openai): every tool of the
//! reference catalog, of the GitHub MCP server's toolsnaps and of LiveMCPBench, each exported
//! and deserialized into `ChatCompletionTools` (Chat Completions, export `openai`) and into the
//! Responses API's `Tool` (export `openai-responses`). Each must be a function tool and
//! serialize back to the same JSON, so no field was unknown to the SDK or dropped by it.
//!
//! Reads the real data sets beside the repository (`../shared/data`), as CI lays them out.

use std::path::{Path, PathBuf};

use async_openai::types::chat::ChatCompletionTools;
use async_openai::types::responses::Tool;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use toolcat::export::{export_tools, ExportFormat};
use toolcat::Catalog;
use toolcat_import::{import, ImportKind};

fn data(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data")).join(rel)
}

fn imported(kind: ImportKind, rel: &str) -> Catalog {
    let out = import(kind, &data(rel)).unwrap_or_else(|e| panic!("{rel} imports: {e}"));
    Catalog::from_source(rel, &out.text).unwrap_or_else(|e| panic!("{rel} loads: {e}"))
}

/// Every tool of `catalog` in `format`, each parsed as `T`, checked by `is_function` and
/// serialized back to the exported JSON; returns how many.
fn parse_all<T: DeserializeOwned + Serialize>(
    name: &str,
    catalog: &Catalog,
    format: ExportFormat,
    is_function: impl Fn(&T) -> bool,
) -> usize {
    let Value::Array(exported) = export_tools(catalog, catalog.tools(), format).to_json() else {
        panic!("the {format} export of {name} is not an array");
    };
    assert_eq!(
        exported.len(),
        catalog.len(),
        "{name}: one definition per tool"
    );
    for tool in &exported {
        let parsed: T =
            serde_json::from_value(tool.clone()).unwrap_or_else(|e| panic!("{name}: {e}: {tool}"));
        assert!(is_function(&parsed), "{name}: not a function tool: {tool}");
        assert_eq!(
            &serde_json::to_value(&parsed).unwrap(),
            tool,
            "{name}: round trip"
        );
    }
    exported.len()
}

#[test]
fn every_export_parses_into_the_openai_sdk_tool_types() {
    let github = imported(ImportKind::GithubToolsnaps, "github-mcp-server/toolsnaps");
    let livemcpbench = imported(ImportKind::LiveMcpBench, "livemcpbench/tools.json");
    let catalogs: [(&str, &Catalog); 3] = [
        ("reference", toolcat_cli::reference_catalog()),
        ("github-toolsnaps", &github),
        ("livemcpbench", &livemcpbench),
    ];
    for (name, catalog) in catalogs {
        let chat = parse_all(
            name,
            catalog,
            ExportFormat::OpenAi,
            |t: &ChatCompletionTools| matches!(t, ChatCompletionTools::Function(_)),
        );
        let responses = parse_all(name, catalog, ExportFormat::OpenAiResponses, |t: &Tool| {
            matches!(t, Tool::Function(_))
        });
        println!("{name}: {chat} Chat Completions tools, {responses} Responses tools");
        assert!(chat > 0);
        assert_eq!(responses, chat);
    }
}
