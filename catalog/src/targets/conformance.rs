//! Conformance of *exported* input schemas: every way a schema, as it is sent, breaks the rules
//! of the provider it is sent to. Where [`super::openai`] and [`super::gemini`] rewrite an input
//! schema, this module only reads their output and lists what is still wrong, so a rewrite that
//! lets a shape through is caught.
//!
//! - [`Dialect::OpenAi`]: what every OpenAI function's `parameters` needs, strict or not: a JSON
//!   Schema of `type: "object"` (rule `openai-parameters`).
//! - [`Dialect::OpenAiStrict`]: OpenAI Structured Outputs, supported schemas
//!   (<https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>): the root is
//!   an object and not an `anyOf` (`openai-strict-root`); every object has
//!   `additionalProperties: false` and `properties` (`openai-strict-objects`) and lists every
//!   property in `required` (`openai-strict-required`); only [`super::OPENAI_KEYWORDS`]
//!   (`openai-strict-keywords`); `format` only on strings and among
//!   [`super::OPENAI_STRING_FORMATS`] (`openai-strict-formats`); at most
//!   [`super::OPENAI_MAX_DEPTH`] levels of objects and [`super::OPENAI_MAX_PROPERTIES`]
//!   properties (`openai-strict-limits`); a `$ref` stands alone and points into the schema
//!   (`openai-strict-ref`).
//! - [`Dialect::Gemini`]: the Gemini `Schema` object (<https://ai.google.dev/api/caching#Schema>):
//!   only [`super::GEMINI_KEYWORDS`] (`gemini-keywords`; `$ref`, `$defs` and `definitions` are
//!   `gemini-ref`, `const` is `gemini-enum`, `oneOf` and `allOf` are `gemini-union`); a `type`
//!   is one name, not a list (`gemini-union`) and not `null` (`gemini-nullable`); `enum` only on
//!   `type: string`, listing strings (`gemini-enum`); `format` among [`super::gemini_formats`]
//!   of the type (`gemini-formats`); [`super::GEMINI_OBJECT_KEYWORDS`] only on `type: object`
//!   (`gemini-object`), [`super::GEMINI_ARRAY_KEYWORDS`] only on `type: array`
//!   (`gemini-array`), an array has `items` (`gemini-array`) and `required` names only declared
//!   properties (`gemini-object`); beside `anyOf` only [`super::GEMINI_BESIDE_ANY_OF`]
//!   (`gemini-any-of`).
//!
//! Each [`Violation`] names its rule in [`super::RULES`] (with the provider document) and the
//! JSON Pointer of the location.

use serde_json::{Map, Value};

use super::{
    gemini_formats, is_object_schema, is_string, pointer, target_rule, TargetRule,
    GEMINI_ARRAY_KEYWORDS, GEMINI_BESIDE_ANY_OF, GEMINI_KEYWORDS, GEMINI_OBJECT_KEYWORDS,
    OPENAI_KEYWORDS, OPENAI_MAX_DEPTH, OPENAI_MAX_PROPERTIES, OPENAI_STRING_FORMATS,
};

/// The rule set an exported schema is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// An OpenAI function's `parameters` with `"strict": false`.
    OpenAi,
    /// An OpenAI function's `parameters` with `"strict": true`.
    OpenAiStrict,
    /// A Gemini function declaration's `parameters`.
    Gemini,
}

/// One way an exported schema breaks its dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The id of the rule in [`super::RULES`].
    pub rule: &'static str,
    /// JSON Pointer into the exported schema (`""` is the root).
    pub path: String,
    /// What is wrong, lower-case, names in backticks.
    pub message: String,
}

impl Violation {
    /// The rule the violation breaks.
    pub fn rule(&self) -> &'static TargetRule {
        target_rule(self.rule)
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "at `{at}`: {} [{}]", self.message, self.rule)
    }
}

/// Every violation of `dialect` in the exported schema `schema`, in schema order (empty when it
/// conforms).
pub fn violations(dialect: Dialect, schema: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
    match dialect {
        Dialect::OpenAi => {
            if !is_object {
                push(
                    &mut out,
                    "openai-parameters",
                    "",
                    "the root is not `type: \"object\"`",
                );
            }
        }
        Dialect::OpenAiStrict => {
            if !is_object || schema.get("anyOf").is_some() {
                push(
                    &mut out,
                    "openai-strict-root",
                    "",
                    "the root is not an object schema without `anyOf`",
                );
            }
            let mut walk = Strict {
                root: schema,
                out: &mut out,
                properties: 0,
            };
            walk.node(schema, "", 0);
            let n = walk.properties;
            if n > OPENAI_MAX_PROPERTIES {
                push(
                    &mut out,
                    "openai-strict-limits",
                    "",
                    &format!("{n} properties in all, more than {OPENAI_MAX_PROPERTIES}"),
                );
            }
        }
        Dialect::Gemini => gemini(schema, "", &mut out),
    }
    out
}

