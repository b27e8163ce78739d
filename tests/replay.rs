//! Replay harness: every transcript in `tests/transcripts/*.jsonl` (format:
//! `toolcat::session::transcript`) runs against a [`Session`] on the reference catalog, in a
//! scratch git workspace, and after every step the invariants of the discovery loop are checked:
//!
//! - `found-callable`: every tool a `tool_search` or `tool_describe` answer reported (read from
//!   the text the model received) is among the definitions of the next step, unless the host
//!   changed the toolsets in between;
//! - `active-set`: nothing outside the active set runs: a tool handed to `Catalog::call` was among
//!   the definitions when it was called, is owned by the profile and is not deprecated;
//! - `budget`: no more `tool_search` calls are answered in a turn than the budget (3 unless the
//!   transcript sets another), and the refusal is byte-exact;
//! - `prefix`: the definitions of step N are a prefix of those of step N+1, within a turn and
//!   across turn starts, unless the host changed the toolsets in between or the turn's start
//!   evicted or forgot a tool (reported in its `TurnReport`); the serialized export of the
//!   session's provider is compared the same way, definition by definition, byte for byte;
//! - `cap`: no step (and no turn start) has more definitions than the session's cap
//!   (`Session::max_tools`).
//!
//! Expectations written in a transcript are checked too. The tests at the end run deliberately
//! broken loops (test-only wrappers around a session) and assert that the harness reports each
//! invariant's violation on the transcript written to catch it.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolcat::session::transcript::{self, CallExpect, EntryKind, Transcript};
use toolcat::session::{budget_exhausted, not_in_active_set, Outcome, TurnReport};
use toolcat::{CallResult, Catalog, Session, ToolContext, ToolIndex, ToolsetId};
use toolcat_catalog::model::Status;
use toolcat_catalog::tables::bit;

fn catalog() -> &'static Catalog {
    toolcat_cli::reference_catalog()
}

fn transcripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts")
}

/// Every transcript file, sorted by name.
fn transcript_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(transcripts_dir())
        .expect("tests/transcripts exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn load(name: &str) -> Transcript {
    let path = transcripts_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    transcript::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A scratch workspace: a git repository with one commit of two files.
pub(crate) fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    std::fs::write(
        dir.path().join("README.md"),
        "# demo\n\nTODO: write the docs\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    println!(\"hello\"); // TODO greet by name\n}\n",
    )
    .expect("write");
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "."],
        &["commit", "-q", "-m", "initial commit"],
    ] {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_AUTHOR_NAME", "demo")
            .env("GIT_AUTHOR_EMAIL", "demo@example.invalid")
            .env("GIT_COMMITTER_NAME", "demo")
            .env("GIT_COMMITTER_EMAIL", "demo@example.invalid")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?} failed");
    }
    dir
}

/// The loop under test: a session, or a broken variant of one.
trait Loop {
    /// Starts a turn.
    async fn begin_turn(&mut self, message: &str);
    /// What the turn's start did.
    fn turn_report(&self) -> TurnReport;
    /// A model step begins (broken variants keep per-step state).
    fn next_step(&mut self) {}
    /// The definitions the model receives now, in order.
    fn definitions(&self) -> Vec<ToolIndex>;
    /// The host replaces the active toolsets.
    fn set_toolsets(&mut self, toolsets: Vec<ToolsetId>);
    /// One tool call.
    async fn call(&mut self, name: &str, args: Value) -> CallResult;
    /// The cap on the definitions of a step.
    fn max_tools(&self) -> Option<usize> {
        None
    }
    /// The definitions as the provider receives them, each serialized to compact JSON (the
    /// deferred ones aside); `None` for a loop that has no export.
    fn exported(&mut self) -> Option<Vec<String>> {
        None
    }
}

/// The real thing.
struct SessionLoop {
    session: Session<'static>,
    context: ToolContext,
}

impl SessionLoop {
    fn new(t: &Transcript, workspace: &Path) -> SessionLoop {
        let context = ToolContext::new(workspace);
        let session = t
            .settings
            .session(catalog(), context.clone())
            .unwrap_or_else(|e| panic!("transcript settings: {e}"));
        SessionLoop { session, context }
    }
}

