//! Transcripts: a conversation's turns and model steps as JSONL, for replaying against a
//! [`super::Session`] (the replay tests) and for trying the loop by hand (`toolcat session`).
//!
//! # Format
//! One JSON object per line. Blank lines and lines starting with `#` (comments) are skipped. The
//! first object must be a user message. Each object is one of:
//!
//! ```text
//! {"user": "MESSAGE"}                          a user message: starts a turn
//! {"call": "NAME", "args": {...}}              a model step with one tool call (args default {})
//! {"calls": [{"call": "NAME", "args": {...}}]} a model step with several tool calls, in order
//! {"toolsets": ["T", ...]}                     the host replaces the active toolsets
//! ```
//!
//! The first user line may also carry the session's settings (ignored by `toolcat session`, which
//! takes them from its flags): `"preset"`, `"profile"` (default: the preset's, else `full`),
//! `"toolsets"` (the active toolsets; default: the preset's, else those of the first preset of the
//! profile, else every toolset), `"budget"` (searches per turn, default 3), `"discovered_cap"`
//! (default 20), `"max_tools"` (a cap on the definitions of every step, on top of the preset's
//! or profile's, [`SessionOptions::max_tools`]) and `"preselect"` (`"bm25"`, the default, or
//! `"none"`). [`Settings::session`] builds the session they describe; with a preset, the
//! preset's cap holds too ([`Session::max_tools`]).
//!
//! Expected outcomes (checked by the replay tests, ignored by `toolcat session`) go in an
//! `"expect"` object:
//!
//! - on a user line, about the plan of the turn's first step: `"visible"` (tools that must be
//!   among the definitions), `"hidden"` (tools that must not), `"named"` (exactly the tools the
//!   message names that joined the plan, in order);
//! - on a call, about its answer: `"outcome"` (one of [`super::Outcome::KINDS`]), `"found"` (tools
//!   that must be among the search hits or described definitions), `"not_found"` (tools that
//!   must not), `"text"` (the exact text the model receives), `"contains"` (substrings of it).
//!
//! Tool names in expectations are exported or declared names. Unknown keys are errors, so a
//! misspelt expectation cannot pass silently.

use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Outcome, Session, SessionOptions};
use crate::catalog::{Catalog, ToolsetId};
use crate::error::NameError;
use crate::handler::ToolContext;

/// A parsed transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// The settings of the first user line.
    pub settings: Settings,
    /// Every line after comments and blank lines, in order.
    pub entries: Vec<Entry>,
}

/// Session settings a transcript may carry on its first line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// A preset: its profile and toolsets.
    pub preset: Option<String>,
    /// The profile (default: the preset's, else `full`).
    pub profile: Option<String>,
    /// The active toolsets (default: the preset's, else every toolset).
    pub toolsets: Option<Vec<String>>,
    /// Searches per turn.
    pub budget: Option<usize>,
    /// Discovered tools kept across turns.
    pub discovered_cap: Option<usize>,
    /// A cap on the definitions of every step.
    pub max_tools: Option<usize>,
    /// `bm25` or `none`.
    pub preselect: Option<Preselect>,
}

/// Why [`Settings::session`] cannot build a session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// A profile, preset or toolset the catalog does not declare.
    #[error(transparent)]
    Name(#[from] NameError),
    /// Both a preset and a profile, and the preset runs under another profile.
    #[error("preset `{preset}` runs under profile `{expected}`, not `{given}`; drop the profile or pick a preset of profile `{given}`")]
    ProfileMismatch {
        preset: String,
        expected: String,
        given: String,
    },
    /// A `max_tools` below the session's core.
    #[error(transparent)]
    Cap(#[from] super::CapBelowCore),
}

impl Settings {
    /// The session these settings describe, on `catalog`, running local tools in `context`
    /// (defaults as in the module docs).
    ///
    /// # Errors
    /// [`SettingsError`] for an unknown profile, preset or toolset, a preset of another
    /// profile than the one given, or a `max_tools` below the session's core.
    pub fn session<'c>(
        &self,
        catalog: &'c Catalog,
        context: ToolContext,
    ) -> Result<Session<'c>, SettingsError> {
        let preset = self
            .preset
            .as_deref()
            .map(|p| catalog.preset(p))
            .transpose()?;
        let profile = match (&self.profile, preset) {
            (Some(name), Some(pr)) => {
                let given = catalog.profile(name)?;
                if given != catalog.preset_profile(pr) {
                    return Err(SettingsError::ProfileMismatch {
                        preset: catalog.preset_name(pr).to_string(),
                        expected: catalog.profile_name(catalog.preset_profile(pr)).to_string(),
                        given: name.clone(),
                    });
                }
                given
            }
            (Some(name), None) => catalog.profile(name)?,
            (None, Some(pr)) => catalog.preset_profile(pr),
            (None, None) => catalog.full_profile(),
        };
        let toolsets: Vec<ToolsetId> = match (&self.toolsets, preset) {
            (Some(names), _) => names
                .iter()
                .map(|n| catalog.toolset(n))
                .collect::<Result<_, _>>()?,
            (None, Some(pr)) => catalog.preset_toolsets(pr).collect(),
            (None, None) => match catalog
                .presets()
                .find(|&pr| catalog.preset_profile(pr) == profile)
            {
                Some(pr) => catalog.preset_toolsets(pr).collect(),
                None => catalog.toolsets().collect(),
            },
        };
        let defaults = SessionOptions::default();
        let options = SessionOptions {
            search_budget: self.budget.unwrap_or(defaults.search_budget),
            discovered_cap: self.discovered_cap.unwrap_or(defaults.discovered_cap),
            max_tools: self.max_tools,
            ..defaults
        };
        let mut session =
            Session::new(catalog, profile, toolsets, context).with_options(options)?;
        session.preset = preset;
        Ok(match self.preselect {
            Some(Preselect::None) => session.without_preselection(),
            Some(Preselect::Bm25) | None => session,
        })
    }
}

