//! Unit tests of the session on the fixture catalog (`crate::fixture`), with test handlers for
//! `read_file`, `write_file` and `delete_file`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use toolcat_catalog::index::build_index_bytes;

use super::*;
use crate::fixture;
use crate::handler::{erase, BoxFuture, ErasedHandler, ToolHandler};
use crate::preselect::{from_fn, PreselectStatus};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PathArgs {
    /// Path relative to the workspace.
    path: String,
}

macro_rules! echo_handler {
    ($ty:ident, $name:literal) => {
        struct $ty;
        impl ToolHandler for $ty {
            const NAME: &'static str = $name;
            type Args = PathArgs;
            type Output = Value;
            fn call(args: PathArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
                Box::pin(async move { Ok(json!({"tool": $name, "path": args.path})) })
            }
        }
    };
}
echo_handler!(ReadFile, "read_file");
echo_handler!(WriteFile, "write_file");
echo_handler!(DeleteFile, "delete_file");

const NO_HANDLER: Option<ErasedHandler> = None;
static HANDLERS: [Option<ErasedHandler>; 17] = {
    let mut table = [NO_HANDLER; 17];
    table[4] = Some(erase::<ReadFile>());
    table[6] = Some(erase::<WriteFile>());
    table[7] = Some(erase::<DeleteFile>());
    table
};

/// The fixture catalog with the test handlers compiled in.
fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let tables = fixture::tables();
        let index: &'static [u8] = Box::leak(
            build_index_bytes(&tables, &[])
                .expect("index builds")
                .into_boxed_slice(),
        );
        Catalog::compiled(tables, index, &HANDLERS).expect("fixture compiles")
    })
}

/// A session of `coder` with `toolsets` active and no preselection (tests that want it add it).
fn session(toolsets: &[&str]) -> Session<'static> {
    let c = catalog();
    let sets: Vec<ToolsetId> = toolsets
        .iter()
        .map(|s| c.toolset(s).expect("fixture toolset"))
        .collect();
    Session::new(
        c,
        c.profile("coder").expect("fixture profile"),
        sets,
        ToolContext::new("."),
    )
    .without_preselection()
}

fn names(s: &Session<'_>) -> Vec<String> {
    s.definitions()
        .iter()
        .map(|&t| s.catalog().exported_name(t).to_string())
        .collect()
}

fn tool(name: &str) -> ToolIndex {
    catalog().tool(name).expect("fixture tool")
}

fn json_of(r: &CallResult) -> Value {
    serde_json::from_str(&r.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.text))
}

#[tokio::test]
async fn budget_error_is_byte_exact_and_counts_per_turn() {
    let mut s = session(&["core"]);
    s.begin_turn("find things").await;
    for (k, q) in ["remove", "delete", "erase"].iter().enumerate() {
        let r = s.handle_call("tool_search", json!({"query": q})).await;
        assert!(matches!(r.outcome, Outcome::Found { .. }), "{r:?}");
        assert_eq!(s.searches_left(), 2 - k);
    }
    let r = s.handle_call("tool_search", json!({"query": "wipe"})).await;
    assert_eq!(
        r.text,
        r#"{"error":"search-budget-exhausted","budgetCap":3}"#
    );
    assert!(r.is_error);
    assert_eq!(r.outcome, Outcome::BudgetExhausted);
    // Through tool_call the same budget holds.
    let r = s
        .handle_call(
            "tool_call",
            json!({"name": "tool_search", "arguments": {"query": "x"}}),
        )
        .await;
    assert_eq!(
        r.text,
        r#"{"error":"search-budget-exhausted","budgetCap":3}"#
    );
    // A new turn has a new budget.
    s.begin_turn("more").await;
    let r = s
        .handle_call("tool_search", json!({"query": "commit"}))
        .await;
    assert_eq!(r.outcome.kind(), "found");

    let mut s = session(&["core"])
        .with_options(SessionOptions {
            search_budget: 1,
            ..SessionOptions::default()
        })
        .expect("the cap holds the core");
    s.begin_turn("x").await;
    s.handle_call("tool_search", json!({"query": "commit"}))
        .await;
    let r = s
        .handle_call("tool_search", json!({"query": "commit"}))
        .await;
    assert_eq!(
        r.text,
        r#"{"error":"search-budget-exhausted","budgetCap":1}"#
    );
    assert_eq!(
        budget_exhausted(3),
        r#"{"error":"search-budget-exhausted","budgetCap":3}"#
    );
}

#[tokio::test]
async fn not_in_active_set_message_is_byte_exact_and_names_the_inline_tools() {
    let mut s = session(&["core"]);
    s.begin_turn("hello").await;
    assert_eq!(
        names(&s),
        [
            "tool_search",
            "tool_describe",
            "tool_call",
            "read_file",
            "list_dir",
            "write_file",
            "search_text",
            "git_status"
        ]
    );
    let expected = "Tool 'git_commit' not in active set. Call tool_search(query='git_commit') to discover it, or use one of: read_file, list_dir, write_file, search_text, git_status";
    let r = s.handle_call("git_commit", json!({})).await;
    assert_eq!(r.text, expected);
    assert!(r.is_error);
    assert_eq!(r.outcome, Outcome::NotInActiveSet);
    assert_eq!(r.ran, None);
    // tool_call takes the same path and answers the same bytes.
    let r = s
        .handle_call("tool_call", json!({"name": "git_commit", "arguments": {}}))
        .await;
    assert_eq!(r.text, expected);
    // Outside the profile, or no tool at all: the same rejection, and no search hint (a search
    // would find something else).
    for name in ["run_shell", "gitlab__list_branches", "no_such_tool"] {
        let r = s.handle_call(name, json!({})).await;
        assert_eq!(r.outcome, Outcome::NotInActiveSet, "{name}");
        assert_eq!(
            r.text,
            format!("Tool '{name}' not in active set. No tool named `{name}` is available to this session; use one of: read_file, list_dir, write_file, search_text, git_status")
        );
    }

    // Nothing discoverable reachable: no tool_search in the plan, so the message does not name it.
    let c = catalog();
    let mut s = Session::new(
        c,
        c.profile("reader").expect("known"),
        [c.toolset("files").expect("known")],
        ToolContext::new("."),
    )
    .without_preselection();
    s.begin_turn("hello").await;
    let r = s.handle_call("write_file", json!({})).await;
    assert_eq!(
        r.text,
        "Tool 'write_file' not in active set. No tool named `write_file` is available to this session; use one of: read_file, list_dir, search_text"
    );
    assert_eq!(
        not_in_active_set("x", [], true),
        "Tool 'x' not in active set. Call tool_search(query='x') to discover it"
    );
    assert_eq!(
        not_in_active_set("x", [], false),
        "Tool 'x' not in active set"
    );
}