impl Loop for SessionLoop {
    async fn begin_turn(&mut self, message: &str) {
        self.session.begin_turn(message).await;
    }
    fn turn_report(&self) -> TurnReport {
        self.session.turn_report().clone()
    }
    fn definitions(&self) -> Vec<ToolIndex> {
        self.session.definitions().to_vec()
    }
    fn set_toolsets(&mut self, toolsets: Vec<ToolsetId>) {
        self.session.set_toolsets(toolsets);
    }
    async fn call(&mut self, name: &str, args: Value) -> CallResult {
        self.session.handle_call(name, args).await
    }
    fn max_tools(&self) -> Option<usize> {
        self.session.max_tools()
    }
    fn exported(&mut self) -> Option<Vec<String>> {
        let export = self.session.export().expect("the session's export");
        let json = export.without_deferred().to_json();
        let list = json.get("tools").unwrap_or(&json);
        Some(
            list.as_array()
                .expect("an export is a list of definitions")
                .iter()
                .map(Value::to_string)
                .collect(),
        )
    }
}

/// The invariants the harness checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Invariant {
    FoundCallable,
    ActiveSet,
    Budget,
    Prefix,
    Cap,
    /// Every definition that joins or leaves at a turn's start is named in its `TurnReport`.
    Reported,
    /// Not an invariant: a transcript's own expectation.
    Expectation,
}

impl Invariant {
    fn as_str(self) -> &'static str {
        match self {
            Invariant::FoundCallable => "found-callable",
            Invariant::ActiveSet => "active-set",
            Invariant::Budget => "budget",
            Invariant::Prefix => "prefix",
            Invariant::Cap => "cap",
            Invariant::Reported => "reported",
            Invariant::Expectation => "expectation",
        }
    }
}

/// One failed check, located in its transcript.
#[derive(Debug, Clone)]
struct Violation {
    transcript: String,
    line: usize,
    invariant: Invariant,
    detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.transcript,
            self.line,
            self.invariant.as_str(),
            self.detail
        )
    }
}

fn exported(t: ToolIndex) -> &'static str {
    catalog().exported_name(t)
}

fn names(tools: &[ToolIndex]) -> Vec<&'static str> {
    tools.iter().map(|&t| exported(t)).collect()
}

/// The exported name of a tool named in a transcript (exported or declared name).
fn resolve(name: &str) -> String {
    catalog()
        .tool(name)
        .map(|t| exported(t).to_string())
        .unwrap_or_else(|_| name.to_string())
}

/// Which meta-tool a call reaches, directly or through `tool_call`.
fn target(name: &str, args: &Value) -> String {
    if name == "tool_call" {
        args["name"].as_str().unwrap_or_default().to_string()
    } else {
        name.to_string()
    }
}

