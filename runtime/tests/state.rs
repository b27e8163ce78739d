//! Application state and caller identity as handlers see them: state registered on the
//! coordinator reaches the handler (by `ToolContext::state` and by the `State<T>` extractor the
//! `#[tool]` macro calls), state nobody registered fails the call naming the type and the fix, and
//! the caller a host sets, or the MCP server derives from the client's `initialize`, is what the
//! handler reads. The MCP part runs the real rmcp server over an in-process pipe.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::{json, Value};
use toolcat::{
    erase, BoxFuture, CallError, CallRequest, Caller, Catalog, Coordinator, ErasedHandler,
    FromToolContext, State, ToolContext, ToolError, ToolHandler, ToolIndex,
};

const CATALOG: &str = r#"
[toolset.app]
description = "Tools that use the host's state"

[[tool]]
name = "greet"
description = "Greets someone with the host's greeting."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["app"]
owner = "tests"

[[tool]]
name = "whoami"
description = "Says who calls and under which scope."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["app"]
owner = "tests"
"#;

/// The host's greeting configuration; `calls` counts the calls that read it.
#[derive(Clone)]
struct Greeting {
    word: String,
    calls: Arc<AtomicUsize>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    name: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// A handler with the extractor form, as `#[tool]` writes it:
/// `async fn greet(args, ctx, State(g): State<Greeting>)`.
async fn greet(
    args: GreetArgs,
    ctx: &ToolContext,
    State(greeting): State<Greeting>,
) -> Result<Value, ToolError> {
    greeting.calls.fetch_add(1, Ordering::SeqCst);
    // The same value through the context.
    let same = ctx.state::<Greeting>()?;
    Ok(
        json!({ "text": format!("{}, {}", greeting.word, args.name), "same": same.word == greeting.word }),
    )
}

struct Greet;
impl ToolHandler for Greet {
    const NAME: &'static str = "greet";
    type Args = GreetArgs;
    type Output = Value;
    // What `#[tool]` expands a three-parameter handler to.
    fn call(args: GreetArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let extracted = <State<Greeting> as FromToolContext>::from_tool_context(ctx)?;
            greet(args, ctx, extracted).await
        })
    }
}

struct WhoAmI;
impl ToolHandler for WhoAmI {
    const NAME: &'static str = "whoami";
    type Args = NoArgs;
    type Output = Value;
    fn call(_: NoArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            Ok(match ctx.caller() {
                None => Value::Null,
                Some(c) => json!({
                    "name": c.name,
                    "version": c.version,
                    "session": c.session,
                    "profile": c.profile,
                    "exposure": c.exposure.map(|e| e.as_str()),
                }),
            })
        })
    }
}

static HANDLERS: [Option<ErasedHandler>; 2] = [Some(erase::<Greet>()), Some(erase::<WhoAmI>())];

fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| {
        Catalog::from_source_with_handlers("state.toml", CATALOG, &HANDLERS)
            .expect("the test catalog compiles")
    })
}

fn tool(name: &str) -> ToolIndex {
    catalog().tool(name).expect("a declared tool")
}

fn all() -> Vec<u64> {
    catalog().profile_tools(catalog().full_profile()).to_vec()
}

fn coordinator() -> Coordinator<'static> {
    Coordinator::new(catalog(), ToolContext::new(std::env::temp_dir()))
}