#[tokio::test]
async fn hits_join_the_active_set_inside_the_search_and_are_appended() {
    let mut s = session(&["core"]);
    s.begin_turn("hello").await;
    let before = names(&s);
    assert!(!s.is_active(tool("git_commit")));
    let r = s
        .handle_call("tool_search", json!({"query": "git_commit"}))
        .await;
    assert_eq!(
        json_of(&r),
        json!({"tools": [{"name": "git_commit", "description": "Record staged changes as a new commit."}], "searchesLeft": 2})
    );
    assert_eq!(
        r.outcome,
        Outcome::Found {
            tools: vec![tool("git_commit")]
        }
    );
    // Active inside the call: callable right away, and appended with what it requires.
    assert!(s.is_active(tool("git_commit")));
    let after = names(&s);
    assert!(after.starts_with(&before), "{after:?}");
    assert_eq!(&after[before.len()..], ["git_commit", "git_diff"]);
    let cached = s.definitions().to_vec();
    assert_eq!(s.plan().tools(), cached);
    // The found tool runs through the next step's path (gated: refused without a hook, but not
    // for being outside the active set).
    let r = s.handle_call("git_commit", json!({})).await;
    assert_eq!(
        r.outcome,
        Outcome::NeedsApproval {
            tool: tool("git_commit")
        }
    );
}

#[tokio::test]
async fn exact_names_with_or_without_namespace_and_select() {
    let mut s = session(&["core", "github"]);
    s.begin_turn("hello").await;
    for q in [
        "createPullRequest",
        "github__createPullRequest",
        " `createpullrequest` ",
    ] {
        let r = s.handle_call("tool_search", json!({"query": q})).await;
        assert_eq!(
            r.outcome,
            Outcome::Found {
                tools: vec![tool("github__createPullRequest")]
            },
            "`{q}`"
        );
        s.begin_turn("again").await;
    }
    // The bare name of a namespaced tool: `coder` owns only GitHub's `list_branches`.
    let r = s
        .handle_call("tool_search", json!({"query": "list_branches"}))
        .await;
    assert_eq!(
        r.outcome,
        Outcome::Found {
            tools: vec![tool("github__list_branches")]
        }
    );
    let r = s
        .handle_call(
            "tool_search",
            json!({"query": "select:git_diff, delete_file,run_shell,nothing"}),
        )
        .await;
    assert_eq!(
        r.outcome,
        Outcome::Found {
            tools: vec![tool("git_diff"), tool("delete_file")]
        }
    );
    assert!(s.is_active(tool("delete_file")));
    assert!(!s.is_active(tool("run_shell")), "outside the profile");
}

#[tokio::test]
async fn zero_hits_answer_the_toolsets_of_the_profile() {
    let mut s = session(&["files"]);
    s.begin_turn("hello").await;
    let r = s
        .handle_call("tool_search", json!({"query": "xylophone quantum"}))
        .await;
    assert_eq!(r.outcome, Outcome::Found { tools: vec![] });
    assert_eq!(r.outcome.kind(), "no-hits");
    assert!(!r.is_error);
    let v = json_of(&r);
    assert_eq!(v["tools"], json!([]));
    assert_eq!(v["searchesLeft"], 2);
    assert!(v["message"]
        .as_str()
        .expect("message")
        .contains("`xylophone quantum`"));
    let sets: Vec<(String, bool)> = v["toolsets"]
        .as_array()
        .expect("toolsets")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().expect("name").to_string(),
                s["active"] == true,
            )
        })
        .collect();
    // `coder` owns tools of core, files, git and github; `shell` holds none of its tools and
    // `discovery` only meta-tools.
    assert_eq!(
        sets,
        [
            ("core".to_string(), false),
            ("files".to_string(), true),
            ("git".to_string(), false),
            ("github".to_string(), false)
        ]
    );
}