/// A transcript's preselection setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preselect {
    /// [`crate::preselect::Bm25Preselector`].
    Bm25,
    /// No preselection.
    None,
}

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its line number in the file, from 1.
    pub line: usize,
    /// What it says.
    pub kind: EntryKind,
}

/// What a line says.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    /// A user message, starting a turn.
    User { message: String, expect: TurnExpect },
    /// A model step: its tool calls, in order.
    Step(Vec<Call>),
    /// The host replaces the active toolsets.
    Toolsets(Vec<String>),
}

/// One tool call of a model step.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments as the model wrote them.
    pub args: Value,
    /// What the answer must be.
    pub expect: CallExpect,
}

/// Expectations about a turn's first plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnExpect {
    #[serde(default)]
    pub visible: Vec<String>,
    #[serde(default)]
    pub hidden: Vec<String>,
    pub named: Option<Vec<String>>,
}

/// Expectations about a call's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallExpect {
    pub outcome: Option<String>,
    #[serde(default)]
    pub found: Vec<String>,
    #[serde(default)]
    pub not_found: Vec<String>,
    pub text: Option<String>,
    #[serde(default)]
    pub contains: Vec<String>,
}

/// A line that is not a transcript entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptError {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for TranscriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TranscriptError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    call: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    expect: Option<CallExpect>,
}

/// Parses a whole transcript.
///
/// # Errors
/// The first line that is not valid JSON, not one of the shapes above, carries unknown keys or
/// an unknown outcome, or a first entry that is not a user message; settings on a later user
/// line.
pub fn parse(text: &str) -> Result<Transcript, TranscriptError> {
    let mut settings = None;
    let mut entries = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let Some((entry, line_settings)) = parse_line(k + 1, line)? else {
            continue;
        };
        let first = entries.is_empty();
        if first && !matches!(entry.kind, EntryKind::User { .. }) {
            return Err(TranscriptError {
                line: k + 1,
                message: "a transcript starts with a user message: {\"user\": \"...\"}".into(),
            });
        }
        match (first, line_settings) {
            (true, s) => settings = Some(s.unwrap_or_default()),
            (false, Some(_)) => {
                return Err(TranscriptError {
                    line: k + 1,
                    message: "session settings go on the first user line only".into(),
                })
            }
            (false, None) => {}
        }
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err(TranscriptError {
            line: 1,
            message: "the transcript is empty; start it with {\"user\": \"...\"}".into(),
        });
    }
    Ok(Transcript {
        settings: settings.unwrap_or_default(),
        entries,
    })
}

