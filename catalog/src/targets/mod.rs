//! Export targets: the rules each wire format sets for tool names and input schemas, the rewrites
//! that make a schema fit, and the report of what was rewritten, fell back or cannot be exported.
//!
//! A catalog names its targets in `tools.toml` with the top-level key
//! `targets = ["openai", "anthropic", "gemini", "mcp"]`; the names of a file that declares none
//! are held to all four (and its server schemas to none). `toolcat check --target openai,gemini`
//! checks the given targets instead.
//!
//! ## Names
//! Checked on the *exported* name (`NS__name` for a tool of a namespaced server), see
//! [`name_rule`]:
//!
//! | target | rule | source |
//! |---|---|---|
//! | `openai` | `^[a-zA-Z0-9_-]{1,64}$` | OpenAI API reference, function `name` |
//! | `anthropic` | `^[a-zA-Z0-9_-]{1,64}$` | Anthropic Messages API, tool `name` |
//! | `gemini` | starts with a letter or `_`; letters, digits, `_`, `.`, `:`, `-`; at most 64 | Gemini API `FunctionDeclaration.name` |
//! | `mcp` | 1–128 of letters, digits, `_`, `-`, `.` | MCP specification 2025-11-25, tool names (SEP-986) |
//!
//! A name that breaks the rule of a target of the catalog is a validation error
//! (`E0202` characters, `E0203` length, `E0204` first character, each naming the target).
//!
//! ## Input schemas
//! - **`openai`** ([`openai`]): strict mode where possible. Every object gets
//!   `additionalProperties: false`; every property becomes required, and one that was optional
//!   becomes nullable (`"type": [T, "null"]`, `null` added to an `enum`, or
//!   `anyOf: [S, {"type": "null"}]` when the schema has no `type`); `const` becomes a one-value
//!   `enum`; a `oneOf` of distinct constants (what schemars writes for a documented Rust enum)
//!   becomes `anyOf`, which then means the same; `default: null` is dropped (as OpenAI's SDK
//!   does); a `$ref` with sibling keywords (`{"$ref": "#/$defs/S", "description": ...}`, which
//!   the API refuses: "$ref cannot have keywords") is unravelled as the SDK's
//!   `to_strict_json_schema` does: the definition merged in, the node's own keywords kept,
//!   `$ref` dropped, and strict mode applied to the result (rule `openai-strict-ref`; one that
//!   is recursive, or whose siblings constrain a keyword the definition constrains otherwise,
//!   falls back); a `format` on an `integer` or `number` (schemars' `uint64`, `int32`, …: JSON Schema
//!   defines formats for strings only) is dropped. A schema strict mode cannot express falls back
//!   to `strict: false` and is sent unchanged — the documented fallback, reported per tool with
//!   every reason: a keyword outside the supported subset (a `default` other than `null`, any
//!   other `oneOf`, `allOf`, `not`,
//!   `minLength`, `uniqueItems`, …), a string `format` other than `date-time`, `time`, `date`,
//!   `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid` (so `format: "uri"` falls back), a
//!   free-form object (no `properties`, or `additionalProperties` other than `false`), a root that
//!   is not an object, more than 10 levels of object nesting or 5000 properties. A strict schema
//!   makes the model send `null` for an argument it means to leave out: [`restore_arguments`]
//!   turns such `null`s back into absent arguments before the call is validated and run.
//! - **`gemini`** ([`gemini`]): the Gemini `Schema` object, a subset of OpenAPI 3.0. `$ref`s into
//!   the schema (`#/$defs/X`, `#/definitions/X`, any JSON Pointer) are inlined and `$defs`
//!   dropped; `anyOf [T, {"type": "null"}]` and
//!   `"type": [T, "null"]` become `T` with `nullable: true`; a `type` list of several types and
//!   `oneOf` become `anyOf`; a one-branch `allOf` is merged into its parent; keywords beside a
//!   several-branch `anyOf` other than annotations move into its branches (`items` into the
//!   array branches, `properties` into the object ones: `gemini-any-of`); `properties` (and the
//!   other object keywords) on a node without a `type` make it `type: object`, on another type
//!   they constrain nothing and are dropped (`gemini-object`; `items` likewise, `gemini-array`).
//!   Gemini takes `enum` on `type: string` only (`gemini-enum`): a string `const` becomes
//!   `"type": "string", "enum": [c]`, a numeric one `type` with `minimum` = `maximum`; an `enum`
//!   of strings gets `"type": "string"`, `null` in it becomes `nullable: true`, consecutive
//!   integers become `"type": "integer"` with `minimum`/`maximum`, `[true, false]` becomes
//!   `"type": "boolean"`. Keywords outside the `Schema` object (`additionalProperties`,
//!   `$comment`, `exclusiveMinimum`, …) and `format`s outside `enum`/`date-time` (strings),
//!   `int32`/`int64` (integers) and `float`/`double` (numbers) are dropped. What Gemini cannot
//!   express is never passed through: a recursive or unresolvable `$ref`, an `allOf` of several
//!   branches, any other `const` or `enum` (a boolean or `null` constant, integers that are not
//!   consecutive, mixed values), and a keyword a merge would need twice with different values
//!   are errors naming the rule and the location: the tool cannot be exported to Gemini.
//!   [`conformance`] checks the output of both rewrites against the providers' rules.
//! - **`anthropic`**, **`mcp`**: any JSON Schema of an object (`E0412` already requires that).
//!   Anthropic adds one rule for a request: deferred tools (`defer_loading: true`) need a
//!   non-deferred search tool in the same request and at least one non-deferred tool
//!   ([`check_anthropic_request`]).
//!
//! Every change is a [`Finding`] of kind [`FindingKind::Rewrite`]; a reason to fall back is
//! [`FindingKind::Fallback`]; a tool that cannot be exported is [`FindingKind::Error`]. Each
//! finding names the tool, the rule ([`RULES`], with the provider document it comes from) and the
//! JSON Pointer of the schema location.
//!
//! ## Where the checks run
//! - **Build time** (`toolcat_codegen::build::compile_catalog`) and `toolcat check`: validation
//!   checks the names of every tool against the catalog's targets (all four when it declares
//!   none), and the declared `input_schema` of every server tool against the targets it
//!   *declares* (`E0423` for a schema a target cannot take; a catalog that declares no targets,
//!   such as one just imported, gets no schema check until it says where it is exported). A
//!   local tool's schema comes from its handler's Rust type, which a build script cannot see
//!   before the crate is compiled, so the build checks local tools' names only.
//! - `toolcat check --target ...` on the reference catalog compiled into the binary also checks
//!   and reports every handler's schema (`toolcat::export::target_report`); on a catalog read
//!   with `--catalog`, local tools have no handler and are reported as unchecked.

use serde_json::{json, Map, Value};

pub use crate::model::Target;

pub mod conformance;

/// A provider document a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// What the document is, e.g. "OpenAI Structured Outputs, supported schemas".
    pub title: &'static str,
    /// Where to read it.
    pub url: &'static str,
}

const OPENAI_FUNCTIONS: Source = Source {
    title: "OpenAI API reference, function tool `name`",
    url: "https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools",
};
const OPENAI_STRUCTURED: Source = Source {
    title: "OpenAI Structured Outputs, supported schemas",
    url: "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas",
};
const OPENAI_SDK_STRICT: Source = Source {
    title: "OpenAI Python SDK, `openai.lib._pydantic.to_strict_json_schema` (the API answers 400 \"$ref cannot have keywords\")",
    url: "https://github.com/openai/openai-python/blob/main/src/openai/lib/_pydantic.py",
};
const ANTHROPIC_TOOLS: Source = Source {
    title: "Anthropic Messages API, tool `name`",
    url: "https://docs.anthropic.com/en/api/messages#body-tools",
};
const ANTHROPIC_TOOL_SEARCH: Source = Source {
    title: "Anthropic tool search tool, deferred loading",
    url: "https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool",
};
const GEMINI_FUNCTIONS: Source = Source {
    title: "Gemini API `FunctionDeclaration.name`",
    url: "https://ai.google.dev/api/caching#FunctionDeclaration",
};
const GEMINI_SCHEMA: Source = Source {
    title: "Gemini API `Schema` object (a subset of OpenAPI 3.0)",
    url: "https://ai.google.dev/api/caching#Schema",
};
const MCP_TOOL_NAMES: Source = Source {
    title: "MCP specification 2025-11-25, tool names (SEP-986)",
    url: "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names",
};

/// One target rule: a stable id, its target, what it says, and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetRule {
    pub id: &'static str,
    pub target: Target,
    pub summary: &'static str,
    pub source: Source,
}

const fn rule(
    id: &'static str,
    target: Target,
    summary: &'static str,
    source: Source,
) -> TargetRule {
    TargetRule {
        id,
        target,
        summary,
        source,
    }
}