/// The names a search or describe answer reports as found, read from the text the model got.
fn reported(text: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    v["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Replays `t` (named `name` in reports) against `lp` and returns every violation.
async fn replay(name: &str, t: &Transcript, lp: &mut impl Loop) -> Vec<Violation> {
    let c = catalog();
    let cap = t.settings.budget.unwrap_or(3);
    // The profile, resolved independently of the loop under test.
    let profile = t
        .settings
        .profile
        .as_deref()
        .map(|p| c.profile(p).expect("known profile"))
        .or_else(|| {
            t.settings
                .preset
                .as_deref()
                .map(|p| c.preset_profile(c.preset(p).expect("known preset")))
        })
        .unwrap_or_else(|| c.full_profile());
    let owned = c.profile_tools(profile);
    let deprecated = c.status_tools(Status::Deprecated);

    let mut out = Vec::new();
    let mut line = 0;
    let push = |out: &mut Vec<Violation>, line: usize, invariant, detail: String| {
        out.push(Violation {
            transcript: name.to_string(),
            line,
            invariant,
            detail,
        })
    };
    let mut previous: Option<Vec<ToolIndex>> = None;
    let mut previous_export: Option<Vec<String>> = None;
    let mut toolsets_changed = false;
    let mut pending: Vec<(String, usize)> = Vec::new();
    let mut answered = 0usize;

    for entry in &t.entries {
        line = entry.line;
        match &entry.kind {
            EntryKind::User { message, expect } => {
                lp.begin_turn(message).await;
                answered = 0;
                let report = lp.turn_report();
                let kept = !toolsets_changed
                    && report.evicted.is_empty()
                    && report.unregistered.is_empty();
                let now = lp.definitions();
                let exported_now = lp.exported();
                check_growth(
                    &mut out,
                    (name, line, kept),
                    (&previous, &now),
                    (&previous_export, &exported_now),
                    "the previous turn's last step",
                );
                check_cap(&mut out, (name, line), lp.max_tools(), &now);
                if !toolsets_changed {
                    check_reported(&mut out, (name, line), &report, &previous, &now);
                }
                previous = Some(now);
                previous_export = exported_now;
                toolsets_changed = false;
                let defs = names(&lp.definitions());
                for v in &expect.visible {
                    if !defs.contains(&resolve(v).as_str()) {
                        push(
                            &mut out,
                            line,
                            Invariant::Expectation,
                            format!("`{v}` is not visible at the turn's start: {defs:?}"),
                        );
                    }
                }
                for h in &expect.hidden {
                    if defs.contains(&resolve(h).as_str()) {
                        push(
                            &mut out,
                            line,
                            Invariant::Expectation,
                            format!("`{h}` is visible at the turn's start"),
                        );
                    }
                }
                if let Some(named) = &expect.named {
                    let got = names(&lp.turn_report().named);
                    let want: Vec<String> = named.iter().map(|n| resolve(n)).collect();
                    if got != want {
                        push(
                            &mut out,
                            line,
                            Invariant::Expectation,
                            format!("named {got:?}, expected {want:?}"),
                        );
                    }
                }
            }
            EntryKind::Toolsets(sets) => {
                let ids = sets
                    .iter()
                    .map(|s| {
                        c.toolset(s)
                            .unwrap_or_else(|e| panic!("{name}:{line}: {e}"))
                    })
                    .collect();
                lp.set_toolsets(ids);
                toolsets_changed = true;
                pending.clear();
            }
            EntryKind::Step(calls) => {
                lp.next_step();
                let defs = lp.definitions();
                let exported_now = lp.exported();
                check_growth(
                    &mut out,
                    (name, line, !toolsets_changed),
                    (&previous, &defs),
                    (&previous_export, &exported_now),
                    "the previous step",
                );
                check_cap(&mut out, (name, line), lp.max_tools(), &defs);
                previous_export = exported_now;
                for (found, at) in pending.drain(..) {
                    if !defs.iter().any(|&d| exported(d) == found) {
                        push(&mut out, line, Invariant::FoundCallable, format!("`{found}`, reported found at line {at}, is not among this step's definitions"));
                    }
                }
                for call in calls {
                    let active = lp.definitions();
                    let result = lp.call(&call.name, call.args.clone()).await;
                    if let Some(ran) = result.ran {
                        let i = ran.index();
                        if !active.contains(&ran) || !bit(owned, i) || bit(deprecated, i) {
                            push(
                                &mut out,
                                line,
                                Invariant::ActiveSet,
                                format!(
                                    "`{}` ran but was not in the active set {:?}",
                                    exported(ran),
                                    names(&active)
                                ),
                            );
                        }
                    }
                    let meta = target(&call.name, &call.args);
                    if meta == "tool_search" {
                        if result.outcome == Outcome::BudgetExhausted {
                            if result.text != budget_exhausted(cap) {
                                push(
                                    &mut out,
                                    line,
                                    Invariant::Budget,
                                    format!("the budget refusal is `{}`", result.text),
                                );
                            }
                        } else if matches!(result.outcome, Outcome::Found { .. }) {
                            answered += 1;
                            if answered > cap {
                                push(&mut out, line, Invariant::Budget, format!("search {answered} of the turn was answered; the budget is {cap}"));
                            }
                        }
                    }
                    if meta == "tool_search" || meta == "tool_describe" {
                        pending.extend(reported(&result.text).into_iter().map(|n| (n, line)));
                    }
                    for problem in check_expect(&call.expect, &result) {
                        push(
                            &mut out,
                            line,
                            Invariant::Expectation,
                            format!("`{}`: {problem}", call.name),
                        );
                    }
                }
                previous = Some(defs);
                toolsets_changed = false;
            }
        }
    }
    // The step after the last one: what was found last must be callable there too.
    lp.next_step();
    let defs = lp.definitions();
    for (found, at) in pending {
        if !defs.iter().any(|&d| exported(d) == found) {
            push(&mut out, line, Invariant::FoundCallable, format!("`{found}`, reported found at line {at}, is not among the next step's definitions"));
        }
    }
    out
}

/// `prefix`: when `kept`, the definitions `now` start with the `previous` ones, and so do the
/// serialized exports, byte for byte.
fn check_growth(
    out: &mut Vec<Violation>,
    (transcript, line, kept): (&str, usize, bool),
    (previous, now): (&Option<Vec<ToolIndex>>, &[ToolIndex]),
    (previous_export, exported): (&Option<Vec<String>>, &Option<Vec<String>>),
    what: &str,
) {
    if !kept {
        return;
    }
    let mut push = |detail: String| {
        out.push(Violation {
            transcript: transcript.to_string(),
            line,
            invariant: Invariant::Prefix,
            detail,
        })
    };
    if let Some(prev) = previous {
        if !now.starts_with(prev) {
            push(format!(
                "definitions {:?} do not start with those of {what}, {:?}",
                names(now),
                names(prev)
            ));
        }
    }
    if let (Some(prev), Some(now)) = (previous_export, exported) {
        if !now.starts_with(prev) {
            let k = prev.iter().zip(now).take_while(|(a, b)| a == b).count();
            push(format!(
                "the export changed at definition {k} since {what}: {} became {}",
                prev.get(k).map_or("nothing", String::as_str),
                now.get(k).map_or("nothing", String::as_str)
            ));
        }
    }
}

/// `cap`: no more definitions than the cap.
/// `reported`: the definitions that joined or left between the previous step and the turn's
/// start are every one named in `report` (joined: carried, required, named, preselected; left:
/// evicted, unregistered).
fn check_reported(
    out: &mut Vec<Violation>,
    (name, line): (&str, usize),
    report: &TurnReport,
    previous: &Option<Vec<ToolIndex>>,
    now: &[ToolIndex],
) {
    let Some(previous) = previous else { return };
    let mut joined: Vec<&str> = report
        .carried
        .iter()
        .chain(&report.required)
        .map(String::as_str)
        .collect();
    joined.extend(names(&report.named));
    if let Some(pre) = &report.preselect {
        joined.extend(names(&pre.added));
    }
    let left: Vec<&str> = report
        .evicted
        .iter()
        .chain(&report.unregistered)
        .map(String::as_str)
        .collect();
    let mut fail = |detail: String| {
        out.push(Violation {
            transcript: name.to_string(),
            line,
            invariant: Invariant::Reported,
            detail,
        })
    };
    for &t in now.iter().filter(|t| !previous.contains(t)) {
        if !joined.contains(&exported(t)) {
            fail(format!("`{}` joined unreported: {report:?}", exported(t)));
        }
    }
    for &t in previous.iter().filter(|t| !now.contains(t)) {
        if !left.contains(&exported(t)) {
            fail(format!("`{}` left unreported: {report:?}", exported(t)));
        }
    }
    for n in &left {
        if now.iter().any(|&t| exported(t) == *n) {
            fail(format!("`{n}` reported gone but still sent"));
        }
    }
}

fn check_cap(
    out: &mut Vec<Violation>,
    (transcript, line): (&str, usize),
    cap: Option<usize>,
    defs: &[ToolIndex],
) {
    if let Some(cap) = cap.filter(|&cap| defs.len() > cap) {
        out.push(Violation {
            transcript: transcript.to_string(),
            line,
            invariant: Invariant::Cap,
            detail: format!(
                "{} definitions, over the cap of {cap}: {:?}",
                defs.len(),
                names(defs)
            ),
        });
    }
}

/// What does not match a call's expectations.
fn check_expect(expect: &CallExpect, result: &CallResult) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(outcome) = &expect.outcome {
        if result.outcome.kind() != outcome {
            problems.push(format!(
                "outcome `{}`, expected `{outcome}`; answer: {}",
                result.outcome.kind(),
                result.text
            ));
        }
    }
    let found = reported(&result.text);
    for f in &expect.found {
        if !found.contains(&resolve(f)) {
            problems.push(format!("`{f}` not among the reported tools {found:?}"));
        }
    }
    for f in &expect.not_found {
        if found.contains(&resolve(f)) {
            problems.push(format!("`{f}` reported, expected not"));
        }
    }
    if let Some(text) = &expect.text {
        if &result.text != text {
            problems.push(format!("text `{}`, expected `{text}`", result.text));
        }
    }
    for s in &expect.contains {
        if !result.text.contains(s.as_str()) {
            problems.push(format!("text does not contain `{s}`: {}", result.text));
        }
    }
    problems
}

async fn replay_session(name: &str) -> Vec<Violation> {
    let t = load(name);
    let ws = workspace();
    let mut lp = SessionLoop::new(&t, ws.path());
    replay(name, &t, &mut lp).await
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .expect("file name")
        .to_string_lossy()
        .into_owned()
}

#[tokio::test]
async fn every_transcript_replays_without_a_violation() {
    let files = transcript_files();
    assert!(
        files.len() >= 20,
        "{} transcripts; at least 20 are required",
        files.len()
    );
    let mut all = Vec::new();
    let mut steps = 0;
    for path in &files {
        let name = file_name(path);
        let t = load(&name);
        steps += t
            .entries
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::Step(_)))
            .count();
        all.extend(replay_session(&name).await);
    }
    let report: Vec<String> = all.iter().map(|v| v.to_string()).collect();
    assert!(
        report.is_empty(),
        "{} problems:\n{}",
        report.len(),
        report.join("\n")
    );
    assert!(
        steps >= 60,
        "only {steps} model steps across the transcripts"
    );
}