fn push(out: &mut Vec<Violation>, rule: &'static str, path: &str, message: &str) {
    out.push(Violation {
        rule,
        path: path.to_string(),
        message: message.to_string(),
    });
}

struct Strict<'a, 'o> {
    root: &'a Value,
    out: &'o mut Vec<Violation>,
    properties: usize,
}

impl Strict<'_, '_> {
    /// `depth`: the objects around the node.
    fn node(&mut self, value: &Value, path: &str, depth: usize) {
        let Value::Object(map) = value else {
            push(
                self.out,
                "openai-strict-keywords",
                path,
                &format!("the boolean schema `{value}` is not supported"),
            );
            return;
        };
        for key in map.keys() {
            if !OPENAI_KEYWORDS.contains(&key.as_str()) {
                push(
                    self.out,
                    "openai-strict-keywords",
                    &pointer(path, key),
                    &format!("`{key}` is not supported in strict mode"),
                );
            }
        }
        if let Some(reference) = map.get("$ref") {
            let at = pointer(path, "$ref");
            if map.len() > 1 {
                let siblings: Vec<&str> = map
                    .keys()
                    .map(String::as_str)
                    .filter(|k| *k != "$ref")
                    .collect();
                push(
                    self.out,
                    "openai-strict-ref",
                    &at,
                    &format!("`$ref` has sibling keywords {siblings:?}"),
                );
            }
            let resolves = reference
                .as_str()
                .and_then(|r| r.strip_prefix('#'))
                .is_some_and(|p| self.root.pointer(p).is_some_and(Value::is_object));
            if !resolves {
                push(
                    self.out,
                    "openai-strict-ref",
                    &at,
                    &format!("`$ref` {reference} does not point at a schema in this one"),
                );
            }
        }
        if let Some(format) = map.get("format") {
            let on_string = is_string(map);
            let known = format
                .as_str()
                .is_some_and(|f| OPENAI_STRING_FORMATS.contains(&f));
            if !on_string || !known {
                push(
                    self.out,
                    "openai-strict-formats",
                    &pointer(path, "format"),
                    &format!("`format: {format}` is not a string format strict mode accepts here"),
                );
            }
        }
        let mut depth = depth;
        let object = is_object_schema(map);
        if object {
            depth += 1;
            self.object(map, path, depth);
        }
        match map.get("items") {
            Some(Value::Array(_)) => push(
                self.out,
                "openai-strict-keywords",
                &pointer(path, "items"),
                "tuple `items` (a list of schemas) is not supported",
            ),
            Some(items) => self.node(items, &pointer(path, "items"), depth),
            None => {}
        }
        if let Some(Value::Array(branches)) = map.get("anyOf") {
            let base = pointer(path, "anyOf");
            for (k, branch) in branches.iter().enumerate() {
                self.node(branch, &pointer(&base, &k.to_string()), depth);
            }
        }
        for defs in ["$defs", "definitions"] {
            if let Some(Value::Object(entries)) = map.get(defs) {
                let base = pointer(path, defs);
                for (name, def) in entries {
                    self.node(def, &pointer(&base, name), depth);
                }
            }
        }
    }

    fn object(&mut self, map: &Map<String, Value>, path: &str, depth: usize) {
        if depth > OPENAI_MAX_DEPTH {
            push(
                self.out,
                "openai-strict-limits",
                path,
                &format!("objects nest {depth} levels deep here, more than {OPENAI_MAX_DEPTH}"),
            );
        }
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            push(
                self.out,
                "openai-strict-objects",
                path,
                "an object without `additionalProperties: false`",
            );
        }
        let Some(Value::Object(properties)) = map.get("properties") else {
            push(
                self.out,
                "openai-strict-objects",
                path,
                "an object without `properties`",
            );
            return;
        };
        self.properties += properties.len();
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for name in properties.keys() {
            if !required.contains(&name.as_str()) {
                push(
                    self.out,
                    "openai-strict-required",
                    &pointer(&pointer(path, "properties"), name),
                    &format!("property `{name}` is not in `required`"),
                );
            }
        }
        let base = pointer(path, "properties");
        for (name, property) in properties {
            self.node(property, &pointer(&base, name), depth);
        }
    }
}

