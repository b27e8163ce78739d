//! A minimal agent that mounts the file tools of `toolcat-tools`: its `tools.toml` declares
//! the rows, and each handler below is one line calling the shared implementation.

#![forbid(unsafe_code)]

use toolcat::{ToolContext, ToolError};
use toolcat_tools::files::{self as tools, *};

toolcat::include_catalog!();

/// `read_file`, mounted.
#[toolcat::tool(prepare = tools::read_file_targets)]
pub async fn read_file(args: ReadFileArgs, ctx: &ToolContext) -> Result<ReadFileOutput, ToolError> {
    tools::read_file(args, ctx).await
}

/// `edit_file` (string replace), mounted.
#[toolcat::tool(prepare = tools::edit_file_targets)]
pub async fn edit_file(args: EditFileArgs, ctx: &ToolContext) -> Result<EditFileOutput, ToolError> {
    tools::edit_file(args, ctx).await
}

/// `edit_lines` (Hashline), mounted.
#[toolcat::tool(prepare = tools::edit_lines_targets)]
pub async fn edit_lines(
    args: EditLinesArgs,
    ctx: &ToolContext,
) -> Result<EditLinesOutput, ToolError> {
    tools::edit_lines(args, ctx).await
}

/// `apply_patch`, mounted.
#[toolcat::tool(prepare = tools::apply_patch_targets)]
pub async fn apply_patch(
    args: ApplyPatchArgs,
    ctx: &ToolContext,
) -> Result<ApplyPatchOutput, ToolError> {
    tools::apply_patch(args, ctx).await
}