/// Every rule a [`Finding`] can name, by target.
pub const RULES: &[TargetRule] = &[
    rule(
        "openai-name",
        Target::OpenAi,
        "function names match `^[a-zA-Z0-9_-]{1,64}$`",
        OPENAI_FUNCTIONS,
    ),
    rule(
        "openai-parameters",
        Target::OpenAi,
        "function `parameters` is a JSON Schema of `type: \"object\"`",
        OPENAI_FUNCTIONS,
    ),
    rule(
        "openai-strict-objects",
        Target::OpenAi,
        "every object has `additionalProperties: false` and its `properties`",
        OPENAI_STRUCTURED,
    ),
    rule(
        "openai-strict-required",
        Target::OpenAi,
        "every property is required; an optional one is emulated with a union with `null`",
        OPENAI_STRUCTURED,
    ),
    rule(
        "openai-strict-keywords",
        Target::OpenAi,
        "only a subset of JSON Schema keywords is supported in strict mode",
        OPENAI_STRUCTURED,
    ),
    rule(
        "openai-strict-formats",
        Target::OpenAi,
        "string formats: date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid",
        OPENAI_STRUCTURED,
    ),
    rule(
        "openai-strict-root",
        Target::OpenAi,
        "the root of a schema is an object, not `anyOf`",
        OPENAI_STRUCTURED,
    ),
    rule(
        "openai-strict-limits",
        Target::OpenAi,
        "at most 10 levels of object nesting and 5000 properties",
        OPENAI_STRUCTURED,
    ),
    rule(
        "openai-strict-ref",
        Target::OpenAi,
        "a `$ref` has no sibling keywords; one with siblings is unravelled: the definition merged in, the node's own keywords first",
        OPENAI_SDK_STRICT,
    ),
    rule(
        "anthropic-name",
        Target::Anthropic,
        "tool names match `^[a-zA-Z0-9_-]{1,64}$`",
        ANTHROPIC_TOOLS,
    ),
    rule(
        "anthropic-deferred",
        Target::Anthropic,
        "deferred tools need a non-deferred search tool and at least one non-deferred tool",
        ANTHROPIC_TOOL_SEARCH,
    ),
    rule(
        "anthropic-unique-names",
        Target::Anthropic,
        "the names of a request's tools are unique",
        ANTHROPIC_TOOLS,
    ),
    rule(
        "openai-tool-search",
        Target::OpenAi,
        "deferred tools need a non-deferred search tool, a hosted `tool_search` needs deferred tools, and at least one tool is not deferred",
        OPENAI_TOOL_SEARCH,
    ),
    rule(
        "openai-namespace",
        Target::OpenAi,
        "a namespace holds at least one function, and toolcat's namespaces hold deferred functions only",
        OPENAI_TOOL_SEARCH,
    ),
    rule(
        "openai-unique-names",
        Target::OpenAi,
        "the names of a request's top-level tools, namespaces and namespace members are unique",
        OPENAI_TOOL_SEARCH,
    ),
    rule(
        "gemini-name",
        Target::Gemini,
        "names start with a letter or `_`, use letters, digits, `_`, `.`, `:`, `-`, at most 64",
        GEMINI_FUNCTIONS,
    ),
    rule(
        "gemini-ref",
        Target::Gemini,
        "no `$ref` or `$defs`: references are inlined",
        GEMINI_SCHEMA,
    ),
    rule(
        "gemini-nullable",
        Target::Gemini,
        "optional null is `nullable: true`, not a union with `null`",
        GEMINI_SCHEMA,
    ),
    rule(
        "gemini-union",
        Target::Gemini,
        "unions are `anyOf`; no `oneOf`, no list of types; `allOf` is not supported",
        GEMINI_SCHEMA,
    ),
    rule(
        "gemini-enum",
        Target::Gemini,
        "no `const`; `enum` only on `type: string`, listing strings; a numeric constant or range is `minimum`/`maximum`",
        GEMINI_SCHEMA,
    ),
    rule(
        "gemini-object",
        Target::Gemini,
        "`properties`, `required`, `minProperties`, `maxProperties`, `propertyOrdering` only on `type: object`",
        GEMINI_SCHEMA,
    ),
    rule(
        "gemini-array",
        Target::Gemini,
        "`items`, `minItems`, `maxItems` only on `type: array`",
        GEMINI_SCHEMA,
    ),
    rule(
        "gemini-any-of",
        Target::Gemini,
        "beside `anyOf` only annotations (`description`, `title`, `nullable`, `default`, `example`); other keywords move into its branches",
        GEMINI_SCHEMA,
    ),
    rule(
        "gemini-keywords",
        Target::Gemini,
        "only the fields of the `Schema` object (no `additionalProperties`, ...)",
        GEMINI_SCHEMA,
    ),
    rule(
        "gemini-formats",
        Target::Gemini,
        "formats: `enum`, `date-time` (string), `int32`, `int64` (integer), `float`, `double` (number)",
        GEMINI_SCHEMA,
    ),
    rule(
        "mcp-name",
        Target::Mcp,
        "tool names are 1-128 of letters, digits, `_`, `-`, `.`",
        MCP_TOOL_NAMES,
    ),
];

/// The rule of id `id`. Panics on an unknown id (ids are constants of this module).
pub fn target_rule(id: &str) -> &'static TargetRule {
    RULES
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no target rule `{id}`"))
}

/// What a target accepts as a tool name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameRule {
    pub target: Target,
    /// Longest name, in characters.
    pub max_len: usize,
    /// Characters accepted besides ASCII letters, digits, `_` and `-`.
    pub extra: &'static str,
    /// Whether the first character must be a letter or `_`.
    pub letter_first: bool,
    /// The rule as one line, e.g. `^[a-zA-Z0-9_-]{1,64}$`.
    pub text: &'static str,
    /// The id of the rule in [`RULES`].
    pub rule: &'static str,
}

impl NameRule {
    /// Whether the rule accepts `c` anywhere in a name.
    pub fn accepts(&self, c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_' || c == '-' || self.extra.contains(c)
    }

    /// The accepted characters as a bracket expression body: `a-zA-Z0-9_-`, `a-zA-Z0-9_.-`, ...
    pub fn charset(&self) -> String {
        format!("a-zA-Z0-9_{}-", self.extra)
    }

    /// Where the rule comes from.
    pub fn source(&self) -> Source {
        target_rule(self.rule).source
    }
}

/// The name rule of `target` (see the module documentation for the sources).
pub fn name_rule(target: Target) -> NameRule {
    match target {
        Target::OpenAi => NameRule {
            target,
            max_len: 64,
            extra: "",
            letter_first: false,
            text: "^[a-zA-Z0-9_-]{1,64}$",
            rule: "openai-name",
        },
        Target::Anthropic => NameRule {
            target,
            max_len: 64,
            extra: "",
            letter_first: false,
            text: "^[a-zA-Z0-9_-]{1,64}$",
            rule: "anthropic-name",
        },
        Target::Gemini => NameRule {
            target,
            max_len: 64,
            extra: ".:",
            letter_first: true,
            text: "^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$",
            rule: "gemini-name",
        },
        Target::Mcp => NameRule {
            target,
            max_len: 128,
            extra: ".",
            letter_first: false,
            text: "^[a-zA-Z0-9_.-]{1,128}$",
            rule: "mcp-name",
        },
    }
}

/// Why a name breaks a [`NameRule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameFault {
    Empty,
    /// `len` characters, more than `max`.
    TooLong {
        len: usize,
        max: usize,
    },
    /// A character the rule does not accept (the first such one).
    Char(char),
    /// A first character other than a letter or `_`, under a rule that requires one.
    First(char),
}

/// Every way `name` breaks the rule of `target`, in the order empty, characters, first
/// character, length.
pub fn name_faults(target: Target, name: &str) -> Vec<NameFault> {
    let rule = name_rule(target);
    let mut faults = Vec::new();
    if name.is_empty() {
        faults.push(NameFault::Empty);
        return faults;
    }
    if let Some(c) = name.chars().find(|&c| !rule.accepts(c)) {
        faults.push(NameFault::Char(c));
    }
    if rule.letter_first {
        if let Some(first) = name.chars().next() {
            if !(first.is_ascii_alphabetic() || first == '_') {
                faults.push(NameFault::First(first));
            }
        }
    }
    let len = name.chars().count();
    if len > rule.max_len {
        faults.push(NameFault::TooLong {
            len,
            max: rule.max_len,
        });
    }
    faults
}

/// The targets of a catalog: those it declares, or all of them when it declares none.
pub fn effective(declared: &[Target]) -> Vec<Target> {
    if declared.is_empty() {
        Target::ALL.to_vec()
    } else {
        let mut out: Vec<Target> = Vec::new();
        for t in declared {
            if !out.contains(t) {
                out.push(*t);
            }
        }
        out
    }
}

/// `` `openai`, `anthropic` and `gemini` `` for messages.
pub fn target_list(targets: &[Target]) -> String {
    crate::diagnostics::and_list(targets.iter().map(|t| format!("`{t}`")))
}

// ---- findings ----

/// What a finding means for the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingKind {
    /// The schema was changed to fit the target; the tool is exported.
    Rewrite,
    /// A reason the tool is exported in the target's fallback form (`strict: false` for OpenAI).
    Fallback,
    /// The tool cannot be exported to the target.
    Error,
}

/// One thing a target check found about one tool (or one request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub target: Target,
    /// Exported name of the tool; empty for a finding about a whole request.
    pub tool: String,
    pub kind: FindingKind,
    /// The id of the rule in [`RULES`].
    pub rule: &'static str,
    /// JSON Pointer into the exported input schema (`""` is the root).
    pub path: String,
    /// What was found or done, lower-case, names in backticks.
    pub message: String,
}

impl Finding {
    /// The rule the finding applies.
    pub fn rule(&self) -> &'static TargetRule {
        target_rule(self.rule)
    }
}

/// An input schema prepared for one target.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The schema to send (for an [`FindingKind::Error`], the input unchanged: not to be sent).
    pub schema: Value,
    /// OpenAI only: `Some(true)` when strict, `Some(false)` when it fell back.
    pub strict: Option<bool>,
    /// Every rewrite, fallback reason or error, in schema order.
    pub findings: Vec<Finding>,
}

impl Exported {
    /// Whether the tool can be exported (no [`FindingKind::Error`]).
    pub fn is_ok(&self) -> bool {
        !self.findings.iter().any(|f| f.kind == FindingKind::Error)
    }
}

/// The input schema `schema` of the tool exported as `tool`, prepared for `target`.
pub fn export_schema(target: Target, tool: &str, schema: &Value) -> Exported {
    match target {
        Target::OpenAi => openai(tool, schema),
        Target::Gemini => gemini(tool, schema),
        Target::Anthropic | Target::Mcp => Exported {
            schema: without_schema_keyword(schema),
            strict: None,
            findings: Vec::new(),
        },
    }
}

fn without_schema_keyword(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        map.shift_remove("$schema");
    }
    schema
}

/// A JSON Pointer (RFC 6901) of `parent` extended by `token`.
fn pointer(parent: &str, token: &str) -> String {
    format!("{parent}/{}", token.replace('~', "~0").replace('/', "~1"))
}

// ---- OpenAI strict mode ----

/// Keywords strict mode accepts (OpenAI Structured Outputs, supported schemas). `$schema` is
/// dropped at the root before the check, as every export does.
pub const OPENAI_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "enum",
    "const",
    "description",
    "title",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// String formats strict mode accepts.
pub const OPENAI_STRING_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Most levels of object nesting strict mode accepts.
pub const OPENAI_MAX_DEPTH: usize = 10;
/// Most object properties, in total, strict mode accepts.
pub const OPENAI_MAX_PROPERTIES: usize = 5000;
/// Most `enum` values, over all of a schema's enums, strict mode accepts.
pub const OPENAI_MAX_ENUM_VALUES: usize = 1000;
/// An `enum` of strings with more than this many values …
pub const OPENAI_LARGE_ENUM: usize = 250;
/// … may hold at most this many characters in all.
pub const OPENAI_MAX_LARGE_ENUM_CHARS: usize = 15_000;

