//! `#[tool]`: binds an async handler function to its row in `tools.toml`.
use proc_macro::TokenStream;

/// Marks `async fn NAME(args: Args, ctx: &ToolContext) -> Result<Out, ToolError>` as the handler of
/// tool `NAME` declared in `tools.toml`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _ = attr;
    item
}
