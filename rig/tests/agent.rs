//! A rig agent over a toolcat session of the reference catalog, driven by a scripted model.
//!
//! No real model is reachable here (no network), so the model is rig's scripted completion wire
//! (`MockScript`) over a transport written here ([`Script`], rig's `Transport` trait): it
//! answers each completion request with the next scripted reply and keeps the names of the tool
//! definitions each request carried. Everything else is real: rig's agent loop and tool
//! registry, the toolcat session, the reference catalog's `create_directory` handler, the
//! approval hook and the call store.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rig_agent::AgentBuilder;
use rig_core::completion::{AssistantContent, CompletionRequest, CompletionResponse, Usage};
use rig_core::driver::{Exchange, Model, Opened, Opening, Transport};
use rig_core::message::{Origin, ToolName};
use rig_core::test_utils::{MockFrame, MockScript, MOCK_API, MOCK_PROVIDER};
use serde_json::json;
use toolcat::{CallStore, Coordinator, Session, ToolContext};
use toolcat_rig::ToolcatTools;

/// The scripted model's transport: one scripted reply per request, the tool names of each
/// request recorded.
#[derive(Clone)]
struct Script {
    replies: Arc<Mutex<VecDeque<AssistantContent>>>,
    sent_tools: Arc<Mutex<Vec<Vec<String>>>>,
    /// Each request's history, as JSON text.
    sent_history: Arc<Mutex<Vec<String>>>,
}

impl Transport<MockScript> for Script {
    fn send(&self, request: CompletionRequest, _exchange: Exchange) -> Opening<MockFrame> {
        let names = request.tools.iter().map(|t| t.name.to_string()).collect();
        self.sent_tools.lock().unwrap().push(names);
        let history = serde_json::to_string(&request.chat_history).unwrap();
        self.sent_history.lock().unwrap().push(history);
        let Some(reply) = self.replies.lock().unwrap().pop_front() else {
            return Opening::ready(Opened::failed(rig_core::ProviderError::Provider(
                "the script has no reply left".into(),
            )));
        };
        let origin = Origin::new(MOCK_API, MOCK_PROVIDER, "scripted");
        let response = CompletionResponse::new(vec![reply], Usage::default(), origin, json!({}));
        let frames = futures::stream::iter([Ok(MockFrame::Response(Box::new(response)))]);
        Opening::ready(Opened::new(frames).with_document(json!({})))
    }
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> AssistantContent {
    AssistantContent::tool_call(id, ToolName::new(name).unwrap(), arguments)
}

#[tokio::test]
async fn a_tool_found_by_tool_search_is_listed_at_the_next_step_and_runs_through_the_session() {
    let workspace = tempfile::tempdir().unwrap();
    let catalog = toolcat_cli::reference_catalog();
    let preset = catalog.preset("code").unwrap();
    let store = Arc::new(CallStore::in_memory().unwrap());
    let approvals = Arc::new(AtomicUsize::new(0));
    let asked = Arc::clone(&approvals);
    let coordinator = Coordinator::new(catalog, ToolContext::new(workspace.path()))
        .with_store(Arc::clone(&store));
    let session = Session::for_preset(catalog, preset, ToolContext::new(workspace.path()))
        .without_preselection()
        .with_coordinator(coordinator)
        .with_approval(move |request| {
            asked.fetch_add(1, Ordering::SeqCst);
            request.catalog.exported_name(request.tool) == "create_directory"
        });
    let tools = ToolcatTools::new(session);

    let script = Script {
        replies: Arc::new(Mutex::new(VecDeque::from([
            call(
                "call-1",
                "tool_search",
                json!({"query": "create_directory"}),
            ),
            call("call-2", "create_directory", json!({"path": "made/by/rig"})),
            AssistantContent::text("Created made/by/rig."),
        ]))),
        sent_tools: Arc::default(),
        sent_history: Arc::default(),
    };
    let model = Model::new(MockScript::default(), script.clone());
    let agent = AgentBuilder::new(model)
        .tool_server_handle(tools.tool_server())
        .add_hook(tools.clone())
        .build();

    let answer = agent
        .prompt("make a directory for the build output")
        .max_turns(5)
        .await
        .unwrap();
    assert_eq!(answer.output(), "Created made/by/rig.");

    // The handler ran: the directory exists, the approval hook was asked once, the store has
    // the call's record.
    assert!(workspace.path().join("made/by/rig").is_dir());
    assert_eq!(approvals.load(Ordering::SeqCst), 1);
    let records = store.list(None, 10).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].tool, "create_directory");

    // Step 1 listed the plan without the tool; step 2, after the search, listed it last.
    let sent = script.sent_tools.lock().unwrap().clone();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent[0].iter().any(|n| n == "tool_search"), "{:?}", sent[0]);
    assert!(
        !sent[0].iter().any(|n| n == "create_directory"),
        "{:?}",
        sent[0]
    );
    assert_eq!(sent[1].last().map(String::as_str), Some("create_directory"));
    assert_eq!(
        sent[1][..sent[0].len()],
        sent[0][..],
        "earlier definitions stay a prefix"
    );
    assert_eq!(tools.registered(), sent[2]);
    assert!(tools
        .session()
        .await
        .discovered()
        .iter()
        .any(|&t| { catalog.exported_name(t) == "create_directory" }));
}

#[tokio::test]
async fn a_call_outside_the_plan_runs_nothing_and_the_model_reads_the_session_answer() {
    let workspace = tempfile::tempdir().unwrap();
    let catalog = toolcat_cli::reference_catalog();
    let preset = catalog.preset("code").unwrap();
    let session = Session::for_preset(catalog, preset, ToolContext::new(workspace.path()))
        .without_preselection();
    let tools = ToolcatTools::new(session);
    // A listed gated tool without an approval hook: the session refuses it and the model reads
    // the session's answer.
    let script = Script {
        replies: Arc::new(Mutex::new(VecDeque::from([
            call(
                "call-1",
                "write_file",
                json!({"path": "x.txt", "content": "x"}),
            ),
            AssistantContent::text("I could not write it."),
        ]))),
        sent_tools: Arc::default(),
        sent_history: Arc::default(),
    };
    let agent = AgentBuilder::new(Model::new(MockScript::default(), script.clone()))
        .tool_server_handle(tools.tool_server())
        .add_hook(tools.clone())
        .build();
    let answer = agent.prompt("write x.txt").max_turns(3).await.unwrap();
    assert_eq!(answer.output(), "I could not write it.");
    assert!(!workspace.path().join("x.txt").exists());
    let history = script.sent_history.lock().unwrap()[1].clone();
    assert!(
        history.contains("tool `write_file` is gated: it needs approval"),
        "{history}"
    );
}