#[tokio::test]
async fn invalid_arguments_answer_the_errors_and_the_schema_and_run_nothing() {
    let mut s = session(&["core", "github"]);
    s.begin_turn("use createPullRequest").await;
    let pr = tool("github__createPullRequest");
    assert!(s.is_active(pr), "named in the message");
    let r = s
        .handle_call(
            "github__createPullRequest",
            json!({"name": "fix", "branch": "x"}),
        )
        .await;
    assert_eq!(r.outcome, Outcome::InvalidArguments { tool: pr });
    assert_eq!(r.ran, None);
    let v = json_of(&r);
    assert_eq!(v["error"], "invalid-arguments");
    assert_eq!(v["tool"], "github__createPullRequest");
    assert_eq!(v["inputSchema"], *catalog().input_schema(pr));
    let messages: Vec<&str> = v["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["message"].as_str().expect("message"))
        .collect();
    for missing in ["\"title\"", "\"head\"", "\"base\""] {
        assert!(
            messages
                .iter()
                .any(|m| m.contains(missing) && m.contains("required")),
            "{missing} missing from {messages:?}"
        );
    }
    // A local tool with `deny_unknown_fields`: the guessed name is reported, with the schema.
    let r = s.handle_call("read_file", json!({"file": "a.txt"})).await;
    let v = json_of(&r);
    assert_eq!(v["inputSchema"]["properties"]["path"]["type"], "string");
    let text = v["errors"].to_string();
    assert!(text.contains("path") && text.contains("file"), "{text}");
    // Not an object at all.
    let r = s.handle_call("read_file", json!("a.txt")).await;
    assert_eq!(r.outcome.kind(), "invalid-arguments");
    // Valid arguments run.
    let r = s.handle_call("read_file", json!({"path": "a.txt"})).await;
    assert_eq!(
        r.outcome,
        Outcome::Ran {
            tool: tool("read_file"),
            ok: true
        }
    );
    assert_eq!(r.ran, Some(tool("read_file")));
    assert_eq!(json_of(&r), json!({"tool": "read_file", "path": "a.txt"}));
    // Meta-tools are checked against their schemas too.
    let r = s.handle_call("tool_search", json!({"limit": 3})).await;
    assert_eq!(r.outcome.kind(), "invalid-arguments");
    assert_eq!(json_of(&r)["inputSchema"]["required"], json!(["query"]));
    assert_eq!(s.searches_left(), 3, "an invalid search costs no budget");
}

#[tokio::test]
async fn gated_tools_need_the_approval_hook() {
    let write = tool("write_file");
    let mut s = session(&["core"]);
    s.begin_turn("x").await;
    let r = s.handle_call("write_file", json!({"path": "a"})).await;
    assert_eq!(r.outcome, Outcome::NeedsApproval { tool: write });
    assert_eq!(r.ran, None);
    assert_eq!(
        r.text,
        "tool `write_file` is gated: it needs approval, and this session has no approval hook; nothing ran"
    );

    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let mut s = session(&["core"]).with_approval(move |req| {
        counter.fetch_add(1, Ordering::SeqCst);
        req.arguments["path"] != "secret"
    });
    s.begin_turn("x").await;
    let r = s.handle_call("write_file", json!({"path": "a"})).await;
    assert_eq!(
        r.outcome,
        Outcome::Ran {
            tool: write,
            ok: true
        }
    );
    let r = s.handle_call("write_file", json!({"path": "secret"})).await;
    assert_eq!(r.outcome, Outcome::Denied { tool: write });
    assert_eq!(r.text, "approval for `write_file` was denied; nothing ran");
    // Silent tools and invalid arguments never reach the hook.
    s.handle_call("read_file", json!({"path": "a"})).await;
    s.handle_call("write_file", json!({})).await;
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn tool_describe_takes_one_name_or_many_and_activates_them() {
    let mut s = session(&["core"]);
    s.begin_turn("x").await;
    let r = s
        .handle_call("tool_describe", json!({"name": "git_commit"}))
        .await;
    assert_eq!(
        r.outcome,
        Outcome::Described {
            tools: vec![tool("git_commit")]
        }
    );
    let v = json_of(&r);
    assert_eq!(v["tools"][0]["name"], "git_commit");
    assert_eq!(v["tools"][0]["inputSchema"]["type"], "object");
    assert!(s.is_active(tool("git_commit")));
    let r = s
        .handle_call(
            "tool_describe",
            json!({"name": ["delete_file", "run_shell", "nope"]}),
        )
        .await;
    assert_eq!(
        r.outcome,
        Outcome::Described {
            tools: vec![tool("delete_file")]
        }
    );
    let v = json_of(&r);
    let missing: Vec<&str> = v["notFound"]
        .as_array()
        .expect("notFound")
        .iter()
        .map(|m| m["name"].as_str().expect("name"))
        .collect();
    assert_eq!(missing, ["run_shell", "nope"]);
    assert!(!r.is_error, "one name was found");
    let r = s
        .handle_call("tool_describe", json!({"names": ["nope"]}))
        .await;
    assert!(r.is_error);
    let r = s.handle_call("tool_describe", json!({"name": 3})).await;
    assert_eq!(r.outcome.kind(), "invalid-arguments");
    assert_eq!(s.searches_left(), 3, "describing costs no search budget");
}

#[tokio::test]
async fn tool_call_is_the_same_path_and_does_not_nest() {
    let mut s = session(&["core"]);
    s.begin_turn("x").await;
    let r = s
        .handle_call(
            "tool_call",
            json!({"name": "read_file", "arguments": {"path": "b"}}),
        )
        .await;
    assert_eq!(
        r.outcome,
        Outcome::Ran {
            tool: tool("read_file"),
            ok: true
        }
    );
    let r = s
        .handle_call(
            "tool_call",
            json!({"name": "read_file", "arguments": {"file": "b"}}),
        )
        .await;
    assert_eq!(r.outcome.kind(), "invalid-arguments");
    let r = s
        .handle_call(
            "tool_call",
            json!({"name": "tool_call", "arguments": {"name": "read_file"}}),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Failed);
    let r = s.handle_call("tool_call", json!({"arguments": {}})).await;
    assert_eq!(r.outcome.kind(), "invalid-arguments");
    let r = s
        .handle_call("read_tool_result", json!({"reference": "r1"}))
        .await;
    // `read_tool_result` is in toolset `discovery`, which is not active here.
    assert_eq!(r.outcome, Outcome::NotInActiveSet);
}

#[tokio::test]
async fn named_tools_join_and_stay_appended() {
    let c = catalog();
    let named = |m: &str| -> Vec<&str> {
        named_in_message(c, m)
            .iter()
            .map(|&t| c.exported_name(t))
            .collect()
    };
    assert_eq!(
        named("please run git_commit, then `git_diff`."),
        ["git_commit", "git_diff"]
    );
    assert_eq!(
        named("git_commits and git-commit are not names"),
        Vec::<&str>::new()
    );
    assert_eq!(
        named("GIT_COMMIT"),
        Vec::<&str>::new(),
        "names are case-sensitive"
    );
    assert_eq!(
        named("list_branches"),
        ["github__list_branches", "gitlab__list_branches"]
    );
    assert_eq!(
        named("github__createPullRequest!"),
        ["github__createPullRequest"]
    );

    let mut s = session(&["core"]);
    s.begin_turn("commit with git_commit; also run_shell").await;
    assert_eq!(s.turn_report().named, [tool("git_commit")]);
    assert_eq!(s.turn_report().named_unreachable, [tool("run_shell")]);
    assert!(s.is_active(tool("git_commit")));
    assert_eq!(
        s.discovered(),
        [tool("git_commit")],
        "appended as discovered"
    );
    let before = names(&s);
    assert_eq!(
        before.last().map(String::as_str),
        Some("git_diff"),
        "{before:?}"
    );
    s.begin_turn("something else").await;
    assert!(s.is_active(tool("git_commit")), "definitions only grow");
    assert!(names(&s).starts_with(&before));
}

#[tokio::test]
async fn discovered_tools_persist_up_to_the_cap_least_recently_used_out() {
    let mut s = session(&["core", "github"])
        .with_options(SessionOptions {
            discovered_cap: 2,
            ..SessionOptions::default()
        })
        .expect("the cap holds the core");
    s.begin_turn("one").await;
    for q in [
        "select:git_diff",
        "select:delete_file",
        "select:github__list_branches",
    ] {
        s.handle_call("tool_search", json!({"query": q})).await;
    }
    // No eviction inside a turn: all three stay callable.
    assert_eq!(s.discovered().len(), 3);
    assert!(s.is_active(tool("git_diff")));
    // Described again, git_diff is not used again: loaded first, it is the least recent.
    s.handle_call("tool_describe", json!({"name": "git_diff"}))
        .await;
    s.begin_turn("two").await;
    assert_eq!(s.turn_report().evicted, ["git_diff"]);
    assert_eq!(
        s.discovered(),
        [tool("delete_file"), tool("github__list_branches")]
    );
    assert!(s.is_active(tool("delete_file")) && !s.is_active(tool("git_diff")));
    // Discovered tools keep discovery order at the end of the definitions.
    let defs = names(&s);
    let tail: Vec<&str> = defs[defs.len() - 2..].iter().map(String::as_str).collect();
    assert_eq!(tail, ["delete_file", "github__list_branches"]);
    // A discovered tool whose toolset is switched off is not callable, but is kept while registered.
    s.set_toolsets([catalog().toolset("files").expect("known")]);
    let r = s.handle_call("github__list_branches", json!({})).await;
    assert_eq!(r.outcome, Outcome::NotInActiveSet);
    s.begin_turn("three").await;
    assert_eq!(s.discovered().len(), 2);
}

#[tokio::test]
async fn discovered_tools_are_forgotten_once_no_longer_registered() {
    let mut s = session(&["core", "github"]);
    s.begin_turn("one").await;
    s.handle_call(
        "tool_search",
        json!({"query": "select:git_diff,delete_file"}),
    )
    .await;
    assert_eq!(s.discovered().len(), 2);
    // A new version of the catalog deprecates git_diff and moves delete_file out of `coder`.
    let mut rows = fixture::rows();
    for row in &mut rows {
        if row.name == "git_diff" {
            row.status = Status::Deprecated;
            row.replaced_by = Some("git_status");
        }
        if row.name == "delete_file" {
            row.profiles = &[];
        }
    }
    let next: &'static Catalog = Box::leak(Box::new(
        Catalog::from_tables(fixture::tables_of(&rows)).expect("valid"),
    ));
    let dropped = s.replace_catalog(next).expect("profile still declared");
    assert!(dropped.is_empty());
    assert!(
        !s.is_active(next.tool("git_diff").expect("known")),
        "deprecated: never visible"
    );
    s.begin_turn("two").await;
    assert_eq!(s.turn_report().unregistered, ["git_diff", "delete_file"]);
    assert!(s.discovered().is_empty());
}

