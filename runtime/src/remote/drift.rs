//! Schema drift: whether a server's input schema of a tool still is the one its `tools.toml` row
//! declares, and what changed when it is not ([`compare`]); per server, which remote tools have
//! no row, which rows have no remote tool and which schemas changed ([`live_report`]).
//!
//! What counts as a change: anything a call's arguments are checked against. Annotation keywords
//! that never change which arguments are valid — `description`, `title`, `examples`,
//! `$comment` and `$schema` — are ignored at every depth, so a server rewording its
//! documentation does not stop calls. Key order never matters.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::catalog::{Catalog, ServerId, ToolSource};
use crate::remote::{Discovery, RemoteTool};

/// Keywords ignored by [`compare`]: they document, they do not constrain.
pub const ANNOTATION_KEYWORDS: &[&str] =
    &["description", "title", "examples", "$comment", "$schema"];

/// One difference between a declared input schema and the remote one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum SchemaChange {
    /// A property the declared schema does not have.
    PropertyAdded { property: String, required: bool },
    /// A declared property the remote schema no longer has.
    PropertyRemoved { property: String },
    /// The `type` of a property (or, with an empty name, of the whole schema) changed.
    TypeChanged {
        property: String,
        from: String,
        to: String,
    },
    /// A property became required, or stopped being required.
    RequiredChanged { property: String, required: bool },
    /// Anything else, at a JSON Pointer into the schema (`/properties/x/enum`, ...).
    Changed { path: String },
    /// The server no longer lists the tool at all.
    ToolMissing { tool: String },
}

impl fmt::Display for SchemaChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaChange::PropertyAdded { property, required } => write!(
                f,
                "property `{property}` added ({})",
                if *required { "required" } else { "optional" }
            ),
            SchemaChange::PropertyRemoved { property } => {
                write!(f, "property `{property}` removed")
            }
            SchemaChange::TypeChanged { property, from, to } if property.is_empty() => {
                write!(f, "type of the arguments changed from {from} to {to}")
            }
            SchemaChange::TypeChanged { property, from, to } => {
                write!(f, "type of `{property}` changed from {from} to {to}")
            }
            SchemaChange::RequiredChanged {
                property,
                required: true,
            } => {
                write!(f, "property `{property}` became required")
            }
            SchemaChange::RequiredChanged {
                property,
                required: false,
            } => {
                write!(f, "property `{property}` is no longer required")
            }
            SchemaChange::Changed { path } if path.is_empty() => write!(f, "schema changed"),
            SchemaChange::Changed { path } => write!(f, "`{path}` changed"),
            SchemaChange::ToolMissing { tool } => write!(
                f,
                "the server no longer lists tool `{tool}` (removed or renamed)"
            ),
        }
    }
}

/// How a remote input schema differs from the declared one: at least one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaDrift {
    /// The changes, properties in name order first, then other keywords.
    pub changes: Vec<SchemaChange>,
}

