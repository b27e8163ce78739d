//! Argument names: which top-level argument names a tool's input JSON Schema declares, and the
//! errors of a call that passes others ([`DeclaredArguments::errors`]).
//!
//! JSON Schema allows any property a schema does not forbid: a schema without
//! `additionalProperties` accepts `{"old_string": ...}` for `{path, search, replace}`, and most
//! MCP servers' schemas (and schemars' for a struct without `deny_unknown_fields`) leave it out.
//! The coordinator is deliberately stricter: an argument that is not a declared property is
//! refused before anything runs, unless the schema allows extra properties explicitly. Models
//! that call a tool before reading its definition guess argument names (`old_string` and
//! `new_string` for `search` and `replace`); a server that ignores an unknown optional argument
//! would otherwise run the call without what the model meant to say.
//!
//! Declared, at the top level of the arguments object:
//! - every key of `properties`, and every name a `patternProperties` pattern matches;
//! - the same of the subschemas the top level is made of: `allOf`, `anyOf`, `oneOf`, `if`,
//!   `then`, `else`, the values of `dependentSchemas`, and a local `$ref` (`#/...`) from any of
//!   them (at most [`MAX_DEPTH`] deep).
//!
//! Open (every name allowed): `additionalProperties` or `unevaluatedProperties` that is `true`
//! or a schema object, in any of those subschemas, and a boolean schema `true`.
//! `additionalProperties: false` and its friends are left to the JSON Schema validator, which
//! refuses the call anyway.
//!
//! Only the top level is checked: nested objects are often free-form maps (`metadata`,
//! `headers`) declared without properties, and the names a model guesses are those of the
//! tool's parameters.

use serde_json::{json, Value};
use toolcat_catalog::diagnostics::did_you_mean;

/// How deep [`DeclaredArguments::of`] follows subschemas and `$ref`s: 16.
pub const MAX_DEPTH: usize = 16;

/// The top-level argument names one input schema declares.
#[derive(Debug)]
pub struct DeclaredArguments {
    /// The schema allows names beyond those declared (see the module docs).
    open: bool,
    /// Keys of `properties`, in schema order, without repeats.
    names: Vec<String>,
    /// The `patternProperties` patterns, each as a validator of `{"pattern": P}` (the JSON
    /// Schema validator's own regular expressions); a pattern it cannot compile matches nothing.
    patterns: Vec<(String, Option<jsonschema::Validator>)>,
}

impl DeclaredArguments {
    /// The names `schema` declares at the top level (see the module docs).
    pub fn of(schema: &Value) -> DeclaredArguments {
        let mut declared = DeclaredArguments {
            open: false,
            names: Vec::new(),
            patterns: Vec::new(),
        };
        declared.collect(schema, schema, 0);
        declared
    }

    fn collect(&mut self, schema: &Value, root: &Value, depth: usize) {
        let object = match schema {
            Value::Bool(allows) => {
                self.open |= *allows;
                return;
            }
            Value::Object(object) => object,
            _ => return,
        };
        if depth > MAX_DEPTH {
            // A reference chain this long is not a parameter list; refuse nothing on its behalf.
            self.open = true;
            return;
        }
        for key in ["additionalProperties", "unevaluatedProperties"] {
            if matches!(object.get(key), Some(Value::Bool(true) | Value::Object(_))) {
                self.open = true;
            }
        }
        if let Some(Value::Object(properties)) = object.get("properties") {
            for name in properties.keys() {
                if !self.names.contains(name) {
                    self.names.push(name.clone());
                }
            }
        }
        if let Some(Value::Object(patterns)) = object.get("patternProperties") {
            for pattern in patterns.keys() {
                if !self.patterns.iter().any(|(p, _)| p == pattern) {
                    let validator = jsonschema::validator_for(&json!({ "pattern": pattern })).ok();
                    self.patterns.push((pattern.clone(), validator));
                }
            }
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = object.get(key) {
                for branch in branches {
                    self.collect(branch, root, depth + 1);
                }
            }
        }
        for key in ["if", "then", "else"] {
            if let Some(branch) = object.get(key) {
                self.collect(branch, root, depth + 1);
            }
        }
        if let Some(Value::Object(dependent)) = object.get("dependentSchemas") {
            for branch in dependent.values() {
                self.collect(branch, root, depth + 1);
            }
        }
        if let Some(Value::String(reference)) = object.get("$ref") {
            match reference.strip_prefix('#').map(|p| root.pointer(p)) {
                Some(Some(target)) => self.collect(target, root, depth + 1),
                // A reference this check cannot follow may declare anything.
                _ => self.open = true,
            }
        }
    }

    /// Whether the schema allows names beyond those it declares.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// The declared names (keys of `properties`), in schema order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether `name` is declared: a property, or matched by a `patternProperties` pattern.
    pub fn declares(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
            || self.patterns.iter().any(|(_, validator)| {
                validator
                    .as_ref()
                    .is_some_and(|v| v.is_valid(&Value::String(name.to_string())))
            })
    }

