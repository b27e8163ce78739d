// An output type without `JsonSchema`: its schema is the tool's output schema, so the error is
// at the handler's return type, naming the missing trait.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{ToolContext, ToolError};

toolcat::include_catalog!(env!("TOOLCAT_UI_CATALOG_DIR"));

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[derive(Serialize)]
struct ReadOutput {
    text: String,
}

#[toolcat::tool]
async fn read_file(args: ReadArgs, _ctx: &ToolContext) -> Result<ReadOutput, ToolError> {
    Ok(ReadOutput { text: args.path })
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
