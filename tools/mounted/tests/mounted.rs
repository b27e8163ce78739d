//! The minimal agent's own catalog runs toolcat-tools' file tools through the coordinator: a
//! read gives a version, edits with each protocol apply, a stale version is refused without a
//! write, and each write's change evidence is in its call record.

use std::sync::Arc;

use serde_json::{json, Value};
use toolcat::{CallRequest, CallStore, Coordinator, ToolContext};
use toolcat_tools::edit::hashline;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

struct Agent {
    dir: tempfile::TempDir,
    store: Arc<CallStore>,
}

impl Agent {
    fn new(files: &[(&str, &str)]) -> Agent {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, text) in files {
            std::fs::write(dir.path().join(path), text).expect("write");
        }
        Agent {
            dir,
            store: Arc::new(CallStore::in_memory().expect("store")),
        }
    }

    /// Calls `tool` with `arguments` as the `editor` profile, approving gated calls; the result
    /// as JSON, or the error's message.
    fn call(
        &self,
        tool: &str,
        arguments: Value,
    ) -> (Result<Value, String>, Option<toolcat::CallId>) {
        let catalog = toolcat_tools_mounted::toolcat_generated::catalog();
        let coordinator = Coordinator::new(catalog, ToolContext::new(self.dir.path()))
            .with_store(Arc::clone(&self.store))
            .with_approval(|_| true);
        let profile = catalog.profile("editor").expect("profile");
        let allowed = catalog.profile_tools(profile);
        let tool = catalog.tool(tool).expect("tool");
        let outcome =
            runtime().block_on(coordinator.call(CallRequest::new(tool, arguments, allowed)));
        let result = match &outcome.result {
            Ok(value) => Ok(serde_json::from_str(&value.text).expect("json result")),
            Err(e) => Err(e.to_string()),
        };
        (result, outcome.call)
    }

    fn text(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(path)).expect("read")
    }
}

#[test]
fn the_mounted_tools_edit_with_each_protocol_and_record_their_evidence() {
    let agent = Agent::new(&[("a.txt", "one\ntwo\nthree\n")]);
    let (read, _) = agent.call("read_file", json!({"path": "a.txt", "format": "hashline"}));
    let read = read.expect("read");
    let version = read["version"].as_str().expect("version").to_string();
    assert_eq!(read["content"], hashline::render("one\ntwo\nthree\n", 1, 3));

    // String replace, carrying the version.
    let (edit, call) = agent.call(
        "edit_file",
        json!({"path": "a.txt", "old_string": "two", "new_string": "TWO", "version": version}),
    );
    let edit = edit.expect("edit");
    assert_eq!(edit["guard"], "version");
    assert_eq!(agent.text("a.txt"), "one\nTWO\nthree\n");
    let record = agent
        .store
        .get(call.expect("a record"))
        .expect("store")
        .expect("record");
    assert_eq!(record.changes.len(), 1, "{record:?}");
    assert_eq!(record.changes[0].path, "a.txt");
    assert_eq!(record.changes[0].after, edit["change"]["after"]);
    assert!(record.changes[0].diff.contains("+TWO"));

    // The old version is stale now: refused, nothing written, and no change recorded.
    let (stale, call) = agent.call(
        "edit_file",
        json!({"path": "a.txt", "old_string": "one", "new_string": "ONE", "version": version}),
    );
    let message = stale.expect_err("stale");
    assert!(message.contains("changed since the read"), "{message}");
    assert_eq!(agent.text("a.txt"), "one\nTWO\nthree\n");
    if let Some(call) = call {
        let record = agent.store.get(call).expect("store").expect("record");
        assert!(record.changes.is_empty(), "{record:?}");
    }

    // Hashline, anchored to a fresh read.
    let (read, _) = agent.call("read_file", json!({"path": "a.txt", "format": "hashline"}));
    let read = read.expect("read");
    let anchor = hashline::anchor(3, "three");
    assert!(read["content"].as_str().expect("content").contains(&anchor));
    let (lines, _) = agent.call(
        "edit_lines",
        json!({"path": "a.txt", "edits": [{"op": "insert_after", "start": anchor, "content": "four"}]}),
    );
    lines.expect("edit_lines");
    assert_eq!(agent.text("a.txt"), "one\nTWO\nthree\nfour\n");

    // A patch over two files, one added.
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-TWO\n+2\n*** Add File: b.txt\n+bee\n*** End Patch\n";
    let (patched, call) = agent.call("apply_patch", json!({ "patch": patch }));
    let patched = patched.expect("patch");
    assert_eq!(patched["files"].as_array().expect("files").len(), 2);
    assert_eq!(agent.text("a.txt"), "one\n2\nthree\nfour\n");
    assert_eq!(agent.text("b.txt"), "bee\n");
    let record = agent
        .store
        .get(call.expect("a record"))
        .expect("store")
        .expect("record");
    let paths: Vec<_> = record.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "b.txt"]);
    assert_eq!(record.changes[1].before, "absent");
}
