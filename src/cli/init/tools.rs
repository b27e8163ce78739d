//! The handlers of the local tools declared in tools.toml: one `#[toolcat::tool]` function per
//! `[[tool]]` row whose `source` is `local` (the default), named as the row is.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{ToolContext, ToolError};

/// Arguments of `greet`; their JSON Schema is the tool's input schema.
#[derive(Deserialize, JsonSchema)]
pub struct GreetArgs {
    /// Who to greet.
    pub name: String,
}

/// The result of `greet`, as the model reads it (JSON); its JSON Schema is the tool's output
/// schema (MCP `outputSchema`). Return `serde_json::Value` to declare none.
#[derive(Serialize, JsonSchema)]
pub struct Greeting {
    /// The greeting, one sentence.
    pub greeting: String,
}

#[toolcat::tool]
pub async fn greet(args: GreetArgs, _ctx: &ToolContext) -> Result<Greeting, ToolError> {
    Ok(Greeting {
        greeting: format!("Hello, {}!", args.name),
    })
}

#[cfg(test)]
mod tests {
    use toolcat::{CallRequest, Coordinator, ToolContext};

    /// A call as the model sends it (a tool name and JSON arguments) through the execution
    /// coordinator: scope, argument validation against the input schema, then the handler.
    #[tokio::test]
    async fn greet_runs_through_the_coordinator() {
        let catalog = crate::toolcat_generated::catalog();
        let workspace = std::env::current_dir().expect("a current directory");
        let coordinator = Coordinator::new(catalog, ToolContext::new(workspace));
        let tool = catalog
            .tool("greet")
            .expect("greet is declared in tools.toml");
        let allowed = catalog.profile_tools(catalog.full_profile()).to_vec();

        let outcome = coordinator
            .call(CallRequest::new(
                tool,
                serde_json::json!({ "name": "Ada" }),
                &allowed,
            ))
            .await;
        let value = outcome.result.expect("greet succeeds").value;
        assert_eq!(value, serde_json::json!({ "greeting": "Hello, Ada!" }));

        // Arguments that do not fit the input schema are refused before the handler runs.
        let refused = coordinator
            .call(CallRequest::new(
                tool,
                serde_json::json!({ "name": 7 }),
                &allowed,
            ))
            .await;
        assert!(
            refused.result.is_err() && !refused.ran,
            "{}",
            refused.text()
        );
    }
}
