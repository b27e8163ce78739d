//! Checks and expansion of `#[tool]`, on `proc_macro2` tokens so they can be unit-tested.
//!
//! Every error is a `compile_error!` at the token at fault (the function name, the name literal,
//! or the faulty part of the signature), and the function is always emitted as written, so the user
//! sees the one real error instead of a cascade. When the tool is a declared local tool but the
//! signature is wrong, a stub `ToolHandler` impl is emitted too, so the generated dispatch table
//! does not add a "no handler" error on top (the approach of thiserror's and clap's fallbacks).

use std::path::{Path, PathBuf};

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use toolcat_catalog::diagnostics::did_you_mean;
use toolcat_catalog::generated::{marker_idents, CATALOG_ENV};
use toolcat_catalog::model::{Tier, SOURCE_LOCAL, SOURCE_LOOP};

/// The required shape, quoted in signature errors.
const SHAPE: &str =
    "async fn NAME(args: Args, ctx: &ToolContext[, State(v): State<T>]) -> Result<Out, ToolError>";

/// What the macro needs to know about the catalog: each `[[tool]]` row's name, source and tier.
pub(crate) struct Catalog {
    /// The catalog's file name as messages show it (`tools.toml`).
    file_name: String,
    /// The rows in file order, or why the catalog cannot be used.
    rows: Result<Vec<Row>, String>,
}

struct Row {
    name: String,
    source: String,
    tier: Tier,
}

impl Catalog {
    /// Reads the catalog named by `TOOLCAT_CATALOG`, else `$CARGO_MANIFEST_DIR/tools.toml`.
    pub(crate) fn from_env() -> Catalog {
        let path = match std::env::var_os(CATALOG_ENV) {
            Some(path) => PathBuf::from(path),
            None => match std::env::var_os("CARGO_MANIFEST_DIR") {
                Some(dir) => Path::new(&dir).join("tools.toml"),
                None => PathBuf::from("tools.toml"),
            },
        };
        let shown = path.display().to_string();
        match std::fs::read_to_string(&path) {
            // A UTF-8 byte order mark is not TOML: columns on line 1 count from after it.
            Ok(source) => {
                Catalog::from_source(&shown, source.strip_prefix('\u{feff}').unwrap_or(&source))
            }
            Err(e) => Catalog {
                file_name: file_name(&path),
                rows: Err(format!(
                    "cannot read the catalog `{shown}`: {e}; `#[tool]` reads the file the build \
                     script names in `{}`, else `tools.toml` beside `Cargo.toml`: call \
                     `toolcat_codegen::build::compile_catalog(\"tools.toml\")` from `build.rs`",
                    CATALOG_ENV
                )),
            },
        }
    }