    /// One `{"instancePath": "", "message": ...}` error per top-level argument of `arguments`
    /// that the schema does not declare, in argument order; empty when the schema is open or
    /// `arguments` is not an object (the JSON Schema validator reports that). Each message names
    /// the argument, the closest declared name when one is close, and every declared name.
    pub fn errors(&self, arguments: &Value) -> Vec<Value> {
        let Value::Object(arguments) = arguments else {
            return Vec::new();
        };
        if self.open {
            return Vec::new();
        }
        let declared = if self.names.is_empty() && self.patterns.is_empty() {
            "the tool declares no arguments".to_string()
        } else {
            let mut all: Vec<String> = self.names.iter().map(|n| format!("`{n}`")).collect();
            all.extend(
                self.patterns
                    .iter()
                    .map(|(p, _)| format!("names matching `{p}`")),
            );
            format!("the declared arguments are {}", all.join(", "))
        };
        arguments
            .keys()
            .filter(|name| !self.declares(name))
            .map(|name| {
                let close = did_you_mean(name, self.names.iter().map(String::as_str))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                json!({
                    "instancePath": "",
                    "message": format!(
                        "unknown argument `{name}`{close}; {declared}; read the input schema before calling"
                    ),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown(schema: Value, arguments: Value) -> Vec<String> {
        DeclaredArguments::of(&schema)
            .errors(&arguments)
            .iter()
            .map(|e| e["message"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn a_guessed_name_is_named_with_the_declared_ones() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}, "search": {"type": "string"}, "replace": {"type": "string"}}});
        let found = unknown(
            schema.clone(),
            json!({"path": "a", "old_string": "x", "new_string": "y"}),
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("unknown argument `old_string`; the declared arguments are `path`, `search`, `replace`"),
            "{found:?}"
        );
        assert!(found[1].contains("`new_string`"), "{found:?}");
        let close = unknown(schema.clone(), json!({"serach": "x"}));
        assert!(close[0].contains("(did you mean `search`?)"), "{close:?}");
        assert!(unknown(schema, json!({"path": "a", "search": "x"})).is_empty());
    }

    #[test]
    fn only_an_explicit_allowance_opens_the_schema() {
        let props = json!({"a": {"type": "string"}});
        for open in [json!(true), json!({"type": "string"})] {
            let schema =
                json!({"type": "object", "properties": props, "additionalProperties": open});
            assert!(unknown(schema, json!({"b": "x"})).is_empty());
        }
        let schema = json!({"type": "object", "properties": props, "unevaluatedProperties": true});
        assert!(unknown(schema, json!({"b": "x"})).is_empty());
        // Absent, or `false` (which the validator refuses on its own), is not an allowance.
        for schema in [
            json!({"type": "object", "properties": props}),
            json!({"type": "object", "properties": props, "additionalProperties": false}),
            json!({"type": "object"}),
        ] {
            assert_eq!(unknown(schema, json!({"b": "x"})).len(), 1);
        }
        assert!(unknown(json!(true), json!({"b": "x"})).is_empty());
        let none = unknown(json!({"type": "object", "properties": {}}), json!({"b": 1}));
        assert!(
            none[0].contains("the tool declares no arguments"),
            "{none:?}"
        );
    }

    #[test]
    fn composed_and_referenced_schemas_declare_their_branches_names() {
        let schema = json!({
            "type": "object",
            "properties": {"mode": {"type": "string"}},
            "oneOf": [{"$ref": "#/$defs/byId"}, {"properties": {"name": {"type": "string"}}}],
            "allOf": [{"if": {"properties": {"mode": {"const": "x"}}}, "then": {"properties": {"extra": {}}}}],
            "patternProperties": {"^x-": {"type": "string"}},
            "$defs": {"byId": {"properties": {"id": {"type": "integer"}}}}
        });
        let declared = DeclaredArguments::of(&schema);
        assert_eq!(declared.names(), ["mode", "extra", "id", "name"]);
        assert!(declared.declares("x-trace"));
        assert!(!declared.declares("trace"));
        assert!(declared
            .errors(&json!({"mode": "a", "id": 1, "name": "n", "extra": 1, "x-y": "z"}))
            .is_empty());
        assert_eq!(declared.errors(&json!({"ids": [1]})).len(), 1);
        // A branch that allows extras opens the whole schema; an unresolvable reference too.
        let open = json!({"anyOf": [{"properties": {"a": {}}}, {"additionalProperties": {}}]});
        assert!(DeclaredArguments::of(&open).is_open());
        let remote = json!({"$ref": "https://example.invalid/schema.json"});
        assert!(DeclaredArguments::of(&remote).is_open());
    }

    #[test]
    fn nested_objects_are_not_checked_and_non_objects_are_left_to_the_validator() {
        let schema = json!({"type": "object", "properties": {"meta": {"type": "object", "properties": {"a": {}}}}});
        assert!(unknown(schema.clone(), json!({"meta": {"b": 1}})).is_empty());
        assert!(unknown(schema, json!([1, 2])).is_empty());
        // A reference cycle ends.
        let cycle = json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}});
        assert!(DeclaredArguments::of(&cycle).is_open());
    }
}
