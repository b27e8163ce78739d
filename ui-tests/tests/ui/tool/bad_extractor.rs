// A third parameter that is not an extractor of the call's context: reported at its type, with
// the form it must take (`State(v): State<T>`).
use schemars::JsonSchema;
use serde::Deserialize;
use toolcat::{ToolContext, ToolError};

toolcat::include_catalog!(env!("TOOLCAT_UI_CATALOG_DIR"));

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[derive(Clone)]
struct Db;

#[toolcat::tool]
async fn read_file(args: ReadArgs, _ctx: &ToolContext, _db: Db) -> Result<String, ToolError> {
    Ok(args.path)
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    path: String,
}

#[toolcat::tool(name = "write-file")]
async fn write_file(args: WriteArgs, _ctx: &ToolContext) -> Result<usize, ToolError> {
    Ok(args.path.len())
}

fn main() {}
