// A `prepare` function of the wrong shape: reported at the option, not at the handler.
use schemars::JsonSchema;
use serde::Deserialize;
use toolcat::{ToolContext, ToolError};

toolcat::include_catalog!(env!("TOOLCAT_UI_CATALOG_DIR"));

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

fn read_targets(args: ReadArgs) -> Vec<String> {
    vec![args.path]
}

#[toolcat::tool(prepare = read_targets)]
async fn read_file(args: ReadArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(args.path)
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    path: String,
    contents: String,
}

#[toolcat::tool(name = "write-file")]
async fn write_file(args: WriteArgs, _ctx: &ToolContext) -> Result<usize, ToolError> {
    Ok(args.path.len() + args.contents.len())
}

fn main() {}