/// The input schema of `tool` for OpenAI function tools: rewritten for strict mode
/// (`strict: Some(true)`), or, when strict mode cannot express it, unchanged with
/// `strict: Some(false)` and a [`FindingKind::Fallback`] per reason. Never an error.
pub fn openai(tool: &str, schema: &Value) -> Exported {
    let original = without_schema_keyword(schema);
    let mut rewritten = original.clone();
    let mut pass = Strict {
        tool,
        root: &original,
        unravelling: Vec::new(),
        rewrites: Vec::new(),
        reasons: Vec::new(),
        properties: 0,
        nodes: 0,
    };
    match rewritten.as_object() {
        Some(root) if root.contains_key("anyOf") => pass.reason(
            "openai-strict-root",
            "",
            "the root is an `anyOf`; strict mode needs an object at the root".to_string(),
        ),
        Some(root) if !is_object_schema(root) => pass.reason(
            "openai-strict-root",
            "",
            "the root is not an object schema".to_string(),
        ),
        _ => {}
    }
    pass.node(&mut rewritten, "", 0);
    let mut enums = (0, Vec::new());
    enum_sizes(&rewritten, "", &mut enums);
    if enums.0 > OPENAI_MAX_ENUM_VALUES {
        let n = enums.0;
        pass.reason(
            "openai-strict-limits",
            "",
            format!("{n} `enum` values in all, more than {OPENAI_MAX_ENUM_VALUES}"),
        );
    }
    for (path, chars) in std::mem::take(&mut enums.1) {
        pass.reason(
            "openai-strict-limits",
            &path,
            format!("an `enum` of more than {OPENAI_LARGE_ENUM} strings holds {chars} characters, more than {OPENAI_MAX_LARGE_ENUM_CHARS}"),
        );
    }
    if pass.properties > OPENAI_MAX_PROPERTIES {
        let n = pass.properties;
        pass.reason(
            "openai-strict-limits",
            "",
            format!("{n} properties in all, more than {OPENAI_MAX_PROPERTIES}"),
        );
    }
    let Strict {
        rewrites, reasons, ..
    } = pass;
    if reasons.is_empty() {
        Exported {
            schema: rewritten,
            strict: Some(true),
            findings: rewrites,
        }
    } else {
        Exported {
            schema: original,
            strict: Some(false),
            findings: reasons,
        }
    }
}

struct Strict<'a> {
    tool: &'a str,
    /// The schema as given (without `$schema`): what a `$ref` points into.
    root: &'a Value,
    /// `$ref`s with sibling keywords being unravelled, outermost first (a repeat is a cycle).
    unravelling: Vec<String>,
    rewrites: Vec<Finding>,
    reasons: Vec<Finding>,
    properties: usize,
    /// Schema nodes visited, inlined references counted each time ([`MAX_REWRITE_NODES`]).
    nodes: usize,
}

/// Schema nodes a rewrite visits at most, counting a node inside an inlined `$ref` once per
/// inlining: a reference graph whose definitions share references grows exponentially when it
/// is inlined, so past this an OpenAI schema falls back to `strict: false` (sent unchanged) and
/// a Gemini schema is refused. Real schemas stay far below it (the largest of the LiveMCPBench
/// catalog has under a thousand).
pub const MAX_REWRITE_NODES: usize = 20_000;

impl Strict<'_> {
    fn finding(
        &self,
        kind: FindingKind,
        rule: &'static str,
        path: &str,
        message: String,
    ) -> Finding {
        Finding {
            target: Target::OpenAi,
            tool: self.tool.to_string(),
            kind,
            rule,
            path: path.to_string(),
            message,
        }
    }

    fn rewrite(&mut self, rule: &'static str, path: &str, message: String) {
        let f = self.finding(FindingKind::Rewrite, rule, path, message);
        self.rewrites.push(f);
    }

    fn reason(&mut self, rule: &'static str, path: &str, message: String) {
        let f = self.finding(FindingKind::Fallback, rule, path, message);
        self.reasons.push(f);
    }

    /// Rewrites one schema node in place; `depth` is the number of objects around it.
    fn node(&mut self, value: &mut Value, path: &str, depth: usize) {
        self.nodes += 1;
        if self.nodes > MAX_REWRITE_NODES {
            if self.nodes == MAX_REWRITE_NODES + 1 {
                self.reason(
                    "openai-strict-limits",
                    path,
                    format!("the schema grows past {MAX_REWRITE_NODES} nodes when its `$ref`s are unravelled"),
                );
            }
            return;
        }
        let Value::Object(map) = value else {
            self.reason(
                "openai-strict-keywords",
                path,
                format!("the boolean schema `{value}` is not supported"),
            );
            return;
        };
        if map.len() > 1 {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let reference = reference.clone();
                let at = pointer(path, "$ref");
                match self.unravelled(map, &reference) {
                    Ok(merged) => {
                        let siblings: Vec<String> = map
                            .keys()
                            .filter(|k| *k != "$ref")
                            .map(|k| format!("`{k}`"))
                            .collect();
                        *value = Value::Object(merged);
                        self.rewrite(
                            "openai-strict-ref",
                            &at,
                            format!(
                                "unravelled `$ref` `{reference}` beside {}: the definition inlined, the node's own keywords kept",
                                crate::diagnostics::and_list(siblings.into_iter())
                            ),
                        );
                        self.unravelling.push(reference);
                        self.node(value, path, depth);
                        self.unravelling.pop();
                    }
                    Err(message) => self.reason("openai-strict-ref", &at, message),
                }
                return;
            }
        }
        if map.get("default") == Some(&Value::Null) {
            // As OpenAI's own SDK does (`to_strict_json_schema`): after the rewrite an optional
            // property is nullable, and `null` is what a left-out argument becomes.
            map.shift_remove("default");
            self.rewrite(
                "openai-strict-keywords",
                &pointer(path, "default"),
                "dropped `default: null`".to_string(),
            );
        }
        if let Some(Value::Array(branches)) = map.get("oneOf") {
            if !map.contains_key("anyOf") && disjoint_constants(branches) {
                // Branches that are distinct constants never overlap: `anyOf` means the same.
                let branches = map.shift_remove("oneOf").unwrap_or(Value::Null);
                map.insert("anyOf".into(), branches);
                self.rewrite(
                    "openai-strict-keywords",
                    &pointer(path, "oneOf"),
                    "`oneOf` of distinct constants written as `anyOf`".to_string(),
                );
            }
        }
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in &keys {
            if !OPENAI_KEYWORDS.contains(&key.as_str()) {
                let shown = short_json(&map[key.as_str()]);
                self.reason(
                    "openai-strict-keywords",
                    &pointer(path, key),
                    format!("`{key}: {shown}` is not supported in strict mode"),
                );
            }
        }
        if let Some(constant) = map.get("const").cloned() {
            if !map.contains_key("enum") {
                map.insert("enum".into(), json!([constant]));
            }
            map.shift_remove("const");
            self.rewrite(
                "openai-strict-keywords",
                &pointer(path, "const"),
                format!(
                    "`const: {}` written as a one-value `enum`",
                    short_json(&constant)
                ),
            );
        }
        if let Some(format) = map.get("format").cloned() {
            let text = format.as_str().unwrap_or_default();
            if is_numeric(map) {
                map.shift_remove("format");
                self.rewrite(
                    "openai-strict-formats",
                    &pointer(path, "format"),
                    format!("dropped `format: {format}` of a number: JSON Schema defines formats for strings only"),
                );
            } else if !OPENAI_STRING_FORMATS.contains(&text) {
                self.reason(
                    "openai-strict-formats",
                    &pointer(path, "format"),
                    format!("`format: {format}` is not a string format strict mode accepts"),
                );
            } else if !is_string(map) {
                self.reason(
                    "openai-strict-formats",
                    &pointer(path, "format"),
                    format!("`format: {format}` on a schema without `\"type\": \"string\"`"),
                );
            }
        }
        if is_object_schema(map) {
            self.object(map, path, depth + 1);
        }
        match map.get_mut("items") {
            Some(Value::Array(_)) => self.reason(
                "openai-strict-keywords",
                &pointer(path, "items"),
                "tuple `items` (a list of schemas) is not supported".to_string(),
            ),
            Some(items) => self.node(items, &pointer(path, "items"), depth),
            None => {}
        }
        if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
            let base = pointer(path, "anyOf");
            for (k, branch) in branches.iter_mut().enumerate() {
                self.node(branch, &pointer(&base, &k.to_string()), depth);
            }
        }
        for defs in ["$defs", "definitions"] {
            if let Some(Value::Object(entries)) = map.get_mut(defs) {
                let base = pointer(path, defs);
                for (name, def) in entries.iter_mut() {
                    self.node(def, &pointer(&base, name), depth);
                }
            }
        }
        if let Some(Value::String(reference)) = map.get("$ref") {
            if !reference.starts_with('#') {
                let reference = reference.clone();
                self.reason(
                    "openai-strict-keywords",
                    &pointer(path, "$ref"),
                    format!("`$ref` `{reference}` points outside the schema"),
                );
            }
        }
    }

    /// The node `map` (a `$ref` with sibling keywords) with its reference resolved and merged
    /// in, as OpenAI's own SDK does (`_ensure_strict_json_schema`): the node's own keywords
    /// first, `$ref` dropped. `Err` says why it cannot be: the reference is recursive, points
    /// outside the schema, or a sibling constrains a keyword the definition constrains
    /// differently (JSON Schema would require both).
    fn unravelled(
        &self,
        map: &Map<String, Value>,
        reference: &str,
    ) -> Result<Map<String, Value>, String> {
        if self.unravelling.iter().any(|r| r == reference) {
            return Err(format!(
                "`$ref` `{reference}` with sibling keywords is recursive and cannot be unravelled"
            ));
        }
        let target = reference
            .strip_prefix('#')
            .and_then(|p| self.root.pointer(p));
        let Some(definition) = target else {
            return Err(format!(
                "`$ref` `{reference}` with sibling keywords does not point into this schema"
            ));
        };
        let Value::Object(definition) = definition else {
            return Err(format!(
                "`$ref` `{reference}` points at `{}`, not a schema object",
                short_json(definition)
            ));
        };
        let mut own = map.clone();
        own.shift_remove("$ref");
        merge_schema(definition, &own).map_err(|key| {
            format!("`{key}` beside `$ref` `{reference}` differs from the definition's; strict mode cannot require both")
        })
    }

    fn object(&mut self, map: &mut Map<String, Value>, path: &str, depth: usize) {
        if depth > OPENAI_MAX_DEPTH {
            self.reason(
                "openai-strict-limits",
                path,
                format!("objects nest {depth} levels deep here, more than {OPENAI_MAX_DEPTH}"),
            );
            return;
        }
        match map.get("additionalProperties") {
            None => {
                if !map.contains_key("properties") {
                    self.reason(
                        "openai-strict-objects",
                        path,
                        "a free-form object (no `properties`) cannot be strict".to_string(),
                    );
                    return;
                }
                map.insert("additionalProperties".into(), Value::Bool(false));
                self.rewrite(
                    "openai-strict-objects",
                    path,
                    "added `additionalProperties: false`".to_string(),
                );
            }
            Some(Value::Bool(false)) => {
                if !map.contains_key("properties") {
                    map.insert("properties".into(), json!({}));
                }
            }
            Some(other) => {
                let shown = short_json(other);
                self.reason(
                    "openai-strict-objects",
                    &pointer(path, "additionalProperties"),
                    format!("`additionalProperties: {shown}` (an object with open keys) cannot be strict"),
                );
                return;
            }
        }
        let required: Vec<String> = match map.get("required") {
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        let Some(Value::Object(properties)) = map.get_mut("properties") else {
            self.reason(
                "openai-strict-objects",
                &pointer(path, "properties"),
                "`properties` is not an object".to_string(),
            );
            return;
        };
        self.properties += properties.len();
        let base = pointer(path, "properties");
        let mut all = Vec::with_capacity(properties.len());
        let mut made_nullable = Vec::new();
        for (name, property) in properties.iter_mut() {
            let at = pointer(&base, name);
            self.node(property, &at, depth);
            if !required.contains(name) {
                let shape = make_nullable(property);
                made_nullable.push((at, name.clone(), shape));
            }
            all.push(Value::String(name.clone()));
        }
        for (at, name, shape) in made_nullable {
            let message = match shape {
                Some(how) => {
                    format!("optional property `{name}` made required and nullable: {how}")
                }
                None => {
                    format!("optional property `{name}` made required (it accepts `null` already)")
                }
            };
            self.rewrite("openai-strict-required", &at, message);
        }
        let had = map.get("required").cloned();
        let all = Value::Array(all);
        if had.as_ref() != Some(&all) {
            map.insert("required".into(), all);
        }
    }
}