impl fmt::Display for SchemaDrift {
    /// The changes joined by `; `, e.g. "property `timezone` added (required); type of `y`
    /// changed from string to integer".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.changes.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// `value` without the [`ANNOTATION_KEYWORDS`], at every depth (inside `properties` a key is a
/// property name, never removed), and without `null` members and array items: `tools.toml` has
/// no `null`, so an imported row leaves them out (`"default": null` is the usual one) and a
/// declared schema never has them.
fn normalize(value: &Value) -> Value {
    fn walk(value: &Value, in_properties: bool) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(_, v)| !v.is_null())
                    .filter(|(k, _)| in_properties || !ANNOTATION_KEYWORDS.contains(&k.as_str()))
                    .map(|(k, v)| {
                        let child_is_properties = !in_properties
                            && matches!(
                                k.as_str(),
                                "properties" | "patternProperties" | "$defs" | "definitions"
                            );
                        (k.clone(), walk(v, child_is_properties))
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(|v| walk(v, false))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    walk(value, false)
}

fn type_text(schema: Option<&Value>) -> String {
    match schema.and_then(|s| s.get("type")) {
        None => "any".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn required_set(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The first JSON Pointer at which `a` and `b` differ (`""`: the values themselves).
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    if a == b {
        return None;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                let child = format!("{path}/{escaped}");
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = first_difference(p, q, &child) {
                            return Some(d);
                        }
                    }
                    _ => return Some(child),
                }
            }
            Some(path.to_string())
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{path}/{i}"))),
        _ => Some(path.to_string()),
    }
}

/// How `remote` (a server's `inputSchema` of a tool) differs from `declared` (the row's
/// `input_schema`); `None` when they constrain arguments the same way (see the module docs).
///
/// Changes are named per property of the top-level `properties` (added with whether it is
/// required, removed, `type` changed, required or not, anything else inside it by its JSON
/// Pointer), then per other top-level keyword by its JSON Pointer.
pub fn compare(declared: &Value, remote: &Value) -> Option<SchemaDrift> {
    let (d, r) = (normalize(declared), normalize(remote));
    if d == r {
        return None;
    }
    let mut changes = Vec::new();
    if d.get("type") != r.get("type") {
        changes.push(SchemaChange::TypeChanged {
            property: String::new(),
            from: type_text(Some(&d)),
            to: type_text(Some(&r)),
        });
    }
    let empty = Map::new();
    let props = |s: &Value| s.get("properties").and_then(Value::as_object).cloned();
    let (dp, rp) = (props(&d), props(&r));
    let (dp_ref, rp_ref) = (dp.as_ref().unwrap_or(&empty), rp.as_ref().unwrap_or(&empty));
    let (dreq, rreq) = (required_set(&d), required_set(&r));
    let mut names: Vec<&String> = dp_ref.keys().chain(rp_ref.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let (was_required, is_required) =
            (dreq.contains(&name.as_str()), rreq.contains(&name.as_str()));
        match (dp_ref.get(name), rp_ref.get(name)) {
            (None, Some(_)) => changes.push(SchemaChange::PropertyAdded {
                property: name.clone(),
                required: is_required,
            }),
            (Some(_), None) => changes.push(SchemaChange::PropertyRemoved {
                property: name.clone(),
            }),
            (Some(a), Some(b)) => {
                if a.get("type") != b.get("type") {
                    changes.push(SchemaChange::TypeChanged {
                        property: name.clone(),
                        from: type_text(Some(a)),
                        to: type_text(Some(b)),
                    });
                } else if let Some(path) = first_difference(a, b, "") {
                    let escaped = name.replace('~', "~0").replace('/', "~1");
                    changes.push(SchemaChange::Changed {
                        path: format!("/properties/{escaped}{path}"),
                    });
                }
                if was_required != is_required {
                    changes.push(SchemaChange::RequiredChanged {
                        property: name.clone(),
                        required: is_required,
                    });
                }
            }
            (None, None) => {}
        }
    }
    // Required names without a property of their own (or a `required` list in another form).
    let listed_only = |req: &[&str], props: &Map<String, Value>| -> Vec<String> {
        req.iter()
            .filter(|n| !props.contains_key(**n))
            .map(|n| n.to_string())
            .collect()
    };
    if listed_only(&dreq, dp_ref) != listed_only(&rreq, rp_ref) {
        changes.push(SchemaChange::Changed {
            path: "/required".to_string(),
        });
    }
    let (dm, rm) = (
        d.as_object().unwrap_or(&empty),
        r.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = dm.keys().chain(rm.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        if matches!(key.as_str(), "type" | "properties" | "required") {
            continue;
        }
        if dm.get(key) != rm.get(key) {
            let escaped = key.replace('~', "~0").replace('/', "~1");
            let path = match (dm.get(key), rm.get(key)) {
                (Some(a), Some(b)) => first_difference(a, b, &format!("/{escaped}"))
                    .unwrap_or_else(|| format!("/{escaped}")),
                _ => format!("/{escaped}"),
            };
            changes.push(SchemaChange::Changed { path });
        }
    }
    if changes.is_empty() {
        // Not an object at the top, or differences only in shapes named above.
        changes.push(SchemaChange::Changed {
            path: first_difference(&d, &r, "").unwrap_or_default(),
        });
    }
    Some(SchemaDrift { changes })
}

/// A server's live tool list against the catalog's rows of that server
/// (for `toolcat check --live`).
#[derive(Debug, Clone, Serialize)]
pub struct LiveReport {
    /// The server.
    pub server: String,
    /// Remote tools no row maps to (the server's names).
    pub added: Vec<RemoteTool>,
    /// Declared rows (their declared names) whose remote name the server does not list.
    pub removed: Vec<String>,
    /// Declared rows whose remote input schema differs from their `input_schema` (declared name
    /// and the drift).
    pub changed: Vec<(String, SchemaDrift)>,
}

impl LiveReport {
    /// Whether the rows match the server: nothing added, removed or changed.
    pub fn is_clean(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Compares the rows of server `s` in `catalog` with `discovery`, the server's live list, both
/// ways: every row's remote name ([`Catalog::remote_name`]: its `remote_name`, else its declared
/// name — the server's own, un-namespaced name) must be served (else `removed`), and every
/// served tool must be some row's remote name (else `added`); schemas are compared by
/// [`compare`] against the row's input schema ([`Catalog::input_schema`]).
pub fn live_report(catalog: &Catalog, s: ServerId, discovery: &Discovery) -> LiveReport {
    let rows: Vec<_> = catalog
        .tools()
        .filter(|&t| catalog.source(t) == ToolSource::Server(s))
        .collect();
    let mut report = LiveReport {
        server: catalog.server_name(s).to_string(),
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
    };
    for &t in &rows {
        let name = catalog.name(t);
        match discovery.tool(catalog.remote_name(t)) {
            None => report.removed.push(name.to_string()),
            Some(remote) => {
                if let Some(drift) = compare(catalog.input_schema(t), &remote.input_schema) {
                    report.changed.push((name.to_string(), drift));
                }
            }
        }
    }
    for remote in &discovery.tools {
        if !rows.iter().any(|&t| catalog.remote_name(t) == remote.name) {
            report.added.push(remote.clone());
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_schema_reworded_or_reordered_is_no_drift() {
        let a = json!({"type": "object", "properties": {"a": {"type": "string", "description": "x"}, "b": {"type": "integer"}}, "required": ["a"]});
        let b = json!({"required": ["a"], "properties": {"b": {"type": "integer", "title": "B"}, "a": {"description": "y", "type": "string"}}, "type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema"});
        assert_eq!(compare(&a, &b), None);
    }

    #[test]
    fn changes_are_named() {
        let declared = json!({"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}, "z": {"type": "string", "enum": ["a"]}}, "required": ["x"]});
        let remote = json!({"type": "object", "properties": {"timezone": {"type": "string"}, "y": {"type": "integer"}, "z": {"type": "string", "enum": ["a", "b"]}}, "required": ["timezone", "y"], "additionalProperties": false});
        let drift = compare(&declared, &remote).expect("drift");
        assert_eq!(
            drift.to_string(),
            "property `timezone` added (required); property `x` removed; type of `y` changed from string to integer; property `y` became required; `/properties/z/enum` changed; `/additionalProperties` changed"
        );
    }

    #[test]
    fn a_property_named_like_an_annotation_is_kept() {
        let a = json!({"type": "object", "properties": {"title": {"type": "string"}}});
        let b = json!({"type": "object", "properties": {}});
        assert_eq!(
            compare(&a, &b).unwrap().to_string(),
            "property `title` removed"
        );
    }
}