/// Parses one line (`line` is its number, for errors): `None` for a blank or comment line,
/// else the entry and, for a user line that carries any, its session settings.
///
/// # Errors
/// As [`parse`], for this line.
pub fn parse_line(
    line: usize,
    text: &str,
) -> Result<Option<(Entry, Option<Settings>)>, TranscriptError> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(None);
    }
    let err = |message: String| TranscriptError { line, message };
    let value: Value = serde_json::from_str(trimmed)
        .map_err(|e| err(format!("not JSON ({e}); write one JSON object per line")))?;
    let Value::Object(mut map) = value else {
        return Err(err("expected a JSON object such as {\"user\": \"...\"} or {\"call\": \"NAME\", \"args\": {}}".into()));
    };
    let kind = if map.contains_key("user") {
        "user"
    } else if map.contains_key("call") {
        "call"
    } else if map.contains_key("calls") {
        "calls"
    } else if map.contains_key("toolsets") {
        "toolsets"
    } else {
        return Err(err(
            "a line needs one of the keys `user`, `call`, `calls` or `toolsets`".into(),
        ));
    };
    match kind {
        "user" => {
            let message = match map.shift_remove("user") {
                Some(Value::String(s)) => s,
                _ => return Err(err("`user` must be a string".into())),
            };
            let expect: TurnExpect = take(&mut map, "expect").map_err(err)?.unwrap_or_default();
            let settings = if map.is_empty() {
                None
            } else {
                Some(
                    serde_json::from_value::<Settings>(Value::Object(map))
                        .map_err(|e| err(format!("{e}; settings are `preset`, `profile`, `toolsets`, `budget`, `discovered_cap`, `preselect`")))?,
                )
            };
            Ok(Some((
                Entry {
                    line,
                    kind: EntryKind::User { message, expect },
                },
                settings,
            )))
        }
        "call" => {
            let raw: RawCall = serde_json::from_value(Value::Object(map)).map_err(|e| {
                err(format!(
                    "{e}; a call is {{\"call\": \"NAME\", \"args\": {{...}}, \"expect\": {{...}}}}"
                ))
            })?;
            let call = call_of(raw).map_err(err)?;
            Ok(Some((
                Entry {
                    line,
                    kind: EntryKind::Step(vec![call]),
                },
                None,
            )))
        }
        "calls" => {
            if map.len() != 1 {
                return Err(err(
                    "a `calls` line has no other keys; put `expect` on each call".into(),
                ));
            }
            let raw: Vec<RawCall> = serde_json::from_value(
                map.shift_remove("calls").unwrap_or_default(),
            )
            .map_err(|e| {
                err(format!(
                    "{e}; `calls` is an array of {{\"call\": \"NAME\", \"args\": {{...}}}}"
                ))
            })?;
            if raw.is_empty() {
                return Err(err("`calls` is empty; a step has at least one call".into()));
            }
            let calls = raw
                .into_iter()
                .map(call_of)
                .collect::<Result<_, _>>()
                .map_err(err)?;
            Ok(Some((
                Entry {
                    line,
                    kind: EntryKind::Step(calls),
                },
                None,
            )))
        }
        _ => {
            if map.len() != 1 {
                return Err(err("a `toolsets` line has no other keys".into()));
            }
            let sets: Vec<String> =
                serde_json::from_value(map.shift_remove("toolsets").unwrap_or_default())
                    .map_err(|e| err(format!("{e}; `toolsets` is an array of toolset names")))?;
            Ok(Some((
                Entry {
                    line,
                    kind: EntryKind::Toolsets(sets),
                },
                None,
            )))
        }
    }
}