#[test]
fn the_transcripts_the_issue_names_exist() {
    let names: Vec<String> = transcript_files().iter().map(|p| file_name(p)).collect();
    for required in [
        "deferred_tool_called_with_guessed_arguments.jsonl",
        "bare_name_search_for_namespaced_tool.jsonl",
        "tool_named_in_user_message.jsonl",
        "synonym_searches_exhaust_budget.jsonl",
        "call_to_disabled_tool.jsonl",
        "model_never_searches.jsonl",
    ] {
        assert!(
            names.iter().any(|n| n == required),
            "missing transcript {required}"
        );
    }
}

#[tokio::test]
async fn the_byte_exact_messages_reach_the_model_unchanged() {
    let t = load("synonym_searches_exhaust_budget.jsonl");
    let ws = workspace();
    let mut lp = SessionLoop::new(&t, ws.path());
    lp.begin_turn("x").await;
    for q in ["a", "b", "c"] {
        lp.call("tool_search", json!({"query": q})).await;
    }
    let r = lp.call("tool_search", json!({"query": "d"})).await;
    assert_eq!(
        r.text,
        r#"{"error":"search-budget-exhausted","budgetCap":3}"#
    );
    let r = lp.call("git_log", json!({})).await;
    let inline: Vec<&str> = lp
        .definitions()
        .iter()
        .filter(|&&t| {
            catalog().visibility(t) == toolcat_catalog::model::Visibility::Inline
                && catalog().tier(t) != toolcat_catalog::model::Tier::Loop
        })
        .map(|&t| exported(t))
        .collect();
    // The search budget is spent, so the hint is the describe that still loads the tool.
    assert_eq!(
        r.text,
        format!("Tool 'git_log' not in active set. Call tool_describe(name='git_log') to discover it, or use one of: {}", inline.join(", "))
    );
    assert!(r.text.ends_with("memory_recall, ask_user"), "{}", r.text);
    let d = lp.call("tool_describe", json!({"name": "git_log"})).await;
    assert_eq!(
        d.outcome,
        Outcome::Described {
            tools: vec![catalog().tool("git_log").unwrap()]
        }
    );
    let r = lp.call("git_log", json!({"max_count": 1})).await;
    assert_ne!(r.outcome, Outcome::NotInActiveSet, "{}", r.text);
    // With budget left, the same miss names the search (`not_in_active_set`, byte for byte).
    lp.begin_turn("y").await;
    let r = lp.call("git_show", json!({})).await;
    let inline: Vec<&str> = lp
        .definitions()
        .iter()
        .filter(|&&t| {
            catalog().visibility(t) == toolcat_catalog::model::Visibility::Inline
                && catalog().tier(t) != toolcat_catalog::model::Tier::Loop
        })
        .map(|&t| exported(t))
        .collect();
    assert_eq!(
        r.text,
        not_in_active_set("git_show", inline.iter().copied(), true)
    );
}