/// Keywords that describe a schema rather than constrain it: when two schemas are merged, the
/// node's own win.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "example",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// `own` merged over `base` (a definition a `$ref` points at, or the one branch of an `allOf`
/// or `anyOf`): `own`'s annotations ([`ANNOTATIONS`]) win; any other keyword both hold must be
/// equal, since JSON Schema would require both. `Err` is the first keyword that differs.
fn merge_schema(
    base: &Map<String, Value>,
    own: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let mut merged = own.clone();
    for (key, value) in base {
        match merged.get(key) {
            None => {
                merged.insert(key.clone(), value.clone());
            }
            Some(mine) if mine == value || ANNOTATIONS.contains(&key.as_str()) => {}
            Some(_) => return Err(key.clone()),
        }
    }
    Ok(merged)
}

/// Whether every branch is one constant (`const`, or an `enum` of one value) and no two are the
/// same: such a `oneOf` accepts exactly what the same `anyOf` accepts.
fn disjoint_constants(branches: &[Value]) -> bool {
    let mut seen: Vec<&Value> = Vec::new();
    for branch in branches {
        let value = match (branch.get("const"), branch.get("enum")) {
            (Some(c), _) => c,
            (None, Some(Value::Array(one))) if one.len() == 1 => &one[0],
            _ => return false,
        };
        if seen.contains(&value) {
            return false;
        }
        seen.push(value);
    }
    !branches.is_empty()
}

/// Whether a schema node describes an object (`type` `object`, or `properties` without a `type`).
fn is_object_schema(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    }
}

/// Whether a schema node's `type` is `integer` or `number` (with or without `null`).
fn is_numeric(map: &Map<String, Value>) -> bool {
    let numeric = |t: &Value| t == "integer" || t == "number";
    match map.get("type") {
        Some(t @ Value::String(_)) => numeric(t),
        Some(Value::Array(types)) => {
            types.iter().any(numeric) && types.iter().all(|t| numeric(t) || t == "null")
        }
        _ => false,
    }
}

/// Whether a schema node's `type` is `string` (with or without `null`): where strict mode takes
/// a `format`.
fn is_string(map: &Map<String, Value>) -> bool {
    let types = schema_types(map);
    types.contains(&"string") && types.iter().all(|t| *t == "string" || *t == "null")
}

/// Makes a property schema accept `null` as well; returns how, for the report (`None` when it
/// accepted `null` already).
fn make_nullable(value: &mut Value) -> Option<String> {
    let Value::Object(map) = value else {
        return None;
    };
    let mut how = Vec::new();
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            map.insert("type".into(), json!([t, "null"]));
            how.push(format!("`\"type\": [\"{t}\", \"null\"]`"));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push("null".into());
                how.push(format!("`\"type\": {}`", Value::Array(types.clone())));
            }
        }
        Some(_) => {}
        None => {
            if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
                if !branches.iter().any(is_null_schema) {
                    branches.push(json!({"type": "null"}));
                    how.push("a `{\"type\": \"null\"}` branch in `anyOf`".to_string());
                }
            } else if !map.contains_key("enum") {
                // A `$ref` or a bare schema: wrap it, keeping its description outside.
                let mut inner = std::mem::take(map);
                let mut outer = Map::new();
                for key in ["description", "title"] {
                    if let Some(v) = inner.shift_remove(key) {
                        outer.insert(key.into(), v);
                    }
                }
                outer.insert(
                    "anyOf".into(),
                    json!([Value::Object(inner), {"type": "null"}]),
                );
                *map = outer;
                how.push("`anyOf: [..., {\"type\": \"null\"}]`".to_string());
            }
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        if !values.iter().any(Value::is_null) {
            values.push(Value::Null);
            how.push("`null` added to `enum`".to_string());
        }
    }
    if how.is_empty() {
        None
    } else {
        Some(how.join(", "))
    }
}

/// Adds to `sizes.0` the values of every `enum` under `value`, and to `sizes.1` the location and
/// length of each `enum` of more than [`OPENAI_LARGE_ENUM`] strings over
/// [`OPENAI_MAX_LARGE_ENUM_CHARS`] characters.
fn enum_sizes(value: &Value, path: &str, sizes: &mut (usize, Vec<(String, usize)>)) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let at = pointer(path, key);
                if key == "enum" {
                    if let Value::Array(values) = child {
                        sizes.0 += values.iter().filter(|v| !v.is_null()).count();
                        let chars: usize = values
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|t| t.chars().count())
                            .sum();
                        if values.len() > OPENAI_LARGE_ENUM && chars > OPENAI_MAX_LARGE_ENUM_CHARS {
                            sizes.1.push((at, chars));
                        }
                        continue;
                    }
                }
                enum_sizes(child, &at, sizes);
            }
        }
        Value::Array(items) => {
            for (k, item) in items.iter().enumerate() {
                enum_sizes(item, &pointer(path, &k.to_string()), sizes);
            }
        }
        _ => {}
    }
}

fn is_null_schema(v: &Value) -> bool {
    v.get("type").is_some_and(|t| t == "null")
}

