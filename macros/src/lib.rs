//! `#[tool]`: binds an async handler function to its row in `tools.toml`.
//!
//! A thin shim over `toolcat-catalog`: the catalog is read with the same loader the build script
//! uses (`toolcat_catalog::load::parse`) and the marker type of a tool is named by the same
//! function that named it in the generated glue (`toolcat_catalog::generated::marker_idents`), so the
//! macro and the build script cannot disagree. The checks and the expansion live in the `expand` module
//! (plain `proc_macro2` code with unit tests); this file only finds the catalog.

#![forbid(unsafe_code)]

use proc_macro::TokenStream;

mod expand;

/// Marks `async fn NAME(args: Args, ctx: &ToolContext) -> Result<Out, ToolError>` as the handler of
/// tool `NAME` declared in `tools.toml` (`Args: Deserialize + JsonSchema + Send`,
/// `Out: Serialize + JsonSchema + Send`).
///
/// The JSON Schema of `Args` is the tool's input schema; the JSON Schema of `Out`, as it
/// serializes, is its output schema (`toolcat::Catalog::output_schema`): `toolcat serve` and
/// `toolcat::mcp::Server` list it as the tool's MCP `outputSchema` and answer each call with
/// `structuredContent` too, when it is an object schema (a struct, a map; MCP takes no other, so
/// a `String`, a number, a `Vec` or an enum gets none there), and Code Mode's TypeScript
/// declarations type the tool's result with it. Derive `schemars::JsonSchema` on `Out` beside
/// `serde::Serialize`; a type without it is a compile error at the return type ("the trait bound
/// `Out: JsonSchema` is not satisfied"). To declare no output schema, return
/// `serde_json::Value`: its schema accepts any value, and the tool is then listed without one.
///
/// An optional third parameter receives application state the host registered once, by type
/// (`Coordinator::with_state`, `toolcat::mcp::Server::state`, `ToolContext::with_state`):
/// `async fn NAME(args: Args, ctx: &ToolContext, State(db): State<Db>) -> Result<Out, ToolError>`
/// (`toolcat::State`, after axum's; `Db: Clone + Send + Sync + 'static`, cloned once per call).
/// It is built before the function runs: when no `Db` is registered the call fails with
/// `ToolError::MissingState` naming the type and the fix, and the function does not run. The same
/// value is `ctx.state::<Db>()`. A third parameter of another type is a compile error at the
/// type (it must implement `toolcat::FromToolContext`). `ctx.caller()` says who calls
/// (`toolcat::Caller`: an MCP client's declared name and version, the session, the profile and
/// exposure served).
///
/// Options: `#[tool(name = "kebab-name")]` binds a function to a tool whose name is not a Rust
/// identifier; `#[tool(catalog = some::path)]` names the module where `toolcat::include_catalog!()`
/// was invoked (default `crate::toolcat_generated`); `#[tool(prepare = some::function)]` names the
/// tool's prepare step, `fn(args: &Args, ctx: &ToolContext) -> Result<Vec<Target>, ToolError>`,
/// which resolves the concrete targets of a call (files read or written, with fingerprints) for
/// approval, scheduling and re-verification by the execution coordinator (default: no targets).
///
/// The function is kept as written and `toolcat::ToolHandler` is implemented for the tool's marker
/// type, so a second handler for the same tool is a conflicting-implementation error (E0119).
/// `Args` and `Out` become that impl's associated types, so they must be visible in the whole
/// crate: private at the crate root, `pub(crate)` or `pub` in a submodule (rustc reports E0446,
/// "private type in public interface", otherwise).
///
/// The catalog read is the file named by the `TOOLCAT_CATALOG` environment variable (set by
/// `toolcat_codegen::build::compile_catalog` in the crate's build script), else `tools.toml` beside
/// the crate's `Cargo.toml`. Errors, each at the function name or the faulty part of the signature:
/// a name `tools.toml` does not declare (with a did-you-mean), a tool served by an MCP server or by
/// the runtime, and a signature of the wrong shape.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into(), &expand::Catalog::from_env()).into()
}