// ---- broken loops: each must be caught by the harness ----

/// Found tools become callable one step late: hidden from the definitions, and refused, during
/// the step after the one that found them.
struct LateActivation {
    inner: SessionLoop,
    /// Found during the current step.
    fresh: Vec<ToolIndex>,
    /// Found during the previous step: hidden now.
    late: Vec<ToolIndex>,
}

impl Loop for LateActivation {
    async fn begin_turn(&mut self, message: &str) {
        self.inner.begin_turn(message).await;
    }
    fn turn_report(&self) -> TurnReport {
        self.inner.turn_report()
    }
    fn next_step(&mut self) {
        self.late = std::mem::take(&mut self.fresh);
    }
    fn definitions(&self) -> Vec<ToolIndex> {
        let hidden: Vec<ToolIndex> = self.late.iter().chain(&self.fresh).copied().collect();
        self.inner
            .definitions()
            .into_iter()
            .filter(|t| !hidden.contains(t))
            .collect()
    }
    fn set_toolsets(&mut self, toolsets: Vec<ToolsetId>) {
        self.inner.set_toolsets(toolsets);
    }
    async fn call(&mut self, name: &str, args: Value) -> CallResult {
        if let Ok(t) = catalog().tool(name) {
            if self.late.contains(&t) || self.fresh.contains(&t) {
                return CallResult {
                    text: not_in_active_set(name, [], true),
                    content: Vec::new(),
                    is_error: true,
                    outcome: Outcome::NotInActiveSet,
                    ran: None,
                };
            }
        }
        let before = self.inner.definitions();
        let result = self.inner.call(name, args).await;
        if let Outcome::Found { tools } | Outcome::Described { tools } = &result.outcome {
            self.fresh
                .extend(tools.iter().filter(|t| !before.contains(t)).copied());
        }
        result
    }
}