    /// Parses catalog text; `path` names it in messages.
    pub(crate) fn from_source(path: &str, source: &str) -> Catalog {
        let rows = match toolcat_catalog::load::parse(path, source) {
            Ok(loaded) => Ok(loaded
                .file
                .tool
                .into_iter()
                .map(|t| Row {
                    name: t.name,
                    source: t.source,
                    tier: t.tier,
                })
                .collect()),
            Err(diagnostics) => {
                let first = diagnostics
                    .iter()
                    .find(|d| d.is_error())
                    .or(diagnostics.first())
                    .map(|d| d.headline(path, source))
                    .unwrap_or_default();
                Err(format!(
                    "cannot use the catalog `{path}`: {first}; the build script reports every \
                     error of the file"
                ))
            }
        };
        Catalog {
            file_name: file_name(Path::new(path)),
            rows,
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tools.toml".to_string())
}

/// `#[tool(...)]` options.
struct Options {
    /// `name = "..."`, with the literal's span.
    name: Option<syn::LitStr>,
    /// `catalog = path`; default `crate::toolcat_generated`.
    catalog: Option<syn::Path>,
    /// `prepare = path`: the function implementing `ToolHandler::prepare`.
    prepare: Option<syn::Path>,
}

impl Options {
    /// The options that parsed, and the first error.
    fn parse(attr: TokenStream) -> (Options, Option<syn::Error>) {
        let mut options = Options {
            name: None,
            catalog: None,
            prepare: None,
        };
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("name") {
                options.name = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("catalog") {
                options.catalog = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("prepare") {
                options.prepare = Some(meta.value()?.parse()?);
                Ok(())
            } else {
                let key = meta.path.to_token_stream().to_string().replace(' ', "");
                let hint = match did_you_mean(&key, ["name", "catalog", "prepare"]) {
                    Some(similar) => format!("did you mean `{similar}`? "),
                    None => String::new(),
                };
                Err(meta.error(format!(
                    "unknown `#[tool]` option `{key}`; {hint}the options are \
                     `name = \"tool-name\"`, `catalog = path::to::toolcat_generated` and \
                     `prepare = path::to::prepare_fn`"
                )))
            }
        });
        let error = syn::parse::Parser::parse2(parser, attr).err();
        (options, error)
    }
}

/// The typed parts of a well-formed handler signature.
struct Signature {
    args: syn::Type,
    output: syn::Type,
    /// The optional third parameter's type: an extractor of the call's context (`State<T>`).
    extractor: Option<syn::Type>,
}

/// Expands `#[tool(attr)] item` against `catalog`.
pub(crate) fn tool(attr: TokenStream, item: TokenStream, catalog: &Catalog) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(e) => {
            let error = syn::Error::new(
                e.span(),
                format!("`#[tool]` goes on a handler function `{SHAPE}`"),
            )
            .to_compile_error();
            return quote!(#error #item);
        }
    };
    let fn_name = func.sig.ident.clone();
    // A bad option is reported, and expansion goes on with the options that parsed, so the
    // handler still exists and no "no handler" error follows.
    let (options, option_error) = Options::parse(attr);
    let (name, name_span) = match &options.name {
        Some(lit) => (lit.value(), lit.span()),
        None => (fn_name.unraw().to_string(), fn_name.span()),
    };
    let catalog_path = match options.catalog {
        Some(path) => path.into_token_stream(),
        None => quote!(crate::toolcat_generated),
    };

    let signature = check_signature(&func.sig);
    let marker = lookup(catalog, &name, name_span);
    match (signature, marker) {
        (Ok(sig), Ok(marker)) => {
            let option_error = option_error.map(|e| e.to_compile_error());
            let Signature {
                args,
                output,
                extractor,
            } = sig;
            // The third parameter is built from the context before the handler runs (state not
            // registered fails the call); a type that is no extractor is reported at the type
            // through `FromToolContext`'s `on_unimplemented`.
            let body = match extractor {
                None => quote! { ::std::boxed::Box::pin(#fn_name(args, ctx)) },
                Some(ty) => {
                    let extract = quote_spanned! {ty.span()=>
                        <#ty as ::toolcat::FromToolContext>::from_tool_context(ctx)
                    };
                    quote! {
                        ::std::boxed::Box::pin(async move {
                            let extracted = #extract?;
                            #fn_name(args, ctx, extracted).await
                        })
                    }
                }
            };
            // `fn(&Args, &ToolContext) -> Result<Vec<Target>, ToolError>`, called with the
            // path's span so a function of another shape is reported at the option.
            let prepare = options.prepare.map(|path| {
                let call = quote_spanned! {path.span()=> #path(args, ctx) };
                quote_spanned! {path.span()=>
                    fn prepare(
                        args: &Self::Args,
                        ctx: &::toolcat::ToolContext,
                    ) -> ::core::result::Result<::std::vec::Vec<::toolcat::Target>, ::toolcat::ToolError> {
                        #call
                    }
                }
            });
            let handler_impl = quote_spanned! {fn_name.span()=>
                impl ::toolcat::ToolHandler for #catalog_path::markers::#marker {
                    const NAME: &'static str = #name;
                    type Args = #args;
                    type Output = #output;
                    fn call(
                        args: Self::Args,
                        ctx: &::toolcat::ToolContext,
                    ) -> ::toolcat::BoxFuture<'_, ::core::result::Result<Self::Output, ::toolcat::ToolError>> {
                        #body
                    }
                    #prepare
                }
            };
            quote! {
                #func
                #handler_impl
                #option_error
            }
        }
        (Err(mut sig_error), Ok(marker)) => {
            if let Some(e) = option_error {
                sig_error.combine(e);
            }
            // A declared local tool: stand in for its handler so the dispatch table type-checks.
            let stub = quote_spanned! {fn_name.span()=>
                impl ::toolcat::ToolHandler for #catalog_path::markers::#marker {
                    const NAME: &'static str = #name;
                    type Args = ();
                    type Output = ();
                    fn call(
                        _: Self::Args,
                        _: &::toolcat::ToolContext,
                    ) -> ::toolcat::BoxFuture<'_, ::core::result::Result<(), ::toolcat::ToolError>> {
                        ::std::boxed::Box::pin(::core::future::pending())
                    }
                }
            };
            failed(func, sig_error, Some(stub))
        }
        (signature, Err(lookup_error)) => {
            // With a bad option the name looked up may not be the one meant (`nmae = "x"`
            // leaves the function name), so the option error stands alone.
            let mut error = option_error.unwrap_or(lookup_error);
            if let Err(sig_error) = signature {
                error.combine(sig_error);
            }
            failed(func, error, None)
        }
    }
}