#[tokio::test]
async fn registered_state_reaches_the_handler() {
    let calls = Arc::new(AtomicUsize::new(0));
    let coordinator = coordinator().with_state(Greeting {
        word: "Ahoy".into(),
        calls: Arc::clone(&calls),
    });
    let allowed = all();
    let outcome = coordinator
        .call(CallRequest::new(
            tool("greet"),
            json!({"name": "Ada"}),
            &allowed,
        ))
        .await;
    let value = outcome.result.expect("the call succeeds");
    let value: Value = serde_json::from_str(&value.text).expect("JSON result");
    assert_eq!(value, json!({"text": "Ahoy, Ada", "same": true}));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the handler read the host's value"
    );
    // Clones of the coordinator share it.
    let clone = coordinator.clone();
    clone
        .call(CallRequest::new(
            tool("greet"),
            json!({"name": "Bo"}),
            &allowed,
        ))
        .await
        .result
        .expect("the clone's call succeeds");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn missing_state_is_a_clear_error_naming_the_type_and_the_fix() {
    let allowed = all();
    let outcome = coordinator()
        .call(CallRequest::new(
            tool("greet"),
            json!({"name": "Ada"}),
            &allowed,
        ))
        .await;
    let Err(CallError::Tool(e @ ToolError::MissingState(_))) = &outcome.result else {
        panic!("expected a missing-state error: {:?}", outcome.result);
    };
    let message = e.to_string();
    assert!(
        message.contains("state::Greeting"),
        "names the type: {message}"
    );
    assert!(
        message.contains(".with_state(...)"),
        "gives the fix: {message}"
    );
    // `ctx.state` says the same outside a coordinator.
    let ctx = ToolContext::new(".");
    let err = ctx.state::<Greeting>().map(|_| ()).unwrap_err();
    assert!(matches!(err, ToolError::MissingState(name) if name.ends_with("Greeting")));
    let ctx = ctx.with_state(7u32);
    assert_eq!(ctx.state::<u32>().ok(), Some(&7));
    assert!(ctx.state::<u64>().is_err(), "state is by exact type");
}

#[tokio::test]
async fn the_caller_a_host_sets_is_what_the_handler_reads() {
    let allowed = all();
    let coordinator = coordinator();
    let unsaid = coordinator
        .call(CallRequest::new(tool("whoami"), json!({}), &allowed))
        .await
        .result
        .expect("the call succeeds");
    assert_eq!(unsaid.text, "null", "no caller set: none seen");
    let caller = Caller {
        session: Some("s-1".into()),
        ..Caller::named("nightly-job")
    };
    let said = coordinator
        .call(CallRequest::new(tool("whoami"), json!({}), &allowed).with_caller(caller))
        .await
        .result
        .expect("the call succeeds");
    let said: Value = serde_json::from_str(&said.text).expect("JSON result");
    assert_eq!(
        said,
        json!({"name": "nightly-job", "version": null, "session": "s-1", "profile": null, "exposure": null})
    );
}

/// Over MCP (the rmcp server of `toolcat::mcp`, on an in-process pipe): the handler sees the
/// client's declared `clientInfo` and the profile and exposure served; state registered on the
/// one-call [`toolcat::mcp::Server`] reaches the handler.
#[cfg(feature = "mcp")]
#[tokio::test]
async fn over_mcp_the_handler_sees_the_client_and_the_scope() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
    use toolcat::mcp::{serve_lines, Exposure, Server};

    let calls = Arc::new(AtomicUsize::new(0));
    let profile = catalog().profile_name(catalog().full_profile()).to_string();
    let shared = Server::new(catalog(), &profile, Exposure::ReadOnly)
        .state(Greeting {
            word: "Hello".into(),
            calls: Arc::clone(&calls),
        })
        .shared()
        .expect("the scope serves");
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(server);
    let served = tokio::spawn(serve_lines(shared, BufReader::new(server_in), server_out));
    let (client_in, mut client_out) = tokio::io::split(client);
    let mut lines = BufReader::new(client_in).lines();
    let send = |v: Value| {
        let mut line = v.to_string();
        line.push('\n');
        line
    };
    let init = send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe-client", "version": "4.5.6"}
        }}),
    );
    client_out.write_all(init.as_bytes()).await.unwrap();
    let answer = lines
        .next_line()
        .await
        .unwrap()
        .expect("initialize answers");
    assert!(answer.contains("\"id\":1"), "{answer}");
    let rest = [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "Ada"}}}),
    ];
    for message in rest {
        client_out
            .write_all(send(message).as_bytes())
            .await
            .unwrap();
    }
    let mut results = std::collections::HashMap::new();
    while results.len() < 2 {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the server answers");
        let v: Value = serde_json::from_str(&line).expect("JSON-RPC");
        if let Some(id) = v["id"].as_i64() {
            let text = v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("a text result: {line}"))
                .to_string();
            results.insert(id, text);
        }
    }
    let whoami: Value = serde_json::from_str(&results[&2]).expect("JSON result");
    assert_eq!(
        whoami,
        json!({"name": "probe-client", "version": "4.5.6", "session": null, "profile": profile, "exposure": "read-only"})
    );
    let greet: Value = serde_json::from_str(&results[&3]).expect("JSON result");
    assert_eq!(greet["text"], "Hello, Ada");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    drop(client_out);
    drop(lines);
    let _ = served.await;
}