/// A preselector that answers after `delay` with `names`.
fn slow(delay: Duration, names: &'static [&'static str]) -> impl Preselector {
    from_fn(move |_query| async move {
        tokio::time::sleep(delay).await;
        Ok::<_, String>(names.iter().map(|n| n.to_string()).collect())
    })
}

#[tokio::test(start_paused = true)]
async fn a_preselector_past_its_timeout_yields_the_fallback_plan_in_time() {
    let timeout = preselect::DEFAULT_TIMEOUT;
    // Core and history: git_diff discovered in an earlier turn; git_commit named by the user.
    let mut s = session(&["core"]);
    s.begin_turn("one").await;
    s.handle_call("tool_search", json!({"query": "select:git_diff"}))
        .await;
    let mut fallback = s.with_preselector(slow(Duration::from_secs(30), &["delete_file"]));
    let start = tokio::time::Instant::now();
    fallback.begin_turn("do it with git_commit").await;
    let elapsed = start.elapsed();
    assert!(elapsed >= timeout, "{elapsed:?}");
    assert!(
        elapsed <= timeout + timeout / 10,
        "took {elapsed:?}, more than the timeout plus 10%"
    );
    let report = fallback
        .turn_report()
        .preselect
        .clone()
        .expect("preselection ran");
    assert_eq!(report.status, PreselectStatus::TimedOut);
    assert!(report.added.is_empty());
    let defs = names(&fallback);
    assert!(
        defs.contains(&"git_commit".to_string()),
        "named kept: {defs:?}"
    );
    assert!(
        defs.contains(&"git_diff".to_string()),
        "history kept: {defs:?}"
    );
    assert!(
        !defs.contains(&"delete_file".to_string()),
        "no pick applied: {defs:?}"
    );
    // Never everything: the deferred tools stay deferred.
    assert!(fallback.plan().counts().deferred > 0);

    // The same preselector within its timeout is applied.
    let mut s =
        session(&["core"]).with_preselector(slow(Duration::from_millis(500), &["delete_file"]));
    s.begin_turn("x").await;
    assert!(s.is_active(tool("delete_file")));
}

#[tokio::test]
async fn preselection_picks_are_verified_and_only_new_tools_count_against_the_budget() {
    let picks: &'static [&'static str] = &[
        "read_file",             // inline: visible anyway, free
        "nonexistent",           // unknown
        "run_shell",             // outside the profile
        "old_grep",              // deprecated
        "tool_search",           // meta-tool
        "git_commit",            // new 1
        "git_commit",            // duplicate
        "delete_file",           // new 2 = budget
        "github__list_branches", // over budget (its toolset is inactive anyway: unreachable)
        "git_diff",              // over budget
    ];
    let mut s = session(&["core"])
        .with_options(SessionOptions {
            preselect_budget: 2,
            ..SessionOptions::default()
        })
        .expect("the cap holds the core")
        .with_preselector(slow(Duration::ZERO, picks));
    s.begin_turn("x").await;
    let r = s.turn_report().preselect.clone().expect("ran");
    assert_eq!(r.status, PreselectStatus::Answered);
    assert_eq!(r.added, [tool("git_commit"), tool("delete_file")]);
    assert_eq!(r.picked, 10);
    assert_eq!(r.already_visible, 1);
    assert_eq!(r.unknown, 1);
    assert_eq!(r.unreachable, 4);
    assert_eq!(r.duplicates, 1);
    assert_eq!(r.over_budget, 1);
    // git_diff comes in anyway: git_commit requires it. That is the plan's closure, not a pick.
    assert!(s.is_active(tool("git_diff")));

    // An error adds nothing and is reported.
    let failing = from_fn(|_q| async { Err::<Vec<String>, _>("model unavailable") });
    let mut s = session(&["core"]).with_preselector(failing);
    s.begin_turn("x").await;
    let r = s.turn_report().preselect.clone().expect("ran");
    assert_eq!(
        r.status,
        PreselectStatus::Failed {
            message: "model unavailable".into()
        }
    );
    assert_eq!(names(&s).len(), 8, "the core only");
}

#[tokio::test]
async fn the_host_closure_sees_candidates_not_visible_yet() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let host = from_fn(move |q: preselect::PreselectQuery| {
        sink.lock()
            .expect("not poisoned")
            .extend(q.candidates.into_iter().map(|c| c.name));
        async { Ok::<_, String>(vec!["delete_file".to_string()]) }
    });
    let mut s = session(&["core"]).with_preselector(host);
    s.begin_turn("remove the old file").await;
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(seen, ["delete_file", "git_commit", "git_diff"]);
    assert!(s.is_active(tool("delete_file")));
}

#[tokio::test]
async fn bm25_preselection_is_the_default() {
    let c = catalog();
    let mut s = Session::new(
        c,
        c.profile("coder").expect("known"),
        [c.toolset("core").expect("known")],
        ToolContext::new("."),
    );
    s.begin_turn("remove a file from the workspace").await;
    let r = s.turn_report().preselect.clone().expect("BM25 by default");
    assert_eq!(r.status, PreselectStatus::Answered);
    assert!(r.added.contains(&tool("delete_file")), "{r:?}");
    assert!(s.is_active(tool("delete_file")));
}

#[test]
fn one_line_descriptions_keep_the_first_sentence() {
    assert_eq!(one_line("Reads a file. Then more."), "Reads a file.");
    assert_eq!(one_line("No full stop"), "No full stop");
    assert_eq!(
        one_line("Version 1.2 is fine. Next."),
        "Version 1.2 is fine."
    );
    let long = "word ".repeat(100);
    let cut = one_line(&long);
    assert_eq!(cut.chars().count(), 200);
    assert!(cut.ends_with('…'));
}

#[test]
fn session_and_its_futures_are_send() {
    fn check<T: Send>(_: &T) {}
    let mut s = session(&["core"]);
    check(&s);
    check(&s.begin_turn("x"));
    check(&s.handle_call("read_file", json!({"path": "a"})));
}