/// Runs whatever the model names, even outside the active set.
struct RunsAnything(SessionLoop);

impl Loop for RunsAnything {
    async fn begin_turn(&mut self, message: &str) {
        self.0.begin_turn(message).await;
    }
    fn turn_report(&self) -> TurnReport {
        self.0.turn_report()
    }
    fn definitions(&self) -> Vec<ToolIndex> {
        self.0.definitions()
    }
    fn set_toolsets(&mut self, toolsets: Vec<ToolsetId>) {
        self.0.set_toolsets(toolsets);
    }
    async fn call(&mut self, name: &str, args: Value) -> CallResult {
        let result = self.0.call(name, args.clone()).await;
        match (&result.outcome, catalog().tool(name)) {
            (Outcome::NotInActiveSet, Ok(t)) => {
                let ran = catalog().call(t, args, &self.0.context).await;
                CallResult {
                    text: format!("{ran:?}"),
                    content: Vec::new(),
                    is_error: ran.is_err(),
                    outcome: Outcome::Ran {
                        tool: t,
                        ok: ran.is_ok(),
                    },
                    ran: Some(t),
                }
            }
            _ => result,
        }
    }
}

/// Answers searches past the budget with BM25 hits instead of the refusal.
struct IgnoresBudget(SessionLoop);

impl Loop for IgnoresBudget {
    async fn begin_turn(&mut self, message: &str) {
        self.0.begin_turn(message).await;
    }
    fn turn_report(&self) -> TurnReport {
        self.0.turn_report()
    }
    fn definitions(&self) -> Vec<ToolIndex> {
        self.0.definitions()
    }
    fn set_toolsets(&mut self, toolsets: Vec<ToolsetId>) {
        self.0.set_toolsets(toolsets);
    }
    async fn call(&mut self, name: &str, args: Value) -> CallResult {
        let query = args["query"].as_str().unwrap_or_default().to_string();
        let result = self.0.call(name, args).await;
        if result.outcome != Outcome::BudgetExhausted {
            return result;
        }
        let s = &self.0.session;
        let hits = s
            .catalog()
            .search(&query, s.profile(), 5)
            .expect("search runs");
        let tools: Vec<ToolIndex> = hits.iter().map(|h| h.tool).collect();
        CallResult {
            text: json!({"tools": names(&tools).iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}).to_string(),
            content: Vec::new(),
            is_error: false,
            outcome: Outcome::Found { tools },
            ran: None,
        }
    }
}

/// Sends the definitions in catalog order, so a discovered tool lands in the middle.
struct CatalogOrder(SessionLoop);

impl Loop for CatalogOrder {
    async fn begin_turn(&mut self, message: &str) {
        self.0.begin_turn(message).await;
    }
    fn turn_report(&self) -> TurnReport {
        self.0.turn_report()
    }
    fn definitions(&self) -> Vec<ToolIndex> {
        let mut defs = self.0.definitions();
        defs.sort();
        defs
    }
    fn set_toolsets(&mut self, toolsets: Vec<ToolsetId>) {
        self.0.set_toolsets(toolsets);
    }
    async fn call(&mut self, name: &str, args: Value) -> CallResult {
        self.0.call(name, args).await
    }
}

/// Broken: the session runs without its cap, while the cap is still reported.
struct IgnoresCap(SessionLoop, Option<usize>);

impl IgnoresCap {
    fn new(lp: SessionLoop) -> IgnoresCap {
        let SessionLoop { session, context } = lp;
        let cap = session.max_tools();
        let options = toolcat::SessionOptions {
            max_tools: None,
            ..session.options().clone()
        };
        let session = session
            .with_options(options)
            .expect("no cap holds the core");
        IgnoresCap(SessionLoop { session, context }, cap)
    }
}