/// A value shown in a message: its JSON, cut at 60 characters.
fn short_json(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// Undoes what strict mode added to a call's arguments, in place: an argument sent as `null`
/// whose property was optional in `original_schema` and does not accept `null` there is removed
/// (strict mode makes the model send `null` for an argument it leaves out). Objects nested in
/// properties, array items and `$defs` references are followed. Returns how many were removed.
///
/// Apply it to the arguments of every call of a tool exported with `strict: true` before they
/// are validated against the tool's own schema and dispatched.
pub fn restore_arguments(original_schema: &Value, arguments: &mut Value) -> usize {
    restore(original_schema, original_schema, arguments, 0)
}

fn restore(root: &Value, schema: &Value, value: &mut Value, depth: usize) -> usize {
    if depth > 64 {
        return 0;
    }
    let schema = resolve_local(root, schema).unwrap_or(schema);
    // `Optional[Model]` and unions of objects: the first branch of the value's shape.
    let key = match value {
        Value::Object(_) => Some("properties"),
        Value::Array(_) => Some("items"),
        _ => None,
    };
    if let Some(key) = key.filter(|k| schema.get(*k).is_none()) {
        let branch = ["anyOf", "oneOf"]
            .iter()
            .filter_map(|k| schema.get(*k).and_then(Value::as_array))
            .flatten()
            .find(|b| resolve_local(root, b).unwrap_or(b).get(key).is_some());
        if let Some(branch) = branch {
            return restore(root, branch, value, depth + 1);
        }
    }
    let mut removed = 0;
    match value {
        Value::Object(args) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return 0;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let names: Vec<String> = args.keys().cloned().collect();
            for name in names {
                let Some(property) = properties.get(&name) else {
                    continue;
                };
                let is_null = args.get(&name).is_some_and(Value::is_null);
                if is_null && !required.contains(&name.as_str()) && !accepts_null(root, property) {
                    args.shift_remove(&name);
                    removed += 1;
                } else if let Some(inner) = args.get_mut(&name) {
                    removed += restore(root, property, inner, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items.iter_mut() {
                    removed += restore(root, item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
    removed
}

/// The definition a local `$ref` (`#/$defs/X`, `#/definitions/X`) points at.
fn resolve_local<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let reference = schema.get("$ref")?.as_str()?;
    root.pointer(reference.strip_prefix('#')?)
}

/// Whether a property schema accepts `null`: a `null` type or `nullable`, a `null` in `enum` or
/// `const`, a branch of `anyOf`/`oneOf` that does, or no keyword that constrains the type at all
/// (`{}`, `{"description": ...}`, `{"properties": ...}` without `type`). References are followed
/// once each; past [`NULL_CHECK_BUDGET`] schema nodes the answer is `true`, which keeps the
/// argument as sent (the tool's own validation then judges it).
fn accepts_null(root: &Value, schema: &Value) -> bool {
    let mut budget = NULL_CHECK_BUDGET;
    let mut seen = Vec::new();
    accepts_null_in(root, schema, &mut budget, &mut seen)
}

/// Schema nodes [`accepts_null`] visits at most for one property.
const NULL_CHECK_BUDGET: usize = 4096;

fn accepts_null_in<'a>(
    root: &'a Value,
    schema: &'a Value,
    budget: &mut usize,
    seen: &mut Vec<&'a str>,
) -> bool {
    if *budget == 0 {
        return true;
    }
    *budget -= 1;
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        if seen.contains(&reference) {
            // Already judged (or being judged) on this walk: it adds nothing new.
            return false;
        }
        seen.push(reference);
        if let Some(target) = resolve_local(root, schema) {
            return accepts_null_in(root, target, budget, seen);
        }
        return true;
    }
    let by_type = match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    let branches: Vec<&Value> = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    let by_branch = branches
        .iter()
        .any(|s| accepts_null_in(root, s, budget, seen));
    let by_enum = schema
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.iter().any(Value::is_null));
    let by_const = schema.get("const") == Some(&Value::Null);
    let unconstrained = ["type", "enum", "const", "anyOf", "oneOf", "allOf", "not"]
        .iter()
        .all(|k| schema.get(*k).is_none());
    by_type
        || by_branch
        || by_enum
        || by_const
        || unconstrained
        || schema.get("nullable") == Some(&Value::Bool(true))
}

// ---- Gemini ----

/// The Gemini `Schema` fields that apply to objects only.
pub const GEMINI_OBJECT_KEYWORDS: &[&str] = &[
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "propertyOrdering",
];

/// The Gemini `Schema` fields that apply to arrays only.
pub const GEMINI_ARRAY_KEYWORDS: &[&str] = &["items", "minItems", "maxItems"];

/// The Gemini `Schema` fields that may stand beside an `anyOf` (annotations).
pub const GEMINI_BESIDE_ANY_OF: &[&str] =
    &["description", "title", "nullable", "default", "example"];

/// Fields of the Gemini `Schema` object.
pub const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// The input schema of `tool` as a Gemini function declaration's `parameters`: rewritten, with a
/// [`FindingKind::Rewrite`] per change, or [`FindingKind::Error`]s when it cannot be expressed.
pub fn gemini(tool: &str, schema: &Value) -> Exported {
    let original = without_schema_keyword(schema);
    let mut pass = GeminiPass {
        tool,
        root: &original,
        findings: Vec::new(),
        // The root is being expanded from the start: a `$ref` to `#` is recursive.
        inlining: vec!["#".to_string()],
        inlined: std::collections::BTreeSet::new(),
        nodes: 0,
    };
    let rewritten = pass.node(&original, "", 0);
    let has_defs = ["$defs", "definitions"]
        .iter()
        .any(|k| original.get(*k).is_some());
    if has_defs {
        let inlined: Vec<String> = pass.inlined.iter().map(|r| format!("`{r}`")).collect();
        let message = if inlined.is_empty() {
            "dropped `$defs`: nothing refers to it".to_string()
        } else {
            format!(
                "dropped `$defs` after inlining {}",
                crate::diagnostics::and_list(inlined.into_iter())
            )
        };
        pass.push(FindingKind::Rewrite, "gemini-ref", "", message);
    }
    let failed = pass.findings.iter().any(|f| f.kind == FindingKind::Error);
    Exported {
        schema: match rewritten {
            Some(schema) if !failed => schema,
            _ => original.clone(),
        },
        strict: None,
        findings: pass.findings,
    }
}

struct GeminiPass<'a> {
    tool: &'a str,
    root: &'a Value,
    findings: Vec<Finding>,
    /// References being inlined, outermost first (a repeat is a cycle).
    inlining: Vec<String>,
    inlined: std::collections::BTreeSet<String>,
    /// Schema nodes visited, inlined references counted each time ([`MAX_REWRITE_NODES`]).
    nodes: usize,
}

impl GeminiPass<'_> {
    fn push(&mut self, kind: FindingKind, rule: &'static str, path: &str, message: String) {
        self.findings.push(Finding {
            target: Target::Gemini,
            tool: self.tool.to_string(),
            kind,
            rule,
            path: path.to_string(),
            message,
        });
    }

    fn rewrite(&mut self, rule: &'static str, path: &str, message: String) {
        self.push(FindingKind::Rewrite, rule, path, message);
    }

    fn error(&mut self, rule: &'static str, path: &str, message: String) {
        self.push(FindingKind::Error, rule, path, message);
    }

    /// The rewritten node, or `None` when it cannot be expressed (an error was recorded).
    fn node(&mut self, value: &Value, path: &str, depth: usize) -> Option<Value> {
        self.nodes += 1;
        if self.nodes > MAX_REWRITE_NODES {
            if self.nodes == MAX_REWRITE_NODES + 1 {
                self.error(
                    "gemini-ref",
                    path,
                    format!("the schema grows past {MAX_REWRITE_NODES} nodes when its `$ref`s are inlined"),
                );
            }
            return None;
        }
        if depth > 64 {
            self.error(
                "gemini-ref",
                path,
                "the schema nests more than 64 levels deep".to_string(),
            );
            return None;
        }
        let Value::Object(input) = value else {
            // `true`/`false` schemas: any value / no value; Gemini has neither.
            self.error(
                "gemini-keywords",
                path,
                format!("the boolean schema `{value}` has no Gemini equivalent"),
            );
            return None;
        };
        let mut map = input.clone();
        if depth == 0 {
            map.shift_remove("$defs");
            map.shift_remove("definitions");
        }

        // `allOf` with one branch: merge it in; several: not expressible.
        if let Some(all) = map.shift_remove("allOf") {
            match all.as_array().map(Vec::as_slice) {
                Some([only]) => {
                    if let Some(branch) = only.as_object() {
                        match merge_schema(branch, &map) {
                            Ok(merged) => map = merged,
                            Err(key) => {
                                self.error(
                                    "gemini-union",
                                    &pointer(path, "allOf"),
                                    format!("`{key}` beside `allOf` differs from its branch's; Gemini cannot require both"),
                                );
                                return None;
                            }
                        }
                    }
                    self.rewrite(
                        "gemini-union",
                        &pointer(path, "allOf"),
                        "merged the one branch of `allOf` into its parent".to_string(),
                    );
                }
                _ => {
                    let n = all.as_array().map_or(0, Vec::len);
                    self.error(
                        "gemini-union",
                        &pointer(path, "allOf"),
                        format!("`allOf` of {n} branches cannot be expressed"),
                    );
                    return None;
                }
            }
        }

        // `$ref`: inline the definition; the node's own keywords (a description) win.
        if let Some(reference) = map.shift_remove("$ref") {
            let reference = reference.as_str().unwrap_or_default().to_string();
            let at = pointer(path, "$ref");
            // Any JSON Pointer into the same schema: `#/$defs/X`, `#/definitions/X`,
            // `#/properties/data/items`, ...
            let target = reference
                .strip_prefix('#')
                .and_then(|p| self.root.pointer(p));
            let Some(definition) = target else {
                self.error(
                    "gemini-ref",
                    &at,
                    format!(
                        "`$ref` `{reference}` does not point into this schema, so it cannot be inlined"
                    ),
                );
                return None;
            };
            if self.inlining.contains(&reference) {
                self.error(
                    "gemini-ref",
                    &at,
                    format!("`$ref` `{reference}` is recursive and cannot be inlined"),
                );
                return None;
            }
            let definition = match definition {
                Value::Object(def) => def,
                other => {
                    self.error(
                        "gemini-ref",
                        &at,
                        format!(
                            "`$ref` `{reference}` points at `{}`, not a schema object",
                            short_json(other)
                        ),
                    );
                    return None;
                }
            };
            let merged = match merge_schema(definition, &map) {
                Ok(merged) => merged,
                Err(key) => {
                    self.error(
                        "gemini-ref",
                        &at,
                        format!("`{key}` beside `$ref` `{reference}` differs from the definition's; Gemini cannot require both"),
                    );
                    return None;
                }
            };
            self.rewrite("gemini-ref", &at, format!("inlined `$ref` `{reference}`"));
            self.inlined.insert(reference.clone());
            self.inlining.push(reference);
            let out = self.node(&Value::Object(merged), path, depth + 1);
            self.inlining.pop();
            return out;
        }

        // `type: [T, "null"]` and lists of several types.
        if let Some(Value::Array(types)) = map.get("type").cloned() {
            let has_null = types.iter().any(|t| t == "null");
            let others: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
            let at = pointer(path, "type");
            match others.as_slice() {
                [one] => {
                    map.insert("type".into(), one.clone());
                    if has_null {
                        map.insert("nullable".into(), Value::Bool(true));
                        self.rewrite(
                            "gemini-nullable",
                            &at,
                            format!("`\"type\": [{one}, \"null\"]` written as `\"type\": {one}, \"nullable\": true`"),
                        );
                    } else {
                        self.rewrite(
                            "gemini-union",
                            &at,
                            format!("`\"type\": [{one}]` written as `\"type\": {one}`"),
                        );
                    }
                }
                [] => {
                    map.shift_remove("type");
                    map.insert("nullable".into(), Value::Bool(true));
                    self.rewrite(
                        "gemini-nullable",
                        &at,
                        "`\"type\": [\"null\"]` written as `\"nullable\": true`".to_string(),
                    );
                }
                several => {
                    map.shift_remove("type");
                    let branches: Vec<Value> =
                        several.iter().map(|t| json!({ "type": t })).collect();
                    map.insert("anyOf".into(), Value::Array(branches));
                    if has_null {
                        map.insert("nullable".into(), Value::Bool(true));
                    }
                    self.rewrite(
                        "gemini-union",
                        &at,
                        format!("a list of {} types written as `anyOf`", several.len()),
                    );
                }
            }
        }

        // `oneOf` → `anyOf`.
        if let Some(one_of) = map.shift_remove("oneOf") {
            let at = pointer(path, "oneOf");
            if map.contains_key("anyOf") {
                self.rewrite(
                    "gemini-union",
                    &at,
                    "dropped `oneOf` beside an `anyOf`".to_string(),
                );
            } else {
                map.insert("anyOf".into(), one_of);
                self.rewrite(
                    "gemini-union",
                    &at,
                    "`oneOf` written as `anyOf`".to_string(),
                );
            }
        }

        // `anyOf`: `null` branches become `nullable`; a single branch left is merged in.
        if let Some(Value::Array(branches)) = map.get("anyOf").cloned() {
            let at = pointer(path, "anyOf");
            let (nulls, rest): (Vec<Value>, Vec<Value>) =
                branches.into_iter().partition(is_null_schema);
            if !nulls.is_empty() {
                map.insert("nullable".into(), Value::Bool(true));
            }
            match rest.as_slice() {
                [only] => {
                    map.shift_remove("anyOf");
                    let branch = match only {
                        Value::Object(branch) => branch.clone(),
                        _ => Map::new(),
                    };
                    let merged = match merge_schema(&branch, &map) {
                        Ok(merged) => merged,
                        Err(key) => {
                            self.error(
                                "gemini-any-of",
                                &at,
                                format!("`{key}` beside `anyOf` differs from its one branch's; Gemini cannot require both"),
                            );
                            return None;
                        }
                    };
                    self.rewrite(
                        "gemini-nullable",
                        &at,
                        if nulls.is_empty() {
                            "merged the one branch of `anyOf` into its parent".to_string()
                        } else {
                            "`anyOf [T, {\"type\": \"null\"}]` written as `T` with `nullable: true`"
                                .to_string()
                        },
                    );
                    return self.node(&Value::Object(merged), path, depth + 1);
                }
                [] => {
                    map.shift_remove("anyOf");
                    self.rewrite(
                        "gemini-nullable",
                        &at,
                        "`anyOf` of `null` only written as `nullable: true`".to_string(),
                    );
                }
                _ => {
                    let rest = self.distribute(&mut map, rest, path)?;
                    let mut out = Vec::with_capacity(rest.len());
                    for (k, branch) in rest.iter().enumerate() {
                        out.push(self.node(branch, &pointer(&at, &k.to_string()), depth + 1)?);
                    }
                    if !nulls.is_empty() {
                        self.rewrite(
                            "gemini-nullable",
                            &at,
                            "`{\"type\": \"null\"}` branch written as `nullable: true`".to_string(),
                        );
                    }
                    map.insert("anyOf".into(), Value::Array(out));
                }
            }
        }

        // `const` and `enum`: strings as a string `enum`, numbers as `minimum`/`maximum`.
        self.constant(&mut map, path)?;
        self.enumeration(&mut map, path)?;

        // `properties` and `items` only on the type they constrain.
        self.typed_keywords(&mut map, path);

        // `format`: only the ones Gemini documents for the type.
        if let Some(format) = map.get("format").cloned() {
            let ty = map.get("type").and_then(Value::as_str).unwrap_or_default();
            if !format
                .as_str()
                .is_some_and(|f| gemini_formats(ty).contains(&f))
            {
                map.shift_remove("format");
                self.rewrite(
                    "gemini-formats",
                    &pointer(path, "format"),
                    format!("dropped `format: {format}`"),
                );
            }
        }

        // Everything else outside the `Schema` object.
        let unknown: Vec<String> = map
            .keys()
            .filter(|k| !GEMINI_KEYWORDS.contains(&k.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            let value = map.shift_remove(&key).unwrap_or(Value::Null);
            self.rewrite(
                "gemini-keywords",
                &pointer(path, &key),
                format!("dropped `{key}: {}`", short_json(&value)),
            );
        }

        // Children.
        if let Some(Value::Object(properties)) = map.get("properties").cloned() {
            let base = pointer(path, "properties");
            let mut out = Map::new();
            for (name, property) in &properties {
                out.insert(
                    name.clone(),
                    self.node(property, &pointer(&base, name), depth + 1)?,
                );
            }
            map.insert("properties".into(), Value::Object(out));
        }
        match map.get("items").cloned() {
            Some(Value::Array(_)) => {
                self.error(
                    "gemini-keywords",
                    &pointer(path, "items"),
                    "tuple `items` (a list of schemas) cannot be expressed".to_string(),
                );
                return None;
            }
            Some(items) => {
                let out = self.node(&items, &pointer(path, "items"), depth + 1)?;
                map.insert("items".into(), out);
            }
            None => {}
        }
        self.shape_rules(&mut map, path)?;
        Some(Value::Object(map))
    }

    /// The shapes Gemini answers 400 for that the rewrites above leave: an array without
    /// `items` and a schema of type `null` alone are refused; names in `required` that
    /// `properties` does not declare are dropped (the tool's own validation still requires them).
    fn shape_rules(&mut self, map: &mut Map<String, Value>, path: &str) -> Option<()> {
        match map.get("type").and_then(Value::as_str) {
            Some("array") if !map.contains_key("items") => {
                self.error(
                    "gemini-array",
                    path,
                    "an array without `items`; Gemini requires the item schema".to_string(),
                );
                return None;
            }
            Some("null") => {
                self.error(
                    "gemini-nullable",
                    path,
                    "a schema of type `null` alone has no Gemini equivalent".to_string(),
                );
                return None;
            }
            _ => {}
        }
        if let Some(Value::Array(required)) = map.get("required") {
            let declared = map.get("properties").and_then(Value::as_object);
            let (kept, undeclared): (Vec<Value>, Vec<Value>) =
                required.iter().cloned().partition(|r| {
                    r.as_str()
                        .is_some_and(|n| declared.is_some_and(|p| p.contains_key(n)))
                });
            if !undeclared.is_empty() {
                self.rewrite(
                    "gemini-object",
                    &pointer(path, "required"),
                    format!(
                        "dropped {} from `required`: not declared in `properties`",
                        short_json(&Value::Array(undeclared))
                    ),
                );
                if kept.is_empty() {
                    map.shift_remove("required");
                } else {
                    map.insert("required".into(), Value::Array(kept));
                }
            }
        }
        Some(())
    }

    /// Moves the keywords beside a multi-branch `anyOf` (other than [`GEMINI_BESIDE_ANY_OF`])
    /// into its `branches`: a keyword of one type (`items`: arrays, `properties`: objects, ...)
    /// into the branches that are of that type or of none (JSON Schema applies it to values of
    /// that type only, so the union accepts the same values), any other into every branch.
    /// `None` (an error recorded) when a branch holds the keyword with another value.
    fn distribute(
        &mut self,
        map: &mut Map<String, Value>,
        mut branches: Vec<Value>,
        path: &str,
    ) -> Option<Vec<Value>> {
        let keys: Vec<String> = map
            .keys()
            .filter(|k| GEMINI_KEYWORDS.contains(&k.as_str()))
            .filter(|k| *k != "anyOf" && !GEMINI_BESIDE_ANY_OF.contains(&k.as_str()))
            .cloned()
            .collect();
        let base = pointer(path, "anyOf");
        for key in keys {
            let value = map.shift_remove(&key).unwrap_or(Value::Null);
            let types = keyword_types(&key);
            let mut into = 0;
            for (k, branch) in branches.iter_mut().enumerate() {
                let Value::Object(b) = branch else {
                    continue;
                };
                let own = schema_types(b);
                let applies =
                    types.is_empty() || own.is_empty() || own.iter().any(|t| types.contains(t));
                if !applies {
                    continue;
                }
                match b.get(&key) {
                    None => {
                        b.insert(key.clone(), value.clone());
                    }
                    Some(mine) if *mine == value => {}
                    Some(_) => {
                        self.error(
                            "gemini-any-of",
                            &pointer(&pointer(&base, &k.to_string()), &key),
                            format!("`{key}` beside `anyOf` differs from branch {k}'s; Gemini cannot require both"),
                        );
                        return None;
                    }
                }
                into += 1;
            }
            let message = if into == 0 {
                format!("dropped `{key}` beside `anyOf`: no branch is of the type it constrains")
            } else {
                format!("moved `{key}` beside `anyOf` into {into} of its branches")
            };
            self.rewrite("gemini-any-of", &pointer(path, &key), message);
        }
        Some(branches)
    }

    /// `const`: a string becomes `"type": "string", "enum": [s]`, a number `"type"` with
    /// `minimum` = `maximum`; any other constant (a boolean, `null`, an object, an array) cannot
    /// be expressed. `None` when an error was recorded.
    fn constant(&mut self, map: &mut Map<String, Value>, path: &str) -> Option<()> {
        let Some(constant) = map.shift_remove("const") else {
            return Some(());
        };
        let at = pointer(path, "const");
        if let Some(Value::Array(values)) = map.shift_remove("enum") {
            if !values.contains(&constant) {
                self.error(
                    "gemini-enum",
                    &at,
                    format!(
                        "`const: {}` is not among the `enum` beside it: no value fits",
                        short_json(&constant)
                    ),
                );
                return None;
            }
        }
        self.write_constant(map, constant, &at)
    }

    /// Writes the one value `constant` a node allows (its `const`, or an `enum` of one value,
    /// found at `at`) as `"type": "string", "enum": [s]` or a `type` with `minimum` =
    /// `maximum`; `None` (an error recorded) for any other constant.
    fn write_constant(
        &mut self,
        map: &mut Map<String, Value>,
        constant: Value,
        at: &str,
    ) -> Option<()> {
        let at = at.to_string();
        let shown = short_json(&constant);
        let ty = map.get("type").and_then(Value::as_str).map(str::to_string);
        match &constant {
            Value::String(_) if ty.as_deref().is_none_or(|t| t == "string") => {
                map.insert("type".into(), "string".into());
                map.insert("enum".into(), json!([constant]));
                self.rewrite(
                    "gemini-enum",
                    &at,
                    format!(
                        "`const: {shown}` written as `\"type\": \"string\", \"enum\": [{shown}]`"
                    ),
                );
                Some(())
            }
            Value::Number(n)
                if ty
                    .as_deref()
                    .is_none_or(|t| t == "integer" || t == "number") =>
            {
                let integral =
                    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
                let ty = match ty.as_deref() {
                    Some("integer") if !integral => {
                        self.error(
                            "gemini-enum",
                            &at,
                            format!("`const: {shown}` is not an integer, yet the `type` is `integer`: no value fits"),
                        );
                        return None;
                    }
                    Some(t) => t.to_string(),
                    None if integral => "integer".to_string(),
                    None => "number".to_string(),
                };
                map.insert("type".into(), ty.clone().into());
                map.insert("minimum".into(), constant.clone());
                map.insert("maximum".into(), constant.clone());
                self.rewrite(
                    "gemini-enum",
                    &at,
                    format!("`const: {shown}` written as `\"type\": \"{ty}\", \"minimum\": {shown}, \"maximum\": {shown}`"),
                );
                Some(())
            }
            _ => {
                let ty = ty.map(|t| format!(" on `type: {t}`")).unwrap_or_default();
                self.error(
                    "gemini-enum",
                    &at,
                    format!("`const: {shown}`{ty} cannot be expressed: Gemini's `Schema` has no `const`, and its `enum` lists strings"),
                );
                None
            }
        }
    }

    /// `enum`: `null` among the values becomes `nullable: true`; strings get `"type": "string"`
    /// (Gemini takes `enum` on strings only); one non-string value is a `const`; consecutive
    /// integers become `"type": "integer"` with `minimum`/`maximum`; `[true, false]` is
    /// `"type": "boolean"`. Any other `enum` cannot be expressed. `None` when an error was
    /// recorded.
    fn enumeration(&mut self, map: &mut Map<String, Value>, path: &str) -> Option<()> {
        let Some(Value::Array(mut values)) = map.get("enum").cloned() else {
            return Some(());
        };
        let at = pointer(path, "enum");
        let shown = short_json(&Value::Array(values.clone()));
        if values.iter().any(Value::is_null) {
            values.retain(|v| !v.is_null());
            map.insert("nullable".into(), Value::Bool(true));
            map.insert("enum".into(), Value::Array(values.clone()));
            self.rewrite(
                "gemini-nullable",
                &at,
                "`null` in `enum` written as `nullable: true`".to_string(),
            );
        }
        let ty = map.get("type").and_then(Value::as_str).map(str::to_string);
        let cannot = |this: &mut Self, why: &str| {
            this.error(
                "gemini-enum",
                &at,
                format!("`enum: {shown}` cannot be expressed: {why}"),
            );
            None
        };
        if values.iter().all(Value::is_string) && !values.is_empty() {
            return match ty.as_deref() {
                Some("string") => Some(()),
                None => {
                    map.insert("type".into(), "string".into());
                    self.rewrite(
                        "gemini-enum",
                        &at,
                        "added `\"type\": \"string\"` to an `enum` of strings: Gemini takes `enum` on strings only".to_string(),
                    );
                    Some(())
                }
                Some(other) => cannot(
                    self,
                    &format!("strings on `type: {other}`, so no value fits"),
                ),
            };
        }
        if let [one] = values.as_slice() {
            map.shift_remove("enum");
            return self.write_constant(map, one.clone(), &at);
        }
        let integers: Option<Vec<i64>> = values.iter().map(Value::as_i64).collect();
        if let Some(mut integers) =
            integers.filter(|_| ty.as_deref().is_none_or(|t| t == "integer"))
        {
            integers.sort_unstable();
            integers.dedup();
            let (Some(&low), Some(&high)) = (integers.first(), integers.last()) else {
                return cannot(self, "it lists no value");
            };
            if i128::from(high) - i128::from(low) + 1 != integers.len() as i128 {
                return cannot(self, "integers that are not consecutive: Gemini's `enum` lists strings, and `minimum`/`maximum` cover a range");
            }
            map.shift_remove("enum");
            map.insert("type".into(), "integer".into());
            map.insert("minimum".into(), low.into());
            map.insert("maximum".into(), high.into());
            self.rewrite(
                "gemini-enum",
                &at,
                format!("`enum: {shown}` written as `\"type\": \"integer\", \"minimum\": {low}, \"maximum\": {high}`"),
            );
            return Some(());
        }
        let booleans = values.iter().all(Value::is_boolean)
            && values.contains(&Value::Bool(true))
            && values.contains(&Value::Bool(false));
        if booleans && ty.as_deref().is_none_or(|t| t == "boolean") {
            map.shift_remove("enum");
            map.insert("type".into(), "boolean".into());
            self.rewrite(
                "gemini-enum",
                &at,
                format!("`enum: {shown}` written as `\"type\": \"boolean\"`"),
            );
            return Some(());
        }
        if values.is_empty() {
            return cannot(self, "it allows `null` only");
        }
        cannot(self, "Gemini's `enum` lists strings only")
    }

    /// `properties` and the other object keywords ([`GEMINI_OBJECT_KEYWORDS`]) only on
    /// `type: object`, `items` and the other array keywords ([`GEMINI_ARRAY_KEYWORDS`]) only on
    /// `type: array`: without a `type` (and no `anyOf`), the node gets that type (the keywords
    /// constrain nothing else, and the model is then told what to send); on another type they
    /// constrain nothing and are dropped.
    fn typed_keywords(&mut self, map: &mut Map<String, Value>, path: &str) {
        for (keywords, wanted, rule) in [
            (GEMINI_OBJECT_KEYWORDS, "object", "gemini-object"),
            (GEMINI_ARRAY_KEYWORDS, "array", "gemini-array"),
        ] {
            let present: Vec<&str> = keywords
                .iter()
                .copied()
                .filter(|k| map.contains_key(*k))
                .collect();
            if present.is_empty() {
                continue;
            }
            let listed = crate::diagnostics::and_list(present.iter().map(|k| format!("`{k}`")));
            match map.get("type").and_then(Value::as_str) {
                Some(t) if t == wanted => {}
                None if map.contains_key("anyOf") => {}
                None => {
                    map.insert("type".into(), wanted.into());
                    self.rewrite(
                        rule,
                        path,
                        format!("{listed} without a `type`: typed `{wanted}`, the only type they constrain"),
                    );
                }
                Some(other) => {
                    let other = other.to_string();
                    for k in &present {
                        map.shift_remove(*k);
                    }
                    self.rewrite(
                        rule,
                        &pointer(path, present[0]),
                        format!("dropped {listed} on `type: {other}`: they constrain `{wanted}` values only"),
                    );
                }
            }
        }
    }
}

/// The JSON Schema types a keyword applies to (empty: every type).
fn keyword_types(key: &str) -> &'static [&'static str] {
    if GEMINI_OBJECT_KEYWORDS.contains(&key) {
        &["object"]
    } else if GEMINI_ARRAY_KEYWORDS.contains(&key) {
        &["array"]
    } else {
        match key {
            "minLength" | "maxLength" | "pattern" => &["string"],
            "minimum" | "maximum" => &["integer", "number"],
            _ => &[],
        }
    }
}

/// The types a schema node names in `type` (a string or a list; empty when it has none).
fn schema_types(map: &Map<String, Value>) -> Vec<&str> {
    match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The `format`s Gemini documents for a `type`: `enum`, `date-time` (string), `int32`,
/// `int64` (integer), `float`, `double` (number); none for other types.
pub fn gemini_formats(ty: &str) -> &'static [&'static str] {
    match ty {
        "string" => &["enum", "date-time"],
        "integer" => &["int32", "int64"],
        "number" => &["float", "double"],
        _ => &[],
    }
}

// ---- Anthropic ----

/// Checks one Anthropic Messages `tools` array: when any tool has `defer_loading: true`, the
/// request must hold a search tool that is not deferred (a server tool search tool, whose `type`
/// starts with `tool_search_tool_`, or the tool named `search_tool`, the client-side search
/// answering with `tool_reference` blocks) and at least one tool that is not deferred
/// (`anthropic-deferred`); a server tool search tool with nothing deferred is reported too, it
/// would search nothing. Every tool's `name` is unique (`anthropic-unique-names`).
pub fn check_anthropic_request(tools: &Value, search_tool: &str) -> Vec<Finding> {
    let Some(tools) = tools.as_array() else {
        return Vec::new();
    };
    let deferred = |t: &Value| t.get("defer_loading") == Some(&Value::Bool(true));
    let deferred_names: Vec<&str> = tools
        .iter()
        .filter(|t| deferred(t))
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let finding = |rule: &'static str, message: String| Finding {
        target: Target::Anthropic,
        tool: String::new(),
        kind: FindingKind::Error,
        rule,
        path: String::new(),
        message,
    };
    let hosted = |t: &Value| {
        t.get("type")
            .and_then(Value::as_str)
            .is_some_and(|ty| ty.starts_with("tool_search_tool_"))
    };
    let is_search =
        |t: &Value| hosted(t) || t.get("name").and_then(Value::as_str) == Some(search_tool);
    let mut findings: Vec<Finding> = duplicate_names(tools.iter())
        .into_iter()
        .map(|name| {
            finding(
                "anthropic-unique-names",
                format!("two tools are named `{name}`; names must be unique"),
            )
        })
        .collect();
    if deferred_names.is_empty() {
        if let Some(t) = tools.iter().find(|t| hosted(t)) {
            findings.push(finding(
                "anthropic-deferred",
                format!(
                    "the search tool `{}` is sent but no tool is deferred; leave it out",
                    t.get("name").and_then(Value::as_str).unwrap_or_default()
                ),
            ));
        }
        return findings;
    }
    if !tools.iter().any(|t| !deferred(t)) {
        findings.push(finding(
            "anthropic-deferred",
            format!(
                "all {} tools are deferred; at least one must be loaded",
                tools.len()
            ),
        ));
    }
    if !tools.iter().any(|t| is_search(t) && !deferred(t)) {
        let search_deferred = tools.iter().any(|t| is_search(t) && deferred(t));
        findings.push(finding(
            "anthropic-deferred",
            if search_deferred {
                format!("the search tool `{search_tool}` is itself deferred; it must be loaded")
            } else {
                format!(
                    "{} deferred tools (`{}`{}) but no search tool (`{search_tool}`) to load them",
                    deferred_names.len(),
                    deferred_names[0],
                    if deferred_names.len() > 1 {
                        ", ..."
                    } else {
                        ""
                    }
                )
            },
        ));
    }
    findings
}