#[tokio::test]
async fn results_over_the_archive_budget_come_back_through_read_tool_result() {
    use crate::archive::{ArchiveLimits, ResultArchive};
    let archive = ResultArchive::in_memory_with(ArchiveLimits {
        inline_budget: 16,
        preview: 8,
        ..ArchiveLimits::default()
    })
    .expect("archive");
    let coordinator =
        Coordinator::new(catalog(), ToolContext::new(".")).with_archive(Arc::new(archive));
    // `read_tool_result` is owned by the `full` profile only.
    let c = catalog();
    let sets = ["core", "discovery"].map(|s| c.toolset(s).expect("fixture toolset"));
    let mut s = Session::new(c, c.full_profile(), sets, ToolContext::new("."))
        .without_preselection()
        .with_coordinator(coordinator);
    // A second session on the same coordinator (and archive).
    let mut other = Session::new(c, c.full_profile(), sets, ToolContext::new("."))
        .without_preselection()
        .with_coordinator(s.coordinator().clone());
    s.begin_turn("x").await;
    other.begin_turn("x").await;
    let r = s
        .handle_call("read_file", json!({"path": "a-long-file-name.txt"}))
        .await;
    assert_eq!(r.outcome.kind(), "ran");
    let whole = json!({"tool": "read_file", "path": "a-long-file-name.txt"}).to_string();
    assert!(r.text.starts_with(&whole[..8]), "{}", r.text);
    let reference = r
        .text
        .split('`')
        .find(|p| p.starts_with("result-"))
        .unwrap_or_else(|| panic!("no reference in {}", r.text))
        .to_string();
    assert_eq!(reference.len(), "result-".len() + 26, "{reference}");
    assert!(
        !r.text.contains("a-long-file-name"),
        "only the preview: {}",
        r.text
    );

    let r = s
        .handle_call(
            "read_tool_result",
            json!({"reference": reference, "offset": 8, "length": 12}),
        )
        .await;
    assert_eq!(r.outcome, Outcome::ReadResult);
    let v = json_of(&r);
    assert_eq!(
        v["text"],
        whole.chars().skip(8).take(12).collect::<String>()
    );
    assert_eq!(v["totalChars"], whole.chars().count());
    assert_eq!(v["nextOffset"], 20);

    // The other session gets the answer of a reference that does not exist.
    let unknown = |r: &CallResult, reference: &str| {
        assert_eq!(r.outcome, Outcome::Failed);
        assert!(r.is_error);
        r.text.replace(reference, "REF")
    };
    let theirs = other
        .handle_call("read_tool_result", json!({"reference": reference}))
        .await;
    let never = "result-00000000000000000000000000";
    let none = s
        .handle_call("read_tool_result", json!({"reference": never}))
        .await;
    assert_eq!(unknown(&theirs, &reference), unknown(&none, never));
    assert!(
        none.text.contains(&format!("no result `{never}`")),
        "{}",
        none.text
    );
    // The old sequential form is no reference.
    let r = s
        .handle_call("read_tool_result", json!({"reference": "result-1"}))
        .await;
    assert!(
        r.is_error && r.text.contains("is not a result reference"),
        "{}",
        r.text
    );
}

/// A session of `coder` with `toolsets` active, talking to `provider`, with or without the
/// provider's hosted search, approving every gated call.
fn provider_session(toolsets: &[&str], provider: ExportFormat, hosted: bool) -> Session<'static> {
    session(toolsets)
        .with_options(SessionOptions {
            provider,
            hosted_search: hosted,
            ..SessionOptions::default()
        })
        .expect("the cap holds the core")
        .with_approval(|_| true)
}

#[tokio::test]
async fn openai_strict_nulls_are_restored_on_every_call_path() {
    let strict_search = json!({"query": "commit", "limit": null});
    let inner_search =
        json!({"name": "tool_search", "arguments": {"query": "branches", "limit": null}});
    let inner_branches = json!({"name": "github__list_branches", "arguments": {"repo": null}});
    // Without a provider the null is taken as sent and refused, as before.
    let mut s = session(&["core", "github"]);
    s.begin_turn("x").await;
    let r = s.handle_call("tool_search", strict_search.clone()).await;
    assert_eq!(r.outcome.kind(), "invalid-arguments", "{}", r.text);
    assert!(r.text.contains("null is not of type"), "{}", r.text);
    for provider in [ExportFormat::OpenAi, ExportFormat::OpenAiResponses] {
        let mut s = provider_session(&["core", "github"], provider, false);
        s.begin_turn("x").await;
        let r = s.handle_call("tool_search", strict_search.clone()).await;
        assert_eq!(r.outcome.kind(), "found", "{provider}: {}", r.text);
        // The inner call of `tool_call`, a meta-tool and a server tool alike.
        let r = s.handle_call("tool_call", inner_search.clone()).await;
        assert_eq!(r.outcome.kind(), "found", "{provider}: {}", r.text);
        assert!(s.is_active(tool("github__list_branches")));
        let r = s.handle_call("tool_call", inner_branches.clone()).await;
        // Valid now: refused only because no server is connected.
        assert_eq!(r.outcome.kind(), "tool-error", "{provider}: {}", r.text);
        assert!(r.text.contains("not connected"), "{}", r.text);
    }
    // A required argument sent as null stays null and is refused.
    let mut s = provider_session(&["core"], ExportFormat::OpenAi, false);
    s.begin_turn("x").await;
    let r = s.handle_call("tool_search", json!({"query": null})).await;
    assert_eq!(r.outcome.kind(), "invalid-arguments", "{}", r.text);
}

#[tokio::test]
async fn anthropic_search_hits_are_tool_references_next_to_a_short_text() {
    let mut s = provider_session(&["core"], ExportFormat::Anthropic, false);
    s.begin_turn("x").await;
    let r = s
        .handle_call(
            "tool_search",
            json!({"query": "select:git_commit,delete_file"}),
        )
        .await;
    assert_eq!(r.outcome.kind(), "found");
    assert_eq!(
        r.content,
        [
            ContentBlock::Text {
                text:
                    "2 tools found and loaded: git_commit, delete_file. Searches left this turn: 2."
                        .to_string()
            },
            ContentBlock::ToolReference {
                tool_name: "git_commit".to_string()
            },
            ContentBlock::ToolReference {
                tool_name: "delete_file".to_string()
            },
        ]
    );
    assert_eq!(r.blocks(), r.content);
    // `text` keeps the JSON answer, and the hits joined the active set as for every provider.
    assert_eq!(json_of(&r)["tools"][0]["name"], "git_commit");
    assert!(s.is_active(tool("delete_file")));
    // No hits, and other providers: text only.
    let r = s
        .handle_call("tool_search", json!({"query": "zzzz qqqq"}))
        .await;
    assert_eq!(r.outcome.kind(), "no-hits");
    assert!(r.content.is_empty());
    for provider in [
        ExportFormat::Mcp,
        ExportFormat::OpenAi,
        ExportFormat::Gemini,
    ] {
        let mut s = provider_session(&["core"], provider, false);
        s.begin_turn("x").await;
        let r = s
            .handle_call("tool_search", json!({"query": "select:git_commit"}))
            .await;
        assert!(r.content.is_empty(), "{provider}");
        assert_eq!(
            r.blocks(),
            [ContentBlock::Text {
                text: r.text.clone()
            }]
        );
    }
}