/// The function as written (not warned about as unused), the errors, and an optional stub.
fn failed(mut func: syn::ItemFn, error: syn::Error, stub: Option<TokenStream>) -> TokenStream {
    func.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    let error = error.to_compile_error();
    quote! {
        #func
        #error
        #stub
    }
}

/// Checks the shape `async fn NAME(args: Args, ctx: &ToolContext) -> Result<Out, ToolError>`,
/// collecting every fault.
fn check_signature(sig: &syn::Signature) -> syn::Result<Signature> {
    let name = sig.ident.unraw();
    let mut errors: Vec<syn::Error> = Vec::new();
    if sig.asyncness.is_none() {
        let fn_token = &sig.fn_token;
        let ident = &sig.ident;
        errors.push(syn::Error::new_spanned(
            quote!(#fn_token #ident),
            format!(
                "`#[tool]` handler `{name}` must be an `async fn`: \
                 `async fn {name}(args: Args, ctx: &ToolContext) -> Result<Out, ToolError>`"
            ),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            format!(
                "`#[tool]` handler `{name}` cannot be generic: its argument and output types are \
                 the tool's JSON Schema and must be concrete"
            ),
        ));
    }
    let receiver = sig.inputs.iter().find_map(|arg| match arg {
        syn::FnArg::Receiver(r) => Some(r),
        syn::FnArg::Typed(_) => None,
    });
    let mut args = None;
    if let Some(receiver) = receiver {
        errors.push(syn::Error::new_spanned(
            receiver,
            format!(
                "`#[tool]` handler `{name}` cannot take `self`; it is a free function `{SHAPE}`"
            ),
        ));
    } else if !(2..=3).contains(&sig.inputs.len()) {
        let span = if sig.inputs.is_empty() {
            sig.paren_token.span.join()
        } else {
            sig.inputs.span()
        };
        errors.push(syn::Error::new(
            span,
            format!(
                "`#[tool]` handler `{name}` takes 2 arguments, `args: Args` and \
                 `ctx: &ToolContext`, and optionally a third, `State(v): State<T>`, but has {}",
                sig.inputs.len()
            ),
        ));
    } else if let Some(syn::FnArg::Typed(first)) = sig.inputs.first() {
        args = Some((*first.ty).clone());
    }
    let extractor = match sig.inputs.iter().nth(2) {
        Some(syn::FnArg::Typed(third)) if receiver.is_none() && sig.inputs.len() == 3 => {
            Some((*third.ty).clone())
        }
        _ => None,
    };
    let output = match &sig.output {
        syn::ReturnType::Default => {
            errors.push(syn::Error::new(
                sig.paren_token.span.close(),
                format!(
                    "`#[tool]` handler `{name}` must return `Result<Out, ToolError>`; it returns \
                     nothing"
                ),
            ));
            None
        }
        syn::ReturnType::Type(_, ty) => {
            let out = result_ok_type(ty);
            if out.is_none() {
                errors.push(syn::Error::new_spanned(
                    ty,
                    format!("`#[tool]` handler `{name}` must return `Result<Out, ToolError>`"),
                ));
            }
            out
        }
    };
    let mut errors = errors.into_iter();
    if let Some(mut first) = errors.next() {
        for e in errors {
            first.combine(e);
        }
        return Err(first);
    }
    match (args, output) {
        (Some(args), Some(output)) => Ok(Signature {
            args,
            output,
            extractor,
        }),
        // Unreachable: both are set whenever no error was recorded.
        _ => Err(syn::Error::new(
            sig.ident.span(),
            format!("`#[tool]` handler `{name}` must have the shape `{SHAPE}`"),
        )),
    }
}

/// `Out` of a return type `Result<Out, E>` (any path ending in `Result` with a first type
/// argument, so `toolcat::ToolResult<Out>`-style aliases are not accepted but `std::result::Result`
/// is).
fn result_ok_type(ty: &syn::Type) -> Option<syn::Type> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })
}