/// The `name`s that occur more than once among `tools`, each once, in order of first repeat.
fn duplicate_names<'v>(tools: impl Iterator<Item = &'v Value>) -> Vec<&'v str> {
    let mut seen = std::collections::BTreeSet::new();
    let mut repeated = Vec::new();
    for name in tools.filter_map(|t| t.get("name").and_then(Value::as_str)) {
        if !seen.insert(name) && !repeated.contains(&name) {
            repeated.push(name);
        }
    }
    repeated
}

const OPENAI_TOOL_SEARCH: Source = Source {
    title: "OpenAI tool search, deferred functions and namespaces",
    url: "https://developers.openai.com/api/docs/guides/tools-tool-search",
};

/// Checks one OpenAI Responses API `tools` array (OpenAI tool search): deferred functions
/// (`defer_loading: true`, top level or in a namespace) need a search tool that is not deferred
/// — the hosted `{"type":"tool_search"}` or the function named `search_tool` — and a hosted
/// `tool_search` needs something deferred; at least one function is not deferred
/// (`openai-tool-search`). A namespace holds at least one function, all of them deferred
/// (`openai-namespace`: toolcat groups deferred tools only, so a namespace never mixes what the
/// search loads with what is loaded up front). Top-level names and namespace names are unique,
/// and so are the names of the functions across namespaces and the top level
/// (`openai-unique-names`).
pub fn check_openai_responses_request(tools: &Value, search_tool: &str) -> Vec<Finding> {
    let Some(tools) = tools.as_array() else {
        return Vec::new();
    };
    let finding = |rule: &'static str, tool: &str, message: String| Finding {
        target: Target::OpenAi,
        tool: tool.to_string(),
        kind: FindingKind::Error,
        rule,
        path: String::new(),
        message,
    };
    fn kind(t: &Value) -> &str {
        t.get("type").and_then(Value::as_str).unwrap_or_default()
    }
    fn name(t: &Value) -> &str {
        t.get("name").and_then(Value::as_str).unwrap_or_default()
    }
    let deferred = |t: &Value| t.get("defer_loading") == Some(&Value::Bool(true));
    let mut findings = Vec::new();
    let members: Vec<&Value> = tools
        .iter()
        .filter(|t| kind(t) == "namespace")
        .flat_map(|n| {
            n.get("tools")
                .and_then(Value::as_array)
                .map(|v| v.iter())
                .into_iter()
                .flatten()
        })
        .collect();
    for n in tools.iter().filter(|t| kind(t) == "namespace") {
        let inner = n.get("tools").and_then(Value::as_array);
        match inner {
            None => findings.push(finding(
                "openai-namespace",
                name(n),
                format!("namespace `{}` holds no tools", name(n)),
            )),
            Some(inner) if inner.is_empty() => findings.push(finding(
                "openai-namespace",
                name(n),
                format!("namespace `{}` holds no tools", name(n)),
            )),
            Some(inner) => {
                if let Some(t) = inner.iter().find(|t| !deferred(t)) {
                    findings.push(finding(
                        "openai-namespace",
                        name(n),
                        format!(
                            "namespace `{}` mixes `{}`, which is not deferred, with deferred functions; keep loaded tools at the top level",
                            name(n),
                            name(t)
                        ),
                    ));
                }
            }
        }
    }
    let mut repeated_names = duplicate_names(tools.iter());
    let functions_and_members = tools
        .iter()
        .filter(|t| kind(t) != "namespace")
        .chain(members.iter().copied());
    for name in duplicate_names(functions_and_members) {
        if !repeated_names.contains(&name) {
            repeated_names.push(name);
        }
    }
    for repeated in repeated_names {
        findings.push(finding(
            "openai-unique-names",
            repeated,
            format!("two tools are named `{repeated}`; names must be unique"),
        ));
    }
    let functions = || {
        tools
            .iter()
            .filter(|t| kind(t) == "function")
            .chain(members.iter().copied())
    };
    let deferred_names: Vec<&str> = functions().filter(|t| deferred(t)).map(name).collect();
    let hosted = tools
        .iter()
        .any(|t| kind(t) == "tool_search" && !deferred(t));
    let own = functions().any(|t| name(t) == search_tool && !deferred(t));
    if deferred_names.is_empty() {
        if hosted {
            findings.push(finding(
                "openai-tool-search",
                "",
                "the hosted `tool_search` is sent but no tool is deferred; leave it out"
                    .to_string(),
            ));
        }
        return findings;
    }
    if !functions().any(|t| !deferred(t)) {
        findings.push(finding(
            "openai-tool-search",
            "",
            format!(
                "all {} functions are deferred; at least one must be loaded",
                deferred_names.len()
            ),
        ));
    }
    if !hosted && !own {
        findings.push(finding(
            "openai-tool-search",
            "",
            format!(
                "{} deferred tools (`{}`{}) but no search tool (`tool_search` or `{search_tool}`) to load them",
                deferred_names.len(),
                deferred_names[0],
                if deferred_names.len() > 1 { ", ..." } else { "" }
            ),
        ));
    }
    findings
}