#[tokio::test]
async fn hosted_search_accepts_deferred_tools_and_never_more() {
    let delete = tool("delete_file");
    for provider in [ExportFormat::Anthropic, ExportFormat::OpenAiResponses] {
        let mut s = provider_session(&["core"], provider, true);
        assert!(s.hosted_search());
        s.begin_turn("x").await;
        assert!(!s.is_active(delete));
        let r = s.handle_call("delete_file", json!({"path": "a"})).await;
        assert_eq!(
            r.outcome,
            Outcome::Ran {
                tool: delete,
                ok: true
            },
            "{provider}"
        );
        assert_eq!(r.ran, Some(delete));
        assert_eq!(s.discovered(), [delete]);
        assert!(s.is_active(delete));
        // Outside the profile, deprecated, or in a toolset that is not active: refused.
        for name in ["run_shell", "old_grep"] {
            let r = s.handle_call(name, json!({})).await;
            assert_eq!(r.outcome, Outcome::NotInActiveSet, "{provider} {name}");
        }
        let mut s = provider_session(&["files"], provider, true);
        s.begin_turn("x").await;
        let r = s.handle_call("git_commit", json!({})).await;
        assert_eq!(r.outcome, Outcome::NotInActiveSet, "{provider}");
        assert!(s.discovered().is_empty());
    }
    // Without hosted search, or with a provider that has none: unchanged.
    for (provider, hosted) in [
        (ExportFormat::Anthropic, false),
        (ExportFormat::Gemini, true),
        (ExportFormat::OpenAi, true),
        (ExportFormat::Mcp, true),
    ] {
        let mut s = provider_session(&["core"], provider, hosted);
        s.begin_turn("x").await;
        let r = s.handle_call("delete_file", json!({"path": "a"})).await;
        assert_eq!(r.outcome, Outcome::NotInActiveSet, "{provider} {hosted}");
        assert!(r.text.starts_with("Tool 'delete_file' not in active set"));
        assert!(s.discovered().is_empty());
    }
}

#[tokio::test]
async fn a_whole_chat_response_is_answered_in_order() {
    let mut s = provider_session(&["core"], ExportFormat::OpenAi, false);
    s.begin_turn("x").await;
    let response = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
    "role": "assistant", "content": null, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":"}},
        {"id": "call_c", "type": "function", "function": {"name": "nope", "arguments": "{"}}
    ]}}]});
    let reply = s.handle_response(&response).await.expect("a Chat response");
    let kinds: Vec<&str> = reply.results.iter().map(|r| r.outcome.kind()).collect();
    assert_eq!(kinds, ["ran", "invalid-arguments", "not-in-active-set"]);
    assert_eq!(reply.results[0].ran, Some(tool("read_file")));
    assert_eq!(reply.results[1].ran, None);
    assert!(
        reply.results[1].text.contains("not JSON"),
        "{}",
        reply.results[1].text
    );
    let ids: Vec<&str> = reply
        .messages
        .iter()
        .map(|m| m["tool_call_id"].as_str().expect("an id"))
        .collect();
    assert_eq!(ids, ["call_a", "call_b", "call_c"]);
    assert_eq!(
        reply.messages[0],
        json!({"role": "tool", "tool_call_id": "call_a", "content": r#"{"tool":"read_file","path":"a"}"#})
    );
    // A body of another shape is an error and runs nothing.
    let e = s
        .handle_response(&json!({"content": []}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("missing field `choices`"), "{e}");
}

#[test]
fn a_cap_below_the_core_is_refused_at_construction() {
    // coder with core + github sends 8 definitions before discovery.
    let e = session(&["core", "github"])
        .with_options(SessionOptions {
            max_tools: Some(5),
            ..SessionOptions::default()
        })
        .expect_err("5 is below the core");
    assert_eq!(e, CapBelowCore { cap: 5, core: 8 });
    let text = e.to_string();
    assert!(text.contains("core of 8 tool definitions"), "{text}");
    assert!(text.contains("raise the cap to at least 8"), "{text}");
    assert!(capped(&["core", "github"], 8).definitions().len() <= 8);
}

/// A session of `coder` with `toolsets` active and a cap of `cap` definitions.
fn capped(toolsets: &[&str], cap: usize) -> Session<'static> {
    session(toolsets)
        .with_options(SessionOptions {
            max_tools: Some(cap),
            ..SessionOptions::default()
        })
        .expect("the cap holds the core")
}

#[tokio::test]
async fn a_search_past_the_cap_loads_hits_up_to_it_and_the_rest_join_next_turn() {
    // coder with core + github sends 8 definitions before discovery; the cap leaves room for 2.
    let mut s = capped(&["core", "github"], 10);
    s.begin_turn("one").await;
    assert_eq!(s.max_tools(), Some(10));
    assert_eq!(s.turn_report().max_tools, Some(10));
    assert_eq!(s.definitions().len(), 8, "{:?}", names(&s));
    let r = s
        .handle_call(
            "tool_search",
            json!({"query": "select:git_diff,delete_file,github__list_branches"}),
        )
        .await;
    // git_diff and delete_file (list_dir is visible anyway) fill the room; the third is left out.
    assert_eq!(
        r.outcome,
        Outcome::Found {
            tools: vec![tool("git_diff"), tool("delete_file")]
        }
    );
    let answer = json_of(&r);
    let found: Vec<&str> = answer["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(found, ["git_diff", "delete_file"]);
    assert_eq!(
        answer["leftOut"]["tools"][0]["name"],
        "github__list_branches"
    );
    let message = left_out_message(&["github__list_branches"], 10);
    assert_eq!(answer["leftOut"]["message"], message.as_str());
    assert_eq!(s.definitions().len(), 10);
    assert!(!s.is_active(tool("github__list_branches")));
    // Called anyway: nothing runs, and the answer says why and when it joins.
    let r = s.handle_call("github__list_branches", json!({})).await;
    assert_eq!(r.outcome, Outcome::NotInActiveSet);
    assert_eq!(r.text, message);
    // Described again, git_diff is not used again: loaded first, it makes room next turn.
    s.handle_call("tool_describe", json!({"name": "git_diff"}))
        .await;
    let before = names(&s);
    s.begin_turn("two").await;
    let report = s.turn_report().clone();
    assert_eq!(report.carried, ["github__list_branches"]);
    assert_eq!(report.evicted, ["git_diff"]);
    assert!(report.left_out.is_empty());
    assert!(s.is_active(tool("github__list_branches")));
    assert!(!s.is_active(tool("git_diff")));
    assert_eq!(s.definitions().len(), 10);
    let after = names(&s);
    assert_eq!(&after[..8], &before[..8], "the core stays in place");
    assert_eq!(after[8], "delete_file");
    assert_eq!(
        after.last().map(String::as_str),
        Some("github__list_branches")
    );
}

#[tokio::test]
async fn named_tools_evict_to_make_room_and_preselected_ones_take_free_room_only() {
    let picks = |names: &'static [&'static str]| {
        from_fn(move |_q: crate::preselect::PreselectQuery| async move {
            Ok::<_, String>(names.iter().map(|n| n.to_string()).collect())
        })
    };
    let mut s = capped(&["core", "github"], 9).with_preselector(picks(&["git_diff"]));
    s.begin_turn("one").await;
    assert_eq!(s.discovered(), [tool("git_diff")]);
    // Full: a preselected tool evicts nothing and is reported left out.
    let mut s = s.with_preselector(picks(&["delete_file"]));
    s.begin_turn("two").await;
    assert_eq!(s.turn_report().left_out, ["delete_file"]);
    assert!(s.turn_report().evicted.is_empty());
    assert!(s.is_active(tool("git_diff")));
    // A tool the user names evicts the least recently used one.
    s.begin_turn("now use delete_file").await;
    assert_eq!(s.turn_report().named, [tool("delete_file")]);
    assert_eq!(s.turn_report().evicted, ["git_diff"]);
    assert_eq!(s.definitions().len(), 9);
    // A tool whose definitions alone pass the cap is left out, not squeezed in.
    let mut s = capped(&["core", "github"], 9);
    s.begin_turn("open one with github__createPullRequest")
        .await;
    assert_eq!(s.turn_report().left_out, ["github__createPullRequest"]);
    assert!(s.turn_report().named.is_empty());
    assert!(s.definitions().len() <= 9);
}

/// The serialized definitions of the session's export (deferred ones aside).
fn exported(s: &mut Session<'_>) -> Vec<String> {
    let json = s.export().expect("exports").without_deferred().to_json();
    let list = json.get("tools").cloned().unwrap_or(json);
    list.as_array()
        .expect("a list")
        .iter()
        .map(Value::to_string)
        .collect()
}

#[tokio::test]
async fn definitions_only_grow_between_evictions_and_never_pass_the_cap() {
    let c = catalog();
    let sets: Vec<ToolsetId> = ["core", "github"]
        .iter()
        .map(|s| c.toolset(s).expect("known"))
        .collect();
    let messages = [
        "commit the staged changes",
        "open a pull request for this branch",
        "delete the old file",
        "list the branches",
        "show the diff",
        "thanks",
    ];
    let queries = [
        "select:git_commit",
        "select:delete_file",
        "select:github__createPullRequest",
        "branches",
        "diff of the working tree",
        "select:git_diff,github__list_branches,delete_file",
    ];
    let mut checked_prefixes = 0;
    for provider in [ExportFormat::Mcp, ExportFormat::Anthropic] {
        for cap in [None, Some(9), Some(10), Some(12)] {
            for seed in 1..=12u64 {
                let mut s = Session::new(
                    c,
                    c.profile("coder").expect("known"),
                    sets.clone(),
                    ToolContext::new("."),
                )
                .with_options(SessionOptions {
                    max_tools: cap,
                    discovered_cap: 4,
                    provider,
                    ..SessionOptions::default()
                })
                .expect("the cap holds the core");
                let mut rng = seed;
                let mut next = |n: usize| {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (rng >> 33) as usize % n
                };
                let mut previous: Vec<String> = Vec::new();
                for turn in 0..6 {
                    s.begin_turn(messages[next(messages.len())]).await;
                    let report = s.turn_report().clone();
                    let now = exported(&mut s);
                    let kept = report.evicted.is_empty() && report.unregistered.is_empty();
                    if kept && turn > 0 {
                        assert!(
                            now.starts_with(&previous),
                            "seed {seed} cap {cap:?} turn {turn}: {report:?}"
                        );
                        checked_prefixes += 1;
                    }
                    previous = now;
                    for _step in 0..3 {
                        let q = queries[next(queries.len())];
                        s.handle_call("tool_search", json!({"query": q})).await;
                        let now = exported(&mut s);
                        if let Some(cap) = cap {
                            assert!(s.definitions().len() <= cap, "{:?}", names(&s));
                            assert!(now.len() <= cap);
                        }
                        assert!(now.starts_with(&previous), "seed {seed} within turn {turn}");
                        checked_prefixes += 1;
                        previous = now;
                    }
                }
            }
        }
    }
    assert!(checked_prefixes > 500, "{checked_prefixes}");
}

#[test]
fn the_catalog_caps_and_clients_bound_the_session() {
    let rows = fixture::rows();
    let source = fixture::source_of(&rows)
        .replace(
            "[profile.coder]\ndescription = \"the coder profile\"\n",
            "[profile.coder]\ndescription = \"the coder profile\"\nmax_tools = 60\nclient = \"cursor\"\nmanifest_tokens = 0\n",
        )
        + "[preset.capped]\ndescription = \"a capped deployment\"\nprofile = \"coder\"\ntoolsets = [\"core\"]\nmax_tools = 9\n";
    let loaded = toolcat_catalog::load::parse("capped.toml", &source).expect("loads");
    let c = Catalog::from_tables(toolcat_catalog::derive::derive(&loaded)).expect("a catalog");
    let coder = c.profile("coder").expect("known");
    assert_eq!(
        c.profile_max_tools(coder),
        Some(40),
        "cursor's 40 under max_tools = 60"
    );
    assert_eq!(c.profile_manifest_tokens(coder), 0);
    assert_eq!(
        c.profile_max_tools(c.profile("reader").expect("known")),
        None
    );
    assert_eq!(
        c.profile_manifest_tokens(c.profile("reader").expect("known")),
        toolcat_catalog::model::DEFAULT_MANIFEST_TOKENS
    );
    let preset = c.preset("capped").expect("known");
    assert_eq!(c.preset_max_tools(preset), Some(9));
    let s = Session::for_preset(&c, preset, ToolContext::new("."));
    assert_eq!(s.max_tools(), Some(9));
    let core = s.definitions().len();
    assert!(core < 9, "{core}");
    let s = s
        .with_options(SessionOptions {
            max_tools: Some(core),
            ..SessionOptions::default()
        })
        .expect("the cap holds the core");
    assert_eq!(s.max_tools(), Some(core), "the smaller cap holds");
    let sets: Vec<ToolsetId> = c.toolsets().collect();
    assert_eq!(
        Session::new(&c, coder, sets, ToolContext::new(".")).max_tools(),
        Some(40)
    );
}

/// A session of the fixture's `profile` with `toolsets` active, no preselection.
fn session_of(profile: &str, toolsets: &[&str]) -> Session<'static> {
    let c = catalog();
    let sets: Vec<ToolsetId> = toolsets
        .iter()
        .map(|s| c.toolset(s).expect("fixture toolset"))
        .collect();
    Session::new(
        c,
        c.profile(profile).expect("fixture profile"),
        sets,
        ToolContext::new("."),
    )
    .without_preselection()
}

