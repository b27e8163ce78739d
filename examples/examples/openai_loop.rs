//! The discovery loop against an OpenAI-compatible Chat Completions endpoint (async-openai), with
//! the reference catalog's real tools working in the current directory.

mod common;

use std::env::var;
use std::error::Error;
use std::sync::Arc;

use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestMessage,
    ChatCompletionRequestToolMessage, ChatCompletionRequestUserMessage, ChatCompletionTools,
    CreateChatCompletionRequest,
};
use async_openai::Client;
use serde_json::Value;
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
        });
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
        let mut choices = client.chat().create(request).await?.choices;
        let reply = choices.pop().ok_or("the reply has no choice")?.message;
        let calls = reply.tool_calls.clone().unwrap_or_default();
        messages.push(
            ChatCompletionRequestAssistantMessage {
                content: reply.content.clone().map(Into::into),
                tool_calls: reply.tool_calls,
                ..Default::default()
            }
            .into(),
        );
        if calls.is_empty() {
            println!("{}", reply.content.unwrap_or_default());
            return Ok(());
        }
        for call in calls {
            if let ChatCompletionMessageToolCalls::Function(call) = call {
                messages.push(handle_call(&mut session, call).await.into());
            }
        }
        tools = openai_tools(&mut session)?; // tools found by tool_search join here
    }
    Err(format!("no answer in {MAX_STEPS} steps").into())
}

/// The plan's tools as async-openai's Chat Completions tool type.
fn openai_tools(session: &mut Session<'_>) -> Result<Vec<ChatCompletionTools>, Box<dyn Error>> {
    Ok(serde_json::from_value(session.export()?.to_json())?)
}

/// One tool call through the session; the result message. Unreadable arguments are sent as
/// `null`, which the session answers with its `invalid-arguments` error and the tool's schema.
async fn handle_call(
    session: &mut Session<'_>,
    call: ChatCompletionMessageToolCall,
) -> ChatCompletionRequestToolMessage {
    let arguments = serde_json::from_str(&call.function.arguments).unwrap_or(Value::Null);
    let result = session.handle_call(&call.function.name, arguments).await;
    ChatCompletionRequestToolMessage {
        content: result.text.into(),
        tool_call_id: call.id,
    }
}
