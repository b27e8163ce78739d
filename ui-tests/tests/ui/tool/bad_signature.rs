// Handlers of the wrong shape: each fault is reported where it is, and no "no handler" error
// follows for the tools they were meant to handle.
use schemars::JsonSchema;
use serde::Deserialize;
use toolcat::{ToolContext, ToolError};

toolcat::include_catalog!(env!("TOOLCAT_UI_CATALOG_DIR"));

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[toolcat::tool]
fn read_file(args: ReadArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(args.path)
}

#[toolcat::tool(name = "write-file")]
async fn write_file(args: ReadArgs) -> String {
    args.path
}

fn main() {}
