// `#[tool(prepare = FN)]`: the prepare step names the call's targets through the dispatch table;
// a handler without the option declares none.
use schemars::JsonSchema;
use serde::Deserialize;
use toolcat::{Access, Target, ToolContext, ToolError};

toolcat::include_catalog!(env!("TOOLCAT_UI_CATALOG_DIR"));

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[toolcat::tool]
async fn read_file(args: ReadArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(args.path)
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    path: String,
    contents: String,
}

fn write_targets(args: &WriteArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    if args.path.contains("..") {
        return Err(ToolError::Failed(format!(
            "`{}` leaves the workspace",
            args.path
        )));
    }
    let path = ctx.workspace.join(&args.path);
    Ok(vec![
        Target::path_lock(&path, Access::Write).with_fingerprint(args.contents.len().to_string())
    ])
}

#[toolcat::tool(name = "write-file", prepare = write_targets)]
async fn write_file(args: WriteArgs, _ctx: &ToolContext) -> Result<usize, ToolError> {
    Ok(args.path.len() + args.contents.len())
}

use toolcat_generated::{ToolId, HANDLERS};

fn main() {
    let ctx = ToolContext::new("/ws");
    let write = HANDLERS[ToolId::from_name("write-file").expect("declared").index()]
        .expect("write-file has a handler");
    let targets = (write.prepare)(
        &serde_json::json!({ "path": "a.txt", "contents": "bc" }),
        &ctx,
    )
    .expect("prepared");
    assert_eq!(
        targets,
        [Target::new("file:/ws/a.txt", Access::Write).with_fingerprint("2")]
    );
    let refused = (write.prepare)(&serde_json::json!({ "path": "../x", "contents": "" }), &ctx);
    assert!(refused.is_err());
    let bad = (write.prepare)(&serde_json::json!({ "path": 1 }), &ctx);
    assert!(matches!(bad, Err(ToolError::InvalidArguments { .. })));

    let read = HANDLERS[ToolId::ReadFile.index()].expect("read_file has a handler");
    let none = (read.prepare)(&serde_json::json!({ "path": "a.txt" }), &ctx).expect("prepared");
    assert!(none.is_empty(), "no `prepare` option: no targets");
}
