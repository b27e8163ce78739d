//! TypeScript declarations of a Code Mode program's API, derived from the tools' JSON Schemas.
//!
//! The model reads them in the `run_code` definition, so they are as short as the schemas allow:
//! one line per property, `/** ... */` only where the schema has a description. The mapping:
//!
//! | JSON Schema | TypeScript |
//! |---|---|
//! | `string`, `integer` / `number`, `boolean`, `null` | `string`, `number`, `boolean`, `null` |
//! | `enum` / `const` | a union of literals |
//! | `array` with `items` | `T[]` (`unknown[]` without `items`) |
//! | `object` with `properties` | `{ name: T; opt?: T }` (`?` unless `required`) |
//! | `object` with only `additionalProperties: T` | `Record<string, T>` |
//! | `type: [a, b]`, `anyOf`, `oneOf` | `A \| B` |
//! | `allOf` | `A & B` |
//! | `$ref` to `#/$defs/X` or `#/definitions/X` | the definition, inlined (to depth 8) |
//! | `true`, `{}`, no schema, anything else | `unknown` |

use serde_json::{Map, Value};

/// Deepest nesting written out before a schema is declared `unknown` (recursive `$ref`s).
const MAX_DEPTH: usize = 8;

/// One function of the API: its exported name, one-line description, input and output schema.
#[derive(Debug, Clone, Copy)]
pub struct ApiFunction<'a> {
    /// The tool's exported name (a key of `tools`).
    pub name: &'a str,
    /// What the model reads about it (one line).
    pub description: &'a str,
    /// The input JSON Schema.
    pub input: &'a Value,
    /// The output JSON Schema, `None` when the tool declares none (`Promise<unknown>`).
    pub output: Option<&'a Value>,
    /// Whether to write the description and the arguments' type with their descriptions.
    /// `false` for a tool whose own definition the same request carries: the model reads its
    /// description and arguments there, so the declaration names it and types its result only
    /// (`args: object`), and the definition's text is not sent twice.
    pub documented: bool,
}

/// The declarations of `tools` (and of `readToolResult` when `read_result`: the catalog has
/// `read_tool_result` for it to call), as the model reads them. Results are
/// typed on one line without descriptions (a program needs their shape; their names mostly say
/// the rest); a documented function's arguments span lines with a `/** */` description each.
pub fn declarations(functions: &[ApiFunction<'_>], read_result: bool) -> String {
    let mut out = String::from("declare const tools: {\n");
    if functions.iter().any(|f| !f.documented) {
        out.push_str(
            "  // `args: object`: the arguments of the tool's definition in this request.\n",
        );
    }
    for f in functions {
        if f.documented && !f.description.is_empty() {
            out.push_str(&format!("  /** {} */\n", comment(f.description)));
        }
        let args = if f.documented {
            ts(f.input, f.input, 1, 0, true)
        } else {
            "object".to_string()
        };
        let optional = required(f.input).is_empty();
        let result = f
            .output
            .map_or_else(|| "unknown".to_string(), |o| ts(o, o, 1, 0, false));
        out.push_str(&format!(
            "  {}(args{}: {args}): Promise<{result}>;\n",
            key(f.name),
            if optional { "?" } else { "" }
        ));
    }
    out.push_str("};\n");
    if !read_result {
        return out;
    }
    out.push_str(
        "/** Reads part of an archived result by its reference; offset and length in characters. */\n\
         declare function readToolResult(reference: string, range?: { offset?: number; length?: number }): \
         Promise<{ text: string; offset: number; length: number; totalChars: number; nextOffset: number | null; truncated: boolean }>;\n",
    );
    out
}

/// A property key or method name: bare when it is an identifier, else quoted.
fn key(name: &str) -> String {
    let ident = name.chars().enumerate().all(|(i, c)| {
        c == '_' || c == '$' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
    });
    if ident && !name.is_empty() {
        name.to_string()
    } else {
        serde_json::to_string(name).unwrap_or_default()
    }
}

/// A description as one comment line: whitespace collapsed, `*/` broken up.
fn comment(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("*/", "* /")
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The TypeScript type of `schema` (within `root`, which holds its `$defs`). With `comments`,
/// objects span lines, indented for `indent` levels, each property after its description as a
/// `/** */` line; without, objects are written on one line (`{ a: T; b?: U }`).
fn ts(schema: &Value, root: &Value, indent: usize, depth: usize, comments: bool) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let Some(map) = schema.as_object() else {
        return "unknown".into();
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        return match resolve(root, target) {
            Some(def) => ts(def, root, indent, depth + 1, comments),
            None => "unknown".into(),
        };
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(literal));
    }
    if let Some(value) = map.get("const") {
        return literal(value);
    }
    for (keyword, joiner) in [("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")] {
        if let Some(parts) = map.get(keyword).and_then(Value::as_array) {
            let parts: Vec<String> = parts
                .iter()
                .map(|p| ts(p, root, indent, depth + 1, comments))
                .collect();
            return join(parts, joiner);
        }
    }
    match map.get("type") {
        Some(Value::String(t)) => of_type(t, map, root, indent, depth, comments),
        Some(Value::Array(types)) => union(
            types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| of_type(t, map, root, indent, depth, comments)),
        ),
        _ if map.contains_key("properties") => {
            of_type("object", map, root, indent, depth, comments)
        }
        _ => "unknown".into(),
    }
}