/// The marker type of local tool `name`, or the error explaining why `name` takes no handler.
fn lookup(catalog: &Catalog, name: &str, span: Span) -> syn::Result<syn::Ident> {
    let file = &catalog.file_name;
    let rows = catalog
        .rows
        .as_ref()
        .map_err(|message| syn::Error::new(span, message))?;
    let Some(row) = rows.iter().find(|r| r.name == name) else {
        let mut message = format!("tool `{name}` is not declared in {file}");
        match did_you_mean(name, rows.iter().map(|r| r.name.as_str())) {
            Some(similar) => message.push_str(&format!(
                "\nhelp: did you mean `{similar}`? bind this function to it with \
                 `#[tool(name = \"{similar}\")]`, or add a [[tool]] row named `{name}` to {file}"
            )),
            None => message.push_str(&format!(
                "\nhelp: add a [[tool]] row named `{name}` to {file}"
            )),
        }
        return Err(syn::Error::new(span, message));
    };
    if row.source == SOURCE_LOOP || row.tier == Tier::Loop {
        return Err(syn::Error::new(
            span,
            format!(
                "tool `{name}` is a discovery meta-tool (tier `loop`) served by the toolcat \
                 runtime, so it takes no `#[tool]` handler\n\
                 help: remove this function, or declare a tool of your own in {file}"
            ),
        ));
    }
    if row.source != SOURCE_LOCAL {
        let server = &row.source;
        return Err(syn::Error::new(
            span,
            format!(
                "tool `{name}` is served by MCP server `{server}` (`source = \"{server}\"` in \
                 {file}), so it takes no `#[tool]` handler\n\
                 help: remove this function, or remove `source` from the tool's row to handle it \
                 in this crate"
            ),
        ));
    }
    let locals: Vec<&str> = rows
        .iter()
        .filter(|r| r.source == SOURCE_LOCAL)
        .map(|r| r.name.as_str())
        .collect();
    let markers = marker_idents(&locals);
    let marker = locals
        .iter()
        .position(|n| *n == name)
        .and_then(|i| markers.get(i))
        .ok_or_else(|| syn::Error::new(span, format!("tool `{name}` has no marker type")))?;
    // `marker_idents` writes a raw identifier as `r#name`.
    Ok(match marker.strip_prefix("r#") {
        Some(raw) => proc_macro2::Ident::new_raw(raw, span),
        None => proc_macro2::Ident::new(marker, span),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: &[(&str, &str, Tier)]) -> Catalog {
        Catalog {
            file_name: "tools.toml".to_string(),
            rows: Ok(rows
                .iter()
                .map(|&(name, source, tier)| Row {
                    name: name.to_string(),
                    source: source.to_string(),
                    tier,
                })
                .collect()),
        }
    }

    fn catalog() -> Catalog {
        rows(&[
            ("read_file", "local", Tier::Silent),
            ("search_issues", "github", Tier::Silent),
            ("write-file", "local", Tier::Gated),
            ("tool_search", "loop", Tier::Loop),
        ])
    }

    fn expand(attr: TokenStream, item: TokenStream) -> String {
        tool(attr, item, &catalog()).to_string()
    }

    const GOOD: &str = "async fn read_file(args: ReadArgs, ctx: &ToolContext) -> Result<Out, ToolError> { todo!() }";

    #[test]
    fn declared_local_tool_gets_a_handler_impl() {
        let out = expand(quote!(), GOOD.parse().unwrap());
        assert!(
            out.contains("impl :: toolcat :: ToolHandler for crate :: toolcat_generated :: markers :: read_file"),
            "{out}"
        );
        assert!(out.contains("type Args = ReadArgs"), "{out}");
        assert!(out.contains("type Output = Out"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn name_and_catalog_options_pick_the_marker() {
        let item = "async fn write(args: W, ctx: &ToolContext) -> Result<(), ToolError> {}";
        let out = expand(
            quote!(name = "write-file", catalog = my::cat),
            item.parse().unwrap(),
        );
        assert!(
            out.contains("for my :: cat :: markers :: write_file"),
            "{out}"
        );
        assert!(
            out.contains("const NAME : & 'static str = \"write-file\""),
            "{out}"
        );
    }

    #[test]
    fn prepare_option_implements_the_prepare_step() {
        let out = expand(quote!(prepare = targets::of_read), GOOD.parse().unwrap());
        assert!(out.contains("fn prepare"), "{out}");
        assert!(out.contains("targets :: of_read (args , ctx)"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
        let out = expand(quote!(), GOOD.parse().unwrap());
        assert!(
            !out.contains("fn prepare"),
            "without the option the trait's default applies: {out}"
        );
        let out = expand(quote!(prepaer = x), GOOD.parse().unwrap());
        assert!(out.contains("did you mean `prepare`?"), "{out}");
    }

    #[test]
    fn undeclared_tool_suggests_the_closest_name() {
        let item = GOOD.replace("read_file", "raed_file");
        let out = expand(quote!(), item.parse().unwrap());
        assert!(
            out.contains("tool `raed_file` is not declared in tools.toml"),
            "{out}"
        );
        assert!(out.contains("did you mean `read_file`?"), "{out}");
        assert!(!out.contains("ToolHandler"), "{out}");
        assert!(
            out.contains("async fn raed_file"),
            "the function is kept: {out}"
        );
    }

    #[test]
    fn remote_and_loop_tools_take_no_handler() {
        let out = expand(
            quote!(),
            GOOD.replace("read_file", "search_issues").parse().unwrap(),
        );
        assert!(out.contains("served by MCP server `github`"), "{out}");
        let out = expand(
            quote!(),
            GOOD.replace("read_file", "tool_search").parse().unwrap(),
        );
        assert!(out.contains("discovery meta-tool"), "{out}");
    }

    #[test]
    fn bad_signatures_are_reported_together_with_a_stub_impl() {
        let item = "fn read_file(args: ReadArgs) -> String { todo!() }";
        let out = expand(quote!(), item.parse().unwrap());
        assert!(out.contains("must be an `async fn`"), "{out}");
        assert!(out.contains("takes 2 arguments"), "{out}");
        assert!(
            out.contains("must return `Result<Out, ToolError>`"),
            "{out}"
        );
        assert!(out.contains("type Args = ()"), "stub impl expected: {out}");
    }

    #[test]
    fn a_third_parameter_is_extracted_from_the_context() {
        let item = "async fn read_file(args: ReadArgs, ctx: &ToolContext, State(db): State<Db>) -> Result<Out, ToolError> { todo!() }";
        let out = expand(quote!(), item.parse().unwrap());
        assert!(
            out.contains(
                "< State < Db > as :: toolcat :: FromToolContext > :: from_tool_context (ctx)"
            ),
            "{out}"
        );
        assert!(out.contains("read_file (args , ctx , extracted)"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
        let item = "async fn read_file(args: ReadArgs, ctx: &ToolContext, a: A, b: B) -> Result<Out, ToolError> { todo!() }";
        let out = expand(quote!(), item.parse().unwrap());
        assert!(out.contains("optionally a third"), "{out}");
        assert!(out.contains("but has 4"), "{out}");
    }

    #[test]
    fn unknown_option_is_an_error() {
        let out = expand(quote!(nmae = "x"), GOOD.parse().unwrap());
        assert!(
            out.contains("unknown `#[tool]` option `nmae`; did you mean `name`?"),
            "{out}"
        );
        assert!(
            out.contains("ToolHandler"),
            "the handler is still implemented: {out}"
        );
        let undeclared = GOOD.replace("read_file", "read_file_too");
        let out = expand(quote!(nmae = "read_file"), undeclared.parse().unwrap());
        assert!(out.contains("option `nmae`"), "{out}");
        assert!(
            !out.contains("not declared"),
            "the option error stands alone: {out}"
        );
    }

    #[test]
    fn unreadable_catalog_is_reported_at_the_function() {
        let catalog = Catalog {
            file_name: "tools.toml".into(),
            rows: Err("cannot read the catalog `x`".into()),
        };
        let out = tool(quote!(), GOOD.parse().unwrap(), &catalog).to_string();
        assert!(out.contains("cannot read the catalog"), "{out}");
    }
}
