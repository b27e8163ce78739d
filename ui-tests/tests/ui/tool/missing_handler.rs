// A local tool declared in tools.toml (`write-file`) with no `#[tool]` handler.
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

fn main() {}
