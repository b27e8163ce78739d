// Every local tool has a handler; the dispatch table runs one, and the compiled catalog opens.
use schemars::JsonSchema;
use serde::Deserialize;
use toolcat::{ToolContext, ToolError};

toolcat::include_catalog!(env!("TOOLCAT_UI_CATALOG_DIR"));

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[toolcat::tool]
async fn read_file(args: ReadArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(args.path)
}

// A handler in a submodule: its argument type is `pub(crate)`, as visible as the marker type.
mod files {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use toolcat::{ToolContext, ToolError};

    #[derive(Deserialize, JsonSchema)]
    pub(crate) struct WriteArgs {
        path: String,
        contents: String,
    }

    #[toolcat::tool(name = "write-file")]
    async fn write_file(args: WriteArgs, _ctx: &ToolContext) -> Result<usize, ToolError> {
        Ok(args.path.len() + args.contents.len())
    }
}

use toolcat_generated::{ToolId, HANDLERS};

#[tokio::main]
async fn main() {
    let ctx = ToolContext::new(".");
    let read = HANDLERS[ToolId::ReadFile.index()].expect("read_file has a handler");
    assert_eq!(read.name, "read_file");
    let out = (read.call)(serde_json::json!({ "path": "notes.txt" }), &ctx).await;
    assert_eq!(out.expect("read_file runs"), serde_json::json!("notes.txt"));

    let write = HANDLERS[ToolId::from_name("write-file").expect("declared").index()]
        .expect("write-file has a handler");
    let out = (write.call)(serde_json::json!({ "path": "a", "contents": "bc" }), &ctx).await;
    assert_eq!(out.expect("write-file runs"), serde_json::json!(3));
    let bad = (write.call)(serde_json::json!({ "path": 1 }), &ctx).await;
    assert!(
        bad.is_err(),
        "arguments that do not fit the schema are rejected"
    );

    assert!(HANDLERS[ToolId::SearchIssues.index()].is_none());
    assert!(HANDLERS[ToolId::ToolSearch.index()].is_none());

    let catalog = toolcat_generated::catalog();
    assert_eq!(catalog.len(), ToolId::ALL.len());
}
