//! `ask_user`: a question for the user of this agent.
//!
//! The handler checks the question and returns it as `{"status": "awaiting_user", ...}`; the host
//! shows it, ends the turn, and the user's reply arrives as the next message. Nothing is written
//! and nothing leaves the conversation, which is why the tool is `silent` with `effect = "read"`,
//! and why it is `excluded` from MCP: an MCP client has its own user and its own way to ask.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{ToolContext, ToolError};

use super::failed;

/// Most choices a question may offer.
pub const MAX_OPTIONS: usize = 10;

/// Arguments of `ask_user`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserArgs {
    /// The question, answerable on its own: say what you need to know and why.
    pub question: String,
    /// Choices to offer, at most 10; the user may still answer in their own words.
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub options: Vec<String>,
}

/// Result of `ask_user`.
#[derive(Debug, Serialize, PartialEq, Eq, JsonSchema)]
pub struct AskUserOutput {
    /// Always `awaiting_user`: the answer comes as the user's next message.
    pub status: &'static str,
    /// The question, trimmed.
    pub question: String,
    /// The choices offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// Puts a question to the user.
#[toolcat::tool]
pub async fn ask_user(args: AskUserArgs, ctx: &ToolContext) -> Result<AskUserOutput, ToolError> {
    let _ = ctx;
    let question = args.question.trim().to_string();
    if question.is_empty() {
        return Err(failed("`question` is empty; write the question to ask"));
    }
    let options: Vec<String> = args
        .options
        .iter()
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty())
        .collect();
    if options.len() > MAX_OPTIONS {
        return Err(failed(format!(
            "{} options is too many to choose from; offer at most {MAX_OPTIONS}",
            options.len()
        )));
    }
    for (i, option) in options.iter().enumerate() {
        if options[..i].contains(option) {
            return Err(failed(format!("option `{option}` is listed twice")));
        }
    }
    Ok(AskUserOutput {
        status: "awaiting_user",
        question,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ToolContext {
        ToolContext::new(std::env::temp_dir())
    }

    #[tokio::test]
    async fn returns_the_question_for_the_host() {
        let out = ask_user(
            AskUserArgs {
                question: " Which branch? ".into(),
                options: vec!["main".into(), " dev ".into()],
            },
            &ctx(),
        )
        .await
        .expect("ask");
        assert_eq!(
            out,
            AskUserOutput {
                status: "awaiting_user",
                question: "Which branch?".into(),
                options: vec!["main".into(), "dev".into()],
            }
        );
    }

    #[tokio::test]
    async fn refuses_empty_questions_and_duplicate_or_too_many_options() {
        let ctx = ctx();
        let ask = |q: &str, options: Vec<String>| {
            ask_user(
                AskUserArgs {
                    question: q.into(),
                    options,
                },
                &ctx,
            )
        };
        assert!(ask("  ", vec![]).await.is_err());
        assert!(ask("pick", vec!["a".into(), "a".into()]).await.is_err());
        let many = (0..11).map(|i| i.to_string()).collect();
        assert!(ask("pick", many).await.is_err());
    }
}