impl Loop for IgnoresCap {
    async fn begin_turn(&mut self, message: &str) {
        self.0.begin_turn(message).await;
    }
    fn turn_report(&self) -> TurnReport {
        self.0.turn_report()
    }
    fn definitions(&self) -> Vec<ToolIndex> {
        self.0.definitions()
    }
    fn set_toolsets(&mut self, toolsets: Vec<ToolsetId>) {
        self.0.set_toolsets(toolsets);
    }
    async fn call(&mut self, name: &str, args: Value) -> CallResult {
        self.0.call(name, args).await
    }
    fn max_tools(&self) -> Option<usize> {
        self.1
    }
}

/// Replays `transcript` with the broken loop `wrap` makes and asserts the harness reports
/// `invariant` there, while the real session passes the same transcript.
async fn assert_caught<L: Loop>(
    transcript: &str,
    invariant: Invariant,
    wrap: impl FnOnce(SessionLoop) -> L,
) {
    assert!(
        replay_session(transcript).await.is_empty(),
        "the real session must pass {transcript}"
    );
    let t = load(transcript);
    let ws = workspace();
    let mut broken = wrap(SessionLoop::new(&t, ws.path()));
    let violations = replay(transcript, &t, &mut broken).await;
    assert!(
        violations.iter().any(|v| v.invariant == invariant),
        "the harness missed the broken `{}` invariant on {transcript}; it reported: {violations:#?}",
        invariant.as_str()
    );
}

#[tokio::test]
async fn late_activation_is_caught_by_found_callable() {
    assert_caught(
        "bare_name_search_for_namespaced_tool.jsonl",
        Invariant::FoundCallable,
        |s| LateActivation {
            inner: s,
            fresh: Vec::new(),
            late: Vec::new(),
        },
    )
    .await;
}

#[tokio::test]
async fn running_outside_the_active_set_is_caught() {
    assert_caught(
        "call_to_disabled_tool.jsonl",
        Invariant::ActiveSet,
        RunsAnything,
    )
    .await;
}

#[tokio::test]
async fn an_ignored_budget_is_caught() {
    assert_caught(
        "synonym_searches_exhaust_budget.jsonl",
        Invariant::Budget,
        IgnoresBudget,
    )
    .await;
}

#[tokio::test]
async fn definitions_out_of_append_order_are_caught_by_prefix() {
    assert_caught(
        "deferred_tool_called_with_guessed_arguments.jsonl",
        Invariant::Prefix,
        CatalogOrder,
    )
    .await;
}

#[tokio::test]
async fn a_session_past_its_cap_is_caught() {
    assert_caught(
        "cap_holds_across_turns.jsonl",
        Invariant::Cap,
        IgnoresCap::new,
    )
    .await;
}

#[tokio::test]
async fn wrong_expectations_are_reported_not_ignored() {
    let t = transcript::parse(concat!(
        "{\"user\": \"hello\", \"preset\": \"code\", \"preselect\": \"none\", \"expect\": {\"visible\": [\"git_log\"], \"hidden\": [\"read_file\"], \"named\": [\"git_show\"]}}\n",
        "{\"call\": \"tool_search\", \"args\": {\"query\": \"select:git_log\"}, \"expect\": {\"outcome\": \"no-hits\", \"found\": [\"git_show\"], \"not_found\": [\"git_log\"], \"text\": \"x\", \"contains\": [\"nowhere\"]}}\n",
    ))
    .expect("valid transcript");
    let ws = workspace();
    let mut lp = SessionLoop::new(&t, ws.path());
    let violations = replay("inline", &t, &mut lp).await;
    let details: Vec<String> = violations.iter().map(|v| v.to_string()).collect();
    assert!(
        violations
            .iter()
            .all(|v| v.invariant == Invariant::Expectation),
        "{details:#?}"
    );
    // visible, hidden, named; outcome, found, not_found, text, contains.
    assert_eq!(violations.len(), 8, "{details:#?}");
    assert!(
        details[0].starts_with("inline:1: expectation: `git_log` is not visible"),
        "{details:#?}"
    );
}