// ---- the report ----

/// The outcome of one tool for one target.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub target: Target,
    /// Exported name.
    pub tool: String,
    /// OpenAI only: strict or not.
    pub strict: Option<bool>,
    /// `false` when the tool's schema was not known (a local tool without its handler).
    pub schema_checked: bool,
    pub findings: Vec<Finding>,
}

/// What exporting a set of tools to a set of targets rewrote, fell back on or could not do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub targets: Vec<Target>,
    /// One per (target, tool), targets in order, tools in catalog order.
    pub tools: Vec<ToolOutcome>,
    /// Findings about requests rather than one tool (Anthropic deferred loading), with what
    /// request they are about (`preset code`, `profile minimal`).
    pub requests: Vec<(String, Finding)>,
}

/// One tool handed to [`Report::check`]: its exported name and input schema (`None` when the
/// schema is not known here).
#[derive(Debug, Clone, Copy)]
pub struct ToolInput<'a> {
    pub exported_name: &'a str,
    pub schema: Option<&'a Value>,
}

impl Report {
    /// Checks every tool's name and schema against every target.
    pub fn check(targets: &[Target], tools: &[ToolInput<'_>]) -> Report {
        let mut report = Report {
            targets: targets.to_vec(),
            ..Report::default()
        };
        for &target in targets {
            for tool in tools {
                let mut findings: Vec<Finding> = name_faults(target, tool.exported_name)
                    .into_iter()
                    .map(|fault| name_finding(target, tool.exported_name, &fault))
                    .collect();
                let (strict, checked) = match tool.schema {
                    Some(schema) => {
                        let exported = export_schema(target, tool.exported_name, schema);
                        findings.extend(exported.findings);
                        (exported.strict, true)
                    }
                    None => (None, false),
                };
                report.tools.push(ToolOutcome {
                    target,
                    tool: tool.exported_name.to_string(),
                    strict,
                    schema_checked: checked,
                    findings,
                });
            }
        }
        report
    }

    /// Every finding, tools first, then requests.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.tools
            .iter()
            .flat_map(|t| t.findings.iter())
            .chain(self.requests.iter().map(|(_, f)| f))
    }