/// Whether a call got past the active-set check (it ran, or was refused by a later step).
fn reached(r: &CallResult) -> bool {
    r.outcome != Outcome::NotInActiveSet
}

#[tokio::test]
async fn a_tool_of_an_inactive_toolset_names_the_toolset_and_switching_it_on_works() {
    let c = catalog();
    let mut s = session(&["files"]);
    s.begin_turn("hello").await;
    // Inline: switching the toolset on is enough.
    let r = s.handle_call("git_status", json!({})).await;
    assert_eq!(
        r.text,
        "Tool 'git_status' not in active set. `git_status` is in toolsets `core`, `git`, none of them active in this session: the host can switch one of them on (a session's toolsets; ask the user)"
    );
    assert!(!r.text.contains("tool_search"), "{}", r.text);
    // Discoverable: switch it on, then load it as the hint says.
    let r = s.handle_call("git_diff", json!({})).await;
    assert!(
        r.text
            .ends_with("then call tool_search(query='git_diff') to load it"),
        "{}",
        r.text
    );
    // The same words in `tool_describe`'s `notFound`; an exact-name search says so too.
    let d = s
        .handle_call("tool_describe", json!({"name": "git_status"}))
        .await;
    assert_eq!(
        json_of(&d)["notFound"][0]["message"],
        "`git_status` is in toolsets `core`, `git`, none of them active in this session: the host can switch one of them on (a session's toolsets; ask the user)"
    );
    let q = s
        .handle_call("tool_search", json!({"query": "git_diff"}))
        .await;
    assert_eq!(q.outcome, Outcome::Found { tools: vec![] });
    assert!(
        json_of(&q)["message"].as_str().unwrap().contains("`git`"),
        "{}",
        q.text
    );

    s.set_toolsets([c.toolset("files").unwrap(), c.toolset("git").unwrap()]);
    assert!(reached(&s.handle_call("git_status", json!({})).await));
    let q = s
        .handle_call("tool_search", json!({"query": "git_diff"}))
        .await;
    assert_eq!(
        q.outcome,
        Outcome::Found {
            tools: vec![tool("git_diff")]
        }
    );
    assert!(reached(&s.handle_call("git_diff", json!({})).await));
}