fn of_type(
    t: &str,
    map: &Map<String, Value>,
    root: &Value,
    indent: usize,
    depth: usize,
    comments: bool,
) -> String {
    match t {
        "string" => "string".into(),
        "integer" | "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => match map.get("items") {
            Some(items) => {
                let inner = ts(items, root, indent, depth + 1, comments);
                if inner.contains(' ') && !inner.starts_with('{') {
                    format!("({inner})[]")
                } else {
                    format!("{inner}[]")
                }
            }
            None => "unknown[]".into(),
        },
        "object" => object(map, root, indent, depth, comments),
        _ => "unknown".into(),
    }
}

fn object(
    map: &Map<String, Value>,
    root: &Value,
    indent: usize,
    depth: usize,
    comments: bool,
) -> String {
    let properties = map.get("properties").and_then(Value::as_object);
    let extra = match map.get("additionalProperties") {
        Some(Value::Bool(false)) | None => None,
        Some(Value::Bool(true)) => Some("unknown".to_string()),
        Some(schema) => Some(ts(schema, root, indent + 1, depth + 1, comments)),
    };
    let Some(properties) = properties.filter(|p| !p.is_empty()) else {
        return match extra {
            Some(value) => format!("Record<string, {value}>"),
            None => "Record<string, unknown>".into(),
        };
    };
    let needed: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !comments {
        let mut parts: Vec<String> = properties
            .iter()
            .map(|(name, schema)| {
                let optional = if needed.contains(&name.as_str()) {
                    ""
                } else {
                    "?"
                };
                format!(
                    "{}{optional}: {}",
                    key(name),
                    ts(schema, root, indent, depth + 1, false)
                )
            })
            .collect();
        if let Some(value) = extra {
            parts.push(format!("[key: string]: {value}"));
        }
        return format!("{{ {} }}", parts.join("; "));
    }
    let pad = "  ".repeat(indent + 1);
    let mut out = String::from("{\n");
    for (name, schema) in properties {
        if let Some(d) = schema
            .get("description")
            .and_then(Value::as_str)
            .filter(|_| comments)
        {
            out.push_str(&format!("{pad}/** {} */\n", comment(d)));
        }
        let optional = if needed.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!(
            "{pad}{}{optional}: {};\n",
            key(name),
            ts(schema, root, indent + 1, depth + 1, comments)
        ));
    }
    if let Some(value) = extra {
        out.push_str(&format!("{pad}[key: string]: {value};\n"));
    }
    out.push_str(&"  ".repeat(indent));
    out.push('}');
    out
}