fn take<T: serde::de::DeserializeOwned>(
    map: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<T>, String> {
    match map.shift_remove(key) {
        None => Ok(None),
        Some(v) => serde_json::from_value(v)
            .map(Some)
            .map_err(|e| format!("`{key}`: {e}")),
    }
}

fn call_of(raw: RawCall) -> Result<Call, String> {
    let expect = raw.expect.unwrap_or_default();
    if let Some(outcome) = &expect.outcome {
        if !Outcome::KINDS.contains(&outcome.as_str()) {
            return Err(format!(
                "unknown outcome `{outcome}`; expected one of {}",
                Outcome::KINDS
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(Call {
        name: raw.call,
        args: raw.args.unwrap_or_else(|| Value::Object(Map::new())),
        expect,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_kind_of_line_with_settings_and_expectations() {
        let t = parse(concat!(
            "# a comment\n",
            "{\"user\": \"hi\", \"preset\": \"code\", \"budget\": 2, \"preselect\": \"none\", \"expect\": {\"visible\": [\"read_file\"]}}\n",
            "\n",
            "{\"call\": \"tool_search\", \"args\": {\"query\": \"git\"}, \"expect\": {\"outcome\": \"found\", \"found\": [\"git_log\"]}}\n",
            "{\"calls\": [{\"call\": \"read_file\"}, {\"call\": \"grep\", \"args\": {\"pattern\": \"x\"}}]}\n",
            "{\"toolsets\": [\"files\"]}\n",
            "{\"user\": \"next\"}\n",
        ))
        .expect("valid transcript");
        assert_eq!(t.settings.preset.as_deref(), Some("code"));
        assert_eq!(t.settings.budget, Some(2));
        assert_eq!(t.settings.preselect, Some(Preselect::None));
        assert_eq!(t.entries.len(), 5);
        assert_eq!(t.entries[0].line, 2);
        match &t.entries[0].kind {
            EntryKind::User { message, expect } => {
                assert_eq!(message, "hi");
                assert_eq!(expect.visible, ["read_file"]);
            }
            other => panic!("expected a user line, got {other:?}"),
        }
        match &t.entries[1].kind {
            EntryKind::Step(calls) => {
                assert_eq!(calls[0].name, "tool_search");
                assert_eq!(calls[0].args, json!({"query": "git"}));
                assert_eq!(calls[0].expect.outcome.as_deref(), Some("found"));
            }
            other => panic!("expected a step, got {other:?}"),
        }
        match &t.entries[2].kind {
            EntryKind::Step(calls) => {
                assert_eq!(calls.len(), 2);
                assert_eq!(calls[0].args, json!({}), "args default to an empty object");
            }
            other => panic!("expected a step, got {other:?}"),
        }
        assert_eq!(t.entries[3].kind, EntryKind::Toolsets(vec!["files".into()]));
    }

    #[tokio::test]
    async fn settings_build_the_session_they_describe() {
        let c = crate::fixture::catalog();
        let ctx = || ToolContext::new(".");
        let names = |s: &Session<'_>| -> Vec<String> {
            s.toolsets()
                .iter()
                .map(|&t| c.toolset_name(t).to_string())
                .collect()
        };
        let settings = |text: &str| parse(text).expect("valid").settings;

        let s = settings(r#"{"user": "x", "preset": "review"}"#)
            .session(&c, ctx())
            .expect("valid");
        assert_eq!(c.profile_name(s.profile()), "reader");
        assert_eq!(names(&s), ["files"]);
        // A profile without a preset of its own: every toolset.
        let s = settings(r#"{"user": "x", "profile": "coder"}"#)
            .session(&c, ctx())
            .expect("valid");
        assert_eq!(names(&s).len(), c.toolsets().len());
        // A profile with a preset: that preset's toolsets, like `toolcat plan`.
        let s = settings(r#"{"user": "x", "profile": "reader"}"#)
            .session(&c, ctx())
            .expect("valid");
        assert_eq!(names(&s), ["files"]);
        let s = settings(r#"{"user": "x"}"#)
            .session(&c, ctx())
            .expect("valid");
        assert_eq!(s.profile(), c.full_profile());

        let mut s = settings(r#"{"user": "x", "profile": "coder", "toolsets": ["git"], "budget": 1, "discovered_cap": 4, "preselect": "none"}"#)
            .session(&c, ctx())
            .expect("valid");
        assert_eq!(names(&s), ["git"]);
        assert_eq!(s.options().search_budget, 1);
        assert_eq!(s.options().discovered_cap, 4);
        s.begin_turn("x").await;
        assert!(s.turn_report().preselect.is_none());
        let mut s = settings(r#"{"user": "x", "profile": "coder"}"#)
            .session(&c, ctx())
            .expect("valid");
        s.begin_turn("x").await;
        assert!(s.turn_report().preselect.is_some(), "BM25 by default");

        let err = settings(r#"{"user": "x", "preset": "review", "profile": "coder"}"#)
            .session(&c, ctx())
            .expect_err("mismatch");
        assert_eq!(
            err.to_string(),
            "preset `review` runs under profile `reader`, not `coder`; drop the profile or pick a preset of profile `coder`"
        );
        let err = settings(r#"{"user": "x", "toolsets": ["gti"]}"#)
            .session(&c, ctx())
            .expect_err("unknown toolset");
        assert_eq!(
            err.to_string(),
            "unknown toolset `gti`; did you mean `git`?"
        );
    }

    #[test]
    fn errors_name_the_line_and_the_fix() {
        let e = parse("{\"call\": \"x\"}").expect_err("no user line first");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("starts with a user message"), "{e}");
        let e = parse("{\"user\": \"a\"}\n{not json").expect_err("bad JSON");
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("line 2: not JSON"), "{e}");
        let e = parse("{\"user\": \"a\"}\n{\"call\": \"x\", \"expect\": {\"outcome\": \"ok\"}}")
            .expect_err("unknown outcome");
        assert!(e.message.contains("unknown outcome `ok`"), "{e}");
        let e = parse("{\"user\": \"a\"}\n{\"call\": \"x\", \"expect\": {\"fond\": []}}")
            .expect_err("misspelt expectation");
        assert!(e.message.contains("fond"), "{e}");
        let e = parse("{\"user\": \"a\"}\n{\"user\": \"b\", \"budget\": 1}")
            .expect_err("late settings");
        assert!(e.message.contains("first user line"), "{e}");
        let e = parse("{\"user\": \"a\", \"budgett\": 1}").expect_err("unknown setting");
        assert!(e.message.contains("budgett"), "{e}");
        let e = parse("{\"user\": \"a\"}\n{\"hello\": 1}").expect_err("no known key");
        assert!(
            e.message.contains("`user`, `call`, `calls` or `toolsets`"),
            "{e}"
        );
        assert!(parse("# only a comment\n").is_err());
    }
}
