//! The discovery loop against an OpenAI-compatible Chat Completions endpoint (async-openai), with
//! the reference catalog's real tools working in the current directory.

mod common;

use std::env::var;
use std::error::Error;
use std::sync::Arc;

use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestMessage,
    ChatCompletionRequestUserMessage, ChatCompletionTools, CreateChatCompletionRequest,
};
use async_openai::Client;
use toolcat::export::ExportFormat;
use toolcat::{Coordinator, ResultArchive, Session, SessionOptions, ToolContext};

const USAGE: &str = "openai_loop: set OPENAI_API_KEY and OPENAI_MODEL (and OPENAI_BASE_URL for an \
OpenAI-compatible server; default https://api.openai.com/v1), then run
  cargo run -p toolcat-examples --example openai_loop -- \"show me the last commits\"";
const DEFAULT_MESSAGE: &str = "show me the last commits";
const MAX_STEPS: usize = 8;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let (Ok(_), Ok(model)) = (var("OPENAI_API_KEY"), var("OPENAI_MODEL")) else {
        println!("{USAGE}");
        return Ok(());
    };
    let message = std::env::args().nth(1).unwrap_or(DEFAULT_MESSAGE.into());
    let catalog = toolcat_cli::reference_catalog();
    let context = ToolContext::new(std::env::current_dir()?);
    let archive = Arc::new(ResultArchive::in_memory()?); // large results: a preview and a reference
    let mut session = Session::for_preset(catalog, catalog.preset("code")?, context.clone())
        .with_coordinator(Coordinator::new(catalog, context).with_archive(archive))
        .with_approval(common::approve_on_terminal)
        // Exports in this shape; strict mode's `null`s are removed before each call is validated.
        .with_options(SessionOptions {
            provider: ExportFormat::OpenAi,
            ..Default::default()
        })?;
    let client = Client::with_config(OpenAIConfig::new()); // reads OPENAI_BASE_URL, OPENAI_API_KEY

    let mut messages: Vec<ChatCompletionRequestMessage> =
        vec![ChatCompletionRequestUserMessage::from(message.as_str()).into()];
    session.begin_turn(&message).await;
    let mut tools = openai_tools(&mut session)?;
    for _ in 0..MAX_STEPS {
        let request = CreateChatCompletionRequest {
            model: model.clone(),
            messages: messages.clone(),
            tools: Some(tools),
            ..Default::default()
        };
        let response = client.chat().create(request).await?;
        // Every tool call through the session, in order; the tool messages that answer them.
        let reply = session
            .handle_response(&serde_json::to_value(&response)?)
            .await?;
        let message = response
            .choices
            .into_iter()
            .next()
            .ok_or("no choice")?
            .message;
        messages.push(
            ChatCompletionRequestAssistantMessage {
                content: message.content.clone().map(Into::into),
                tool_calls: message.tool_calls,
                ..Default::default()
            }
            .into(),
        );
        if reply.calls.is_empty() {
            println!("{}", message.content.unwrap_or_default());
            return Ok(());
        }
        for answer in reply.messages {
            messages.push(serde_json::from_value(answer)?);
        }
        tools = openai_tools(&mut session)?; // tools found by tool_search join here
    }
    Err(format!("no answer in {MAX_STEPS} steps").into())
}

/// The plan's tools as async-openai's Chat Completions tool type.
fn openai_tools(session: &mut Session<'_>) -> Result<Vec<ChatCompletionTools>, Box<dyn Error>> {
    Ok(serde_json::from_value(session.export()?.to_json())?)
}
