// The catalog included in a module other than the crate root, named with `catalog = path`.
use schemars::JsonSchema;
use serde::Deserialize;
use toolcat::{ToolContext, ToolError};

mod generated {
    toolcat::include_catalog!(env!("TOOLCAT_UI_CATALOG_DIR"));
}

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[toolcat::tool(catalog = crate::generated::toolcat_generated)]
async fn read_file(args: ReadArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(args.path)
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    path: String,
    contents: String,
}

#[toolcat::tool(name = "write-file", catalog = generated::toolcat_generated)]
async fn write_file(args: WriteArgs, _ctx: &ToolContext) -> Result<usize, ToolError> {
    Ok(args.path.len() + args.contents.len())
}

fn main() {
    use generated::toolcat_generated::{ToolId, HANDLERS};
    let read = HANDLERS[ToolId::ReadFile.index()].expect("read_file has a handler");
    assert_eq!(read.name, "read_file");
    let write = HANDLERS[ToolId::WriteFile.index()].expect("write-file has a handler");
    assert_eq!(write.name, "write-file");
}