/// The definition `#/$defs/NAME` or `#/definitions/NAME` of `root`.
fn resolve<'a>(root: &'a Value, target: &str) -> Option<&'a Value> {
    let path = target.strip_prefix("#/")?;
    let mut node = root;
    for part in path.split('/') {
        let part = part.replace("~1", "/").replace("~0", "~");
        node = node.get(part.as_str())?;
    }
    Some(node)
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        _ => "unknown".into(),
    }
}

fn union(parts: impl Iterator<Item = String>) -> String {
    join(parts.collect(), " | ")
}

fn join(mut parts: Vec<String>, joiner: &str) -> String {
    parts.dedup();
    match parts.len() {
        0 => "unknown".into(),
        1 => parts.remove(0),
        _ => parts.join(joiner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_map_to_typescript() {
        let input = json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "A regular expression"},
                "limit": {"type": ["integer", "null"]},
                "mode": {"enum": ["files", "lines"]},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}}
            },
            "required": ["pattern"],
            "$defs": {"Tag": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
        });
        let output = json!({
            "type": "object",
            "properties": {"counts": {"type": "object", "additionalProperties": {"type": "integer"}}},
            "required": ["counts"]
        });
        let text = declarations(
            &[
                ApiFunction {
                    name: "grep",
                    description: "Finds lines.",
                    input: &input,
                    output: Some(&output),
                    documented: true,
                },
                ApiFunction {
                    name: "gh-search",
                    description: "",
                    input: &json!({"type": "object", "properties": {}}),
                    output: None,
                    documented: true,
                },
            ],
            true,
        );
        assert!(
            text.contains("  /** Finds lines. */\n  grep(args: {\n"),
            "{text}"
        );
        assert!(
            text.contains("    /** A regular expression */\n    pattern: string;\n"),
            "{text}"
        );
        assert!(text.contains("    limit?: number | null;\n"), "{text}");
        assert!(
            text.contains("    mode?: \"files\" | \"lines\";\n"),
            "{text}"
        );
        assert!(
            text.contains("    tags?: {\n      name: string;\n    }[];\n"),
            "{text}"
        );
        assert!(
            text.contains("}): Promise<{ counts: Record<string, number> }>;\n"),
            "{text}"
        );
        assert!(
            text.contains("  \"gh-search\"(args?: Record<string, unknown>): Promise<unknown>;\n"),
            "{text}"
        );
        assert!(text.contains("declare function readToolResult("), "{text}");
    }

    /// A tool whose definition the request carries is named with its result type only, once
    /// the comment says where its arguments are.
    #[test]
    fn a_defined_tool_is_declared_by_its_result_only() {
        let input = json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A path"}},
            "required": ["path"]
        });
        let output = json!({
            "type": "object",
            "properties": {
                "lines": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer", "description": "Line number"}}, "required": ["n"]}},
                "more": {"type": "boolean", "description": "More follow"}
            },
            "required": ["lines"]
        });
        let text = declarations(
            &[ApiFunction {
                name: "read",
                description: "Reads a file.",
                input: &input,
                output: Some(&output),
                documented: false,
            }],
            false,
        );
        assert_eq!(
            text.split("/** Reads part").next().unwrap_or_default(),
            "declare const tools: {\n  // `args: object`: the arguments of the tool's definition in this request.\n  read(args: object): Promise<{ lines: { n: number }[]; more?: boolean }>;\n};\n"
        );
    }

    #[test]
    fn recursive_refs_stop_at_unknown() {
        let schema = json!({
            "type": "object",
            "properties": {"next": {"$ref": "#"}},
        });
        let text = ts(&schema, &schema, 0, 0, true);
        assert!(text.contains("unknown"), "{text}");
        assert_eq!(ts(&json!(true), &json!(true), 0, 0, true), "unknown");
        assert_eq!(
            ts(&json!({"$ref": "#/$defs/missing"}), &json!({}), 0, 0, true),
            "unknown"
        );
    }
}