#[tokio::test]
async fn a_tool_not_loaded_yet_is_loaded_by_the_hint_even_when_the_budget_is_spent() {
    let mut s = session(&["core"])
        .with_options(SessionOptions {
            search_budget: 1,
            ..SessionOptions::default()
        })
        .expect("the cap holds the core");
    s.begin_turn("hello").await;
    s.handle_call("tool_search", json!({"query": "delete_file"}))
        .await;
    assert_eq!(s.searches_left(), 0);
    let r = s.handle_call("git_diff", json!({})).await;
    assert!(
        r.text.starts_with("Tool 'git_diff' not in active set. Call tool_describe(name='git_diff') to discover it, or use one of: "),
        "{}",
        r.text
    );
    let d = s
        .handle_call("tool_describe", json!({"name": "git_diff"}))
        .await;
    assert_eq!(
        d.outcome,
        Outcome::Described {
            tools: vec![tool("git_diff")]
        }
    );
    assert!(reached(&s.handle_call("git_diff", json!({})).await));
}

#[tokio::test]
async fn an_ambiguous_name_lists_its_choices_and_the_search_it_names_loads_them() {
    let mut s = session_of("full", &["github"]);
    s.begin_turn("hello").await;
    let r = s.handle_call("list_branches", json!({})).await;
    assert_eq!(
        r.text,
        "Tool 'list_branches' not in active set. `list_branches` names several tools; call one by its exported name: `github__list_branches`, `gitlab__list_branches` (tool_search(query='list_branches') loads them)"
    );
    let q = s
        .handle_call("tool_search", json!({"query": "list_branches"}))
        .await;
    assert_eq!(
        q.outcome,
        Outcome::Found {
            tools: vec![tool("github__list_branches"), tool("gitlab__list_branches")]
        }
    );
    assert!(reached(
        &s.handle_call("gitlab__list_branches", json!({})).await
    ));
    // A profile that knows one of them: the bare name is that tool.
    let mut s = session(&["github"]);
    s.begin_turn("hello").await;
    let r = s.handle_call("list_branches", json!({})).await;
    assert!(
        r.text.starts_with("Tool 'list_branches' not in active set. Call tool_search(query='list_branches') to discover it"),
        "{}",
        r.text
    );
    assert!(!r.text.contains("gitlab"), "{}", r.text);
}

#[tokio::test]
async fn deprecated_tools_answer_their_replacement_everywhere_unless_the_host_opts_in() {
    let notice = "`old_grep` is deprecated (removal 2030-01-01); call `search_text` instead";
    let mut s = session(&["files"]);
    s.begin_turn("use old_grep").await;
    for (name, args) in [
        ("old_grep", json!({})),
        ("tool_call", json!({"name": "old_grep"})),
    ] {
        let r = s.handle_call(name, args).await;
        assert_eq!(r.outcome, Outcome::NotInActiveSet);
        assert_eq!(r.ran, None);
        assert_eq!(
            r.text,
            format!("Tool 'old_grep' not in active set. {notice}")
        );
    }
    let d = s
        .handle_call("tool_describe", json!({"name": "old_grep"}))
        .await;
    assert!(d.is_error);
    assert_eq!(json_of(&d)["notFound"][0]["message"], notice);
    // An exact-name search answers the notice and loads the replacement; words never find it.
    let q = s
        .handle_call("tool_search", json!({"query": "old_grep"}))
        .await;
    assert_eq!(
        q.outcome,
        Outcome::Found {
            tools: vec![tool("search_text")]
        }
    );
    assert_eq!(json_of(&q)["message"], notice);
    let q = s
        .handle_call("tool_search", json!({"query": "grep find text pattern"}))
        .await;
    let Outcome::Found { tools } = &q.outcome else {
        panic!("{q:?}")
    };
    assert!(!tools.contains(&tool("old_grep")), "{}", q.text);
    // Following the notice works.
    assert!(reached(&s.handle_call("search_text", json!({})).await));

    // Opted in: calls and describes are answered; plans and searches still leave it out.
    let mut s = session(&["files"])
        .with_options(SessionOptions {
            allow_deprecated: true,
            ..SessionOptions::default()
        })
        .expect("the cap holds the core");
    s.begin_turn("use old_grep").await;
    assert!(!s.definitions().contains(&tool("old_grep")));
    for (name, args) in [
        ("old_grep", json!({})),
        ("tool_call", json!({"name": "old_grep"})),
    ] {
        let r = s.handle_call(name, args).await;
        assert!(reached(&r), "{name}: {}", r.text);
        assert!(!r.text.contains("deprecated"), "{name}: {}", r.text);
    }
    let d = s
        .handle_call("tool_describe", json!({"name": "old_grep"}))
        .await;
    assert!(!d.is_error, "{}", d.text);
    assert_eq!(json_of(&d)["tools"][0]["deprecated"], notice);
    assert_eq!(d.outcome, Outcome::Described { tools: vec![] });
    let q = s
        .handle_call("tool_search", json!({"query": "old_grep"}))
        .await;
    assert_eq!(
        q.outcome,
        Outcome::Found {
            tools: vec![tool("search_text")]
        }
    );
    // Out of reach (no active toolset holds it) it is refused even so, naming the toolset.
    let mut s = session(&["git"])
        .with_options(SessionOptions {
            allow_deprecated: true,
            ..SessionOptions::default()
        })
        .expect("the cap holds the core");
    s.begin_turn("hello").await;
    let r = s.handle_call("old_grep", json!({})).await;
    assert_eq!(r.outcome, Outcome::NotInActiveSet);
    assert!(r.text.contains("toolsets `core`, `files`"), "{}", r.text);
}

#[tokio::test]
async fn tool_search_co_selects_the_servers_siblings_when_asked() {
    let mut s = session_of("full", &["github"])
        .with_options(SessionOptions {
            search_limit: 2,
            co_select: Some(crate::CoSelect { seeds: 1 }),
            ..SessionOptions::default()
        })
        .expect("options hold");
    s.begin_turn("x").await;
    let r = s
        .handle_call("tool_search", json!({"query": "open a pull request"}))
        .await;
    assert_eq!(r.outcome.kind(), "found", "{}", r.text);
    // the best hit, then the other tool of its server (`github`), not gitlab's namesake, which
    // the plain ranking puts second
    assert!(r.text.contains("github__createPullRequest"), "{}", r.text);
    assert!(r.text.contains("github__list_branches"), "{}", r.text);
    assert!(!r.text.contains("gitlab__list_branches"), "{}", r.text);
}