    /// Number of [`FindingKind::Error`] findings: tools (or requests) that cannot be exported.
    pub fn errors(&self) -> usize {
        self.findings()
            .filter(|f| f.kind == FindingKind::Error)
            .count()
    }

    /// The report as text: per target a summary line, then each tool with findings and its
    /// findings (`rewrite`, `fallback` or `error`, the JSON Pointer, the message, the rule id),
    /// then the rules used with their sources.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for &target in &self.targets {
            let tools: Vec<&ToolOutcome> =
                self.tools.iter().filter(|t| t.target == target).collect();
            let requests: Vec<&(String, Finding)> = self
                .requests
                .iter()
                .filter(|(_, f)| f.target == target)
                .collect();
            let failed = tools
                .iter()
                .filter(|t| t.findings.iter().any(|f| f.kind == FindingKind::Error))
                .count();
            let rewritten = tools
                .iter()
                .filter(|t| t.findings.iter().any(|f| f.kind == FindingKind::Rewrite))
                .count();
            let unchecked = tools.iter().filter(|t| !t.schema_checked).count();
            let mut summary = format!("target `{target}`: {} tools", tools.len());
            if target == Target::OpenAi {
                let strict = tools.iter().filter(|t| t.strict == Some(true)).count();
                let loose = tools.iter().filter(|t| t.strict == Some(false)).count();
                let _ = write!(summary, ", {strict} strict, {loose} `strict: false`");
            }
            let _ = write!(
                summary,
                ", {rewritten} rewritten, {failed} cannot be exported"
            );
            if unchecked > 0 {
                let _ = write!(
                    summary,
                    ", {unchecked} schemas unchecked (local tools without their handler)"
                );
            }
            if !requests.is_empty() {
                let _ = write!(summary, ", {} request errors", requests.len());
            }
            let _ = writeln!(out, "{summary}");
            let mut used: Vec<&'static str> = Vec::new();
            for tool in tools.iter().filter(|t| !t.findings.is_empty()) {
                let state = if tool.findings.iter().any(|f| f.kind == FindingKind::Error) {
                    "cannot be exported".to_string()
                } else {
                    match tool.strict {
                        Some(true) => "strict".to_string(),
                        Some(false) => "`strict: false` (fallback)".to_string(),
                        None => "exported".to_string(),
                    }
                };
                let _ = writeln!(out, "  `{}`: {state}", tool.tool);
                for f in &tool.findings {
                    let kind = match f.kind {
                        FindingKind::Rewrite => "rewrite",
                        FindingKind::Fallback => "fallback",
                        FindingKind::Error => "error",
                    };
                    let at = if f.path.is_empty() {
                        "/"
                    } else {
                        f.path.as_str()
                    };
                    let _ = writeln!(out, "    {kind} at `{at}`: {} [{}]", f.message, f.rule);
                    if !used.contains(&f.rule) {
                        used.push(f.rule);
                    }
                }
            }
            for (what, f) in &requests {
                let _ = writeln!(out, "  {what}: error: {} [{}]", f.message, f.rule);
                if !used.contains(&f.rule) {
                    used.push(f.rule);
                }
            }
            if !used.is_empty() {
                used.sort_unstable();
                let _ = writeln!(out, "  rules:");
                for id in used {
                    let r = target_rule(id);
                    let _ = writeln!(
                        out,
                        "    {id}: {} ({}, {})",
                        r.summary, r.source.title, r.source.url
                    );
                }
            }
        }
        out
    }
}

/// A name fault as a [`Finding`] of `target` (always an error).
pub fn name_finding(target: Target, name: &str, fault: &NameFault) -> Finding {
    let rule = name_rule(target);
    let message = match fault {
        NameFault::Empty => "the name is empty".to_string(),
        NameFault::TooLong { len, max } => {
            format!("`{name}` is {len} characters, more than {max}")
        }
        NameFault::Char(c) => format!("`{name}` has `{c}`, outside `{}`", rule.charset()),
        NameFault::First(c) => format!("`{name}` starts with `{c}`, not a letter or `_`"),
    };
    Finding {
        target,
        tool: name.to_string(),
        kind: FindingKind::Error,
        rule: rule.rule,
        path: String::new(),
        message,
    }
}

#[cfg(test)]
mod tests;