/// The JSONL lines of the README's `toolcat session` example.
fn readme_session_example() -> Vec<String> {
    let readme = include_str!("../README.md");
    let start = readme
        .find("## Discovery loop")
        .expect("the README has a discovery loop section");
    let section = &readme[start..];
    let block = &section[section.find("```sh").expect("an sh block")..];
    let block = &block[..block[5..].find("```").expect("closed") + 5];
    block
        .lines()
        .filter_map(|l| l.trim().strip_prefix('\''))
        .filter_map(|l| l.trim_end_matches(" \\").strip_suffix('\''))
        .map(str::to_string)
        .collect()
}

fn toolcat_session(args: &[&str], workspace: &Path, input: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .arg("session")
        .args(args)
        .arg("--workspace")
        .arg(workspace)
        // The reference catalog's MCP servers stay unconnected: a note about one still starting
        // under load would come before the line these tests read on standard error.
        .args(["--servers", "none"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("toolcat runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("stdin written");
    child.wait_with_output().expect("toolcat finishes")
}

#[test]
fn toolcat_session_prints_what_the_model_receives_for_the_readme_example() {
    let lines = readme_session_example();
    assert_eq!(lines.len(), 4, "{lines:?}");
    let ws = workspace();
    let out = toolcat_session(
        &["--preset", "code", "--no-preselect"],
        ws.path(),
        &(lines.join("\n") + "\n"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<&str> = stdout.lines().collect();
    assert_eq!(printed[0], "turn 1: user: show me the last commits");
    assert!(
        printed[1].starts_with("step 1: ") && printed[1].contains(" definitions: tool_search, "),
        "{stdout}"
    );
    assert_eq!(printed[2], "  call git_log {\"max_count\":3}");
    assert!(printed[3].starts_with("  error: Tool 'git_log' not in active set. Call tool_search(query='git_log') to discover it, or use one of: read_file, "), "{stdout}");
    assert!(
        printed[4].starts_with("step 2: same ") && printed[4].ends_with(" definitions"),
        "{stdout}"
    );
    assert!(
        printed[6].starts_with("  result: {\"tools\":[{\"name\":\"git_log\""),
        "{stdout}"
    );
    assert!(
        printed[7].starts_with("step 3: ") && printed[7].ends_with(" definitions: + git_log"),
        "{stdout}"
    );
    assert!(
        printed[9].starts_with("  result: {\"commits\":[") && printed[9].contains("initial commit"),
        "{stdout}"
    );
    assert_eq!(printed.len(), 10, "{stdout}");
}

#[test]
fn toolcat_session_json_has_one_object_per_turn_step_and_toolset_change() {
    let ws = workspace();
    let input = concat!(
        "# comments and blank lines are skipped\n\n",
        "{\"user\": \"read src/main.rs\"}\n",
        "{\"calls\": [{\"call\": \"read_file\", \"args\": {\"path\": \"src/main.rs\"}}, {\"call\": \"tool_search\", \"args\": {\"query\": \"select:git_show\"}}]}\n",
        "{\"toolsets\": [\"files\", \"discovery\"]}\n",
        "{\"call\": \"git_status\"}\n",
    );
    let out = toolcat_session(&["--profile", "coding", "--json"], ws.path(), input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["turn"], 1);
    assert_eq!(lines[0]["preselect"]["status"], "answered");
    assert_eq!(lines[1]["step"], 1);
    let outcomes: Vec<&str> = lines[1]["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["outcome"].as_str().expect("outcome"))
        .collect();
    assert_eq!(outcomes, ["ran", "found"]);
    assert!(lines[1]["calls"][0]["result"]
        .as_str()
        .expect("text")
        .contains("hello"));
    assert_eq!(lines[2], json!({"toolsets": ["files", "discovery"]}));
    assert_eq!(lines[3]["calls"][0]["outcome"], "not-in-active-set");
    let defs = lines[3]["definitions"].as_array().expect("definitions");
    // Discovered, but its toolset is switched off: not sent.
    assert!(!defs.contains(&json!("git_show")), "{defs:?}");
    assert!(defs.contains(&json!("read_file")), "{defs:?}");
}

#[test]
fn toolcat_session_rejects_bad_input_naming_the_line() {
    let ws = workspace();
    let out = toolcat_session(
        &["--preset", "code"],
        ws.path(),
        "{\"user\": \"hi\"}\n{\"call\": 3}\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: line 2: "), "{stderr}");
    let out = toolcat_session(
        &["--preset", "code"],
        ws.path(),
        "{\"call\": \"read_file\"}\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("start with a user message"));
    let out = toolcat_session(&["--preset", "chat", "--profile", "coding"], ws.path(), "");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("preset `chat` runs under profile `messaging`"));
}