/// The Gemini `Schema` types, as JSON Schema spells them (the API also takes them upper-case).
const GEMINI_TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object"];

fn gemini(value: &Value, path: &str, out: &mut Vec<Violation>) {
    let Value::Object(map) = value else {
        push(
            out,
            "gemini-keywords",
            path,
            &format!("the boolean schema `{value}` has no Gemini equivalent"),
        );
        return;
    };
    for key in map.keys() {
        if GEMINI_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        let rule = match key.as_str() {
            "$ref" | "$defs" | "definitions" => "gemini-ref",
            "const" => "gemini-enum",
            "oneOf" | "allOf" => "gemini-union",
            _ => "gemini-keywords",
        };
        push(
            out,
            rule,
            &pointer(path, key),
            &format!("`{key}` is not a field of the Gemini `Schema`"),
        );
    }
    let ty = match map.get("type") {
        None => None,
        Some(Value::String(t)) if t == "null" => {
            push(
                out,
                "gemini-nullable",
                &pointer(path, "type"),
                "`type: null`; Gemini writes `nullable: true`",
            );
            None
        }
        Some(Value::String(t)) if GEMINI_TYPES.contains(&t.to_ascii_lowercase().as_str()) => {
            Some(t.to_ascii_lowercase())
        }
        Some(other) => {
            push(
                out,
                "gemini-union",
                &pointer(path, "type"),
                &format!("`type: {other}` is not one Gemini type"),
            );
            None
        }
    };
    let ty = ty.as_deref();
    if let Some(values) = map.get("enum") {
        let strings = values
            .as_array()
            .is_some_and(|v| v.iter().all(Value::is_string));
        if ty != Some("string") || !strings {
            push(
                out,
                "gemini-enum",
                &pointer(path, "enum"),
                &format!(
                    "`enum` on `type: {}`; Gemini takes an `enum` of strings on `type: string` only",
                    ty.unwrap_or("(none)")
                ),
            );
        }
    }
    if let Some(format) = map.get("format") {
        let allowed = gemini_formats(ty.unwrap_or_default());
        if !format.as_str().is_some_and(|f| allowed.contains(&f)) {
            push(
                out,
                "gemini-formats",
                &pointer(path, "format"),
                &format!(
                    "`format: {format}` on `type: {}` is not among {allowed:?}",
                    ty.unwrap_or("(none)")
                ),
            );
        }
    }
    for (keywords, wanted, rule) in [
        (GEMINI_OBJECT_KEYWORDS, "object", "gemini-object"),
        (GEMINI_ARRAY_KEYWORDS, "array", "gemini-array"),
    ] {
        for key in keywords.iter().filter(|k| map.contains_key(**k)) {
            if ty != Some(wanted) {
                push(
                    out,
                    rule,
                    &pointer(path, key),
                    &format!(
                        "`{key}` on `type: {}`; Gemini takes it on `type: {wanted}` only",
                        ty.unwrap_or("(none)")
                    ),
                );
            }
        }
    }
    if map.contains_key("anyOf") {
        for key in map.keys() {
            let beside = key == "anyOf" || GEMINI_BESIDE_ANY_OF.contains(&key.as_str());
            if !beside && GEMINI_KEYWORDS.contains(&key.as_str()) {
                push(
                    out,
                    "gemini-any-of",
                    &pointer(path, key),
                    &format!("`{key}` beside `anyOf`"),
                );
            }
        }
    }
    if ty == Some("array") && !map.contains_key("items") {
        push(out, "gemini-array", path, "`type: array` without `items`");
    }
    if let Some(Value::Array(required)) = map.get("required") {
        let declared = map.get("properties").and_then(Value::as_object);
        for name in required {
            if !name
                .as_str()
                .is_some_and(|n| declared.is_some_and(|p| p.contains_key(n)))
            {
                push(
                    out,
                    "gemini-object",
                    &pointer(path, "required"),
                    &format!("`required` names {name}, which `properties` does not declare"),
                );
            }
        }
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let base = pointer(path, "properties");
        for (name, property) in properties {
            gemini(property, &pointer(&base, name), out);
        }
    }
    match map.get("items") {
        Some(Value::Array(_)) => push(
            out,
            "gemini-array",
            &pointer(path, "items"),
            "tuple `items` (a list of schemas)",
        ),
        Some(items) => gemini(items, &pointer(path, "items"), out),
        None => {}
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        let base = pointer(path, "anyOf");
        for (k, branch) in branches.iter().enumerate() {
            gemini(branch, &pointer(&base, &k.to_string()), out);
        }
    }
}
