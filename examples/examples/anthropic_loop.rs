//! The discovery loop against Anthropic's Messages API (reqwest and JSON: Anthropic has no
//! official Rust SDK), with the reference catalog's real tools working in the current directory.
//! Request and response shapes: <https://docs.anthropic.com/en/api/messages>.

mod common;

use std::env::var;
use std::sync::Arc;

use serde_json::{json, Value};
use toolcat::export::ExportFormat;
use toolcat::{Coordinator, ResultArchive, Session, SessionOptions, ToolContext};

const USAGE: &str = "anthropic_loop: set ANTHROPIC_API_KEY and ANTHROPIC_MODEL (and \
ANTHROPIC_BASE_URL for another endpoint; default https://api.anthropic.com), then run
  cargo run -p toolcat-examples --example anthropic_loop -- \"show me the last commits\"";
const DEFAULT_MESSAGE: &str = "show me the last commits";
const MAX_STEPS: usize = 8;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (Ok(key), Ok(model)) = (var("ANTHROPIC_API_KEY"), var("ANTHROPIC_MODEL")) else {
        println!("{USAGE}");
        return Ok(());
    };
    let base = var("ANTHROPIC_BASE_URL").unwrap_or("https://api.anthropic.com".into());
    let message = std::env::args().nth(1).unwrap_or(DEFAULT_MESSAGE.into());
    let catalog = toolcat_cli::reference_catalog();
    let context = ToolContext::new(std::env::current_dir()?);
    let archive = Arc::new(ResultArchive::in_memory()?); // large results: a preview and a reference
    let mut session = Session::for_preset(catalog, catalog.preset("code")?, context.clone())
        .with_coordinator(Coordinator::new(catalog, context).with_archive(archive))
        .with_approval(common::approve_on_terminal)
        // Answers in this shape: `tool_search` hits come back as `tool_reference` blocks, which
        // load the deferred tools they name.
        .with_options(SessionOptions {
            provider: ExportFormat::Anthropic,
            ..Default::default()
        })?;
    let http = reqwest::Client::new();

    let mut messages = vec![json!({"role": "user", "content": message})];
    session.begin_turn(&message).await;
    // The visible tools, then the deferred ones with `defer_loading` (export module docs).
    let mut tools = session.export()?;
    for _ in 0..MAX_STEPS {
        let body =
            json!({"model": model, "max_tokens": 4096, "tools": tools, "messages": messages});
        let reply: Value = http
            .post(format!("{base}/v1/messages"))
            .header("x-api-key", &key)
            .header("anthropic-version", "2023-06-01")
            // `defer_loading` and `tool_reference` (Anthropic's tool search documentation).
            .header("anthropic-beta", "advanced-tool-use-2025-11-20")
            .json(&body)
            .send()
            .await?
            .json()
            .await?;
        if let Some(error) = reply.get("error") {
            return Err(format!("Anthropic answered an error: {error}").into());
        }
        let content = reply["content"].as_array().cloned().unwrap_or_default();
        messages.push(json!({"role": "assistant", "content": content}));
        // Every `tool_use` block through the session, in order; one user message of results.
        let results = session.handle_response(&reply).await?;
        if results.calls.is_empty() {
            let text = content.iter().filter_map(|b| b["text"].as_str());
            println!("{}", text.collect::<Vec<_>>().join("\n"));
            return Ok(());
        }
        messages.extend(results.messages);
        tools = session.export()?; // tool_search's finds join
    }
    Err(format!("no answer in {MAX_STEPS} steps").into())
}
