//! Unit tests of the export targets' rules and rewrites.

use super::*;

fn rewritten(e: &Exported) -> Vec<(&'static str, &str)> {
    e.findings
        .iter()
        .filter(|f| f.kind == FindingKind::Rewrite)
        .map(|f| (f.rule, f.path.as_str()))
        .collect()
}

#[test]
fn every_rule_id_is_unique_and_has_a_source() {
    let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), RULES.len());
    for r in RULES {
        assert!(r.source.url.starts_with("https://"), "{}", r.id);
        assert!(r.id.starts_with(r.target.as_str()), "{}", r.id);
    }
    for t in Target::ALL {
        assert_eq!(name_rule(*t).target, *t);
        assert_eq!(target_rule(name_rule(*t).rule).target, *t);
    }
}

#[test]
fn names_follow_each_target() {
    let long = "a".repeat(65);
    assert_eq!(
        name_faults(Target::OpenAi, &long),
        [NameFault::TooLong { len: 65, max: 64 }]
    );
    assert!(name_faults(Target::Mcp, &long).is_empty());
    assert_eq!(
        name_faults(Target::Mcp, &"a".repeat(129)),
        [NameFault::TooLong { len: 129, max: 128 }]
    );
    assert_eq!(
        name_faults(Target::OpenAi, "admin.tools.list"),
        [NameFault::Char('.')]
    );
    assert_eq!(
        name_faults(Target::Anthropic, "admin.tools.list"),
        [NameFault::Char('.')]
    );
    assert!(name_faults(Target::Gemini, "admin.tools.list").is_empty());
    assert!(name_faults(Target::Mcp, "admin.tools.list").is_empty());
    assert!(name_faults(Target::Gemini, "ns:tool").is_empty());
    assert_eq!(name_faults(Target::Mcp, "ns:tool"), [NameFault::Char(':')]);
    assert_eq!(name_faults(Target::Gemini, "7zip"), [NameFault::First('7')]);
    assert!(name_faults(Target::OpenAi, "7zip").is_empty());
    assert_eq!(name_faults(Target::Mcp, ""), [NameFault::Empty]);
}

#[test]
fn openai_strict_requires_every_property_and_makes_optional_ones_nullable() {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "filter": {"$ref": "#/$defs/Filter", "description": "what to keep"}
        },
        "required": ["query"],
        "$defs": {
            "Filter": {"type": "object", "properties": {"label": {"type": ["string", "null"]}}}
        }
    });
    let e = openai("search", &schema);
    assert_eq!(e.strict, Some(true), "{:#?}", e.findings);
    assert_eq!(
        e.schema,
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": ["integer", "null"], "minimum": 1},
                "state": {"type": ["string", "null"], "enum": ["open", "closed", null]},
                "filter": {
                    "description": "what to keep",
                    "type": ["object", "null"],
                    "properties": {"label": {"type": ["string", "null"]}},
                    "additionalProperties": false,
                    "required": ["label"]
                }
            },
            "required": ["query", "limit", "state", "filter"],
            "$defs": {
                "Filter": {
                    "type": "object",
                    "properties": {"label": {"type": ["string", "null"]}},
                    "additionalProperties": false,
                    "required": ["label"]
                }
            },
            "additionalProperties": false
        })
    );
    assert_eq!(
        rewritten(&e),
        [
            ("openai-strict-objects", ""),
            ("openai-strict-ref", "/properties/filter/$ref"),
            ("openai-strict-objects", "/properties/filter"),
            (
                "openai-strict-required",
                "/properties/filter/properties/label"
            ),
            ("openai-strict-required", "/properties/limit"),
            ("openai-strict-required", "/properties/state"),
            ("openai-strict-required", "/properties/filter"),
            ("openai-strict-objects", "/$defs/Filter"),
            ("openai-strict-required", "/$defs/Filter/properties/label"),
        ]
    );
}

#[test]
fn openai_strict_falls_back_on_unsupported_keywords_and_formats() {
    let schema = json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "format": "uri"},
            "shape": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "depth": {"type": "integer", "default": 2},
            "when": {"type": "string", "format": "date-time"}
        },
        "required": ["url"]
    });
    let e = openai("fetch", &schema);
    assert_eq!(e.strict, Some(false));
    assert_eq!(e.schema, schema, "a fallback sends the schema unchanged");
    let reasons: Vec<(&str, &str)> = e
        .findings
        .iter()
        .map(|f| (f.rule, f.path.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("openai-strict-formats", "/properties/url/format"),
            ("openai-strict-keywords", "/properties/shape/oneOf"),
            ("openai-strict-keywords", "/properties/depth/default"),
        ]
    );
    assert!(e.findings.iter().all(|f| f.kind == FindingKind::Fallback));
}

#[test]
fn openai_strict_drops_numeric_formats_and_rewrites_const() {
    let schema = json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer", "format": "uint64", "minimum": 0},
            "kind": {"const": "issue"}
        },
        "required": ["count", "kind"]
    });
    let e = openai("t", &schema);
    assert_eq!(e.strict, Some(true));
    assert_eq!(
        e.schema["properties"]["count"],
        json!({"type": "integer", "minimum": 0})
    );
    assert_eq!(e.schema["properties"]["kind"], json!({"enum": ["issue"]}));
}

#[test]
fn openai_strict_takes_schemars_enums_and_null_defaults() {
    // What schemars writes for `Option<Mode>` with `#[serde(default)]`, `Mode` a documented
    // unit enum.
    let schema = json!({
        "type": "object",
        "properties": {
            "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}], "default": null}
        },
        "$defs": {
            "Mode": {"oneOf": [
                {"type": "string", "const": "fast", "description": "Quick"},
                {"type": "string", "const": "full", "description": "Thorough"}
            ]}
        }
    });
    let e = openai("t", &schema);
    assert_eq!(e.strict, Some(true), "{:#?}", e.findings);
    assert_eq!(e.schema["properties"]["mode"].get("default"), None);
    assert_eq!(
        e.schema["$defs"]["Mode"]["anyOf"][1],
        json!({"type": "string", "enum": ["full"], "description": "Thorough"})
    );
    // Overlapping branches stay `oneOf`, and fall back.
    let overlapping = json!({
        "type": "object",
        "properties": {"x": {"oneOf": [{"const": 1}, {"enum": [1]}]}},
        "required": ["x"]
    });
    assert_eq!(openai("t", &overlapping).strict, Some(false));
}

#[test]
fn openai_strict_rejects_free_form_objects_and_non_object_roots() {
    let free = json!({"type": "object", "properties": {"arguments": {"type": "object"}}, "required": ["arguments"]});
    let e = openai("tool_call", &free);
    assert_eq!(e.strict, Some(false));
    assert_eq!(e.findings[0].path, "/properties/arguments");
    let map =
        json!({"type": "object", "properties": {}, "additionalProperties": {"type": "string"}});
    assert_eq!(openai("m", &map).strict, Some(false));
    let root = json!({"anyOf": [{"type": "object", "properties": {}}]});
    assert_eq!(openai("r", &root).findings[0].rule, "openai-strict-root");
    let empty = json!({"type": "object", "properties": {}});
    let e = openai("e", &empty);
    assert_eq!(e.strict, Some(true));
    assert_eq!(
        e.schema,
        json!({"type": "object", "properties": {}, "additionalProperties": false, "required": []})
    );
}

#[test]
fn openai_strict_limits_nesting() {
    let mut schema = json!({"type": "object", "properties": {}});
    for _ in 0..10 {
        schema = json!({"type": "object", "properties": {"inner": schema}, "required": ["inner"]});
    }
    let e = openai("deep", &schema);
    assert_eq!(e.strict, Some(false));
    assert!(e.findings.iter().any(|f| f.rule == "openai-strict-limits"));
}

#[test]
fn restore_arguments_removes_the_nulls_strict_mode_added() {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "label": {"type": ["string", "null"]},
            "filter": {"$ref": "#/$defs/F"}
        },
        "required": ["query"],
        "$defs": {"F": {"type": "object", "properties": {"state": {"type": "string"}}}}
    });
    let mut args = json!({"query": "x", "limit": null, "label": null, "filter": {"state": null}});
    assert_eq!(restore_arguments(&schema, &mut args), 2);
    assert_eq!(args, json!({"query": "x", "label": null, "filter": {}}));
}

#[test]
fn gemini_inlines_refs_and_writes_nullable() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "note": {"type": ["string", "null"], "description": "optional note"},
            "owner": {"anyOf": [{"$ref": "#/$defs/User"}, {"type": "null"}]},
            "kind": {"const": "bug"},
            "count": {"type": "integer", "format": "uint32", "minimum": 0}
        },
        "required": [],
        "additionalProperties": false,
        "$defs": {
            "User": {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"], "additionalProperties": false}
        }
    });
    let e = gemini("file_issue", &schema);
    assert!(e.is_ok(), "{:#?}", e.findings);
    assert_eq!(
        e.schema,
        json!({
            "type": "object",
            "properties": {
                "note": {"type": "string", "description": "optional note", "nullable": true},
                "owner": {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"], "nullable": true},
                "kind": {"type": "string", "enum": ["bug"]},
                "count": {"type": "integer", "minimum": 0}
            },
            "required": []
        })
    );
    let rules: Vec<&str> = e.findings.iter().map(|f| f.rule).collect();
    for expected in [
        "gemini-ref",
        "gemini-nullable",
        "gemini-enum",
        "gemini-formats",
        "gemini-keywords",
    ] {
        assert!(
            rules.contains(&expected),
            "{expected} missing from {rules:?}"
        );
    }
}

#[test]
fn gemini_rewrites_unions() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"type": ["string", "integer"]},
            "shape": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"r": {"type": "number"}}}]},
            "tag": {"allOf": [{"$ref": "#/definitions/Tag"}], "description": "a tag"}
        },
        "definitions": {"Tag": {"type": "string", "enum": ["a", "b"]}}
    });
    let e = gemini("t", &schema);
    assert!(e.is_ok(), "{:#?}", e.findings);
    assert_eq!(
        e.schema["properties"]["id"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
    assert_eq!(
        e.schema["properties"]["shape"]["anyOf"][1]["properties"]["r"],
        json!({"type": "number"})
    );
    assert_eq!(
        e.schema["properties"]["tag"],
        json!({"type": "string", "enum": ["a", "b"], "description": "a tag"})
    );
}

#[test]
fn gemini_cannot_inline_recursive_or_foreign_refs() {
    let recursive = json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
    });
    let e = gemini("t", &recursive);
    assert!(!e.is_ok());
    let error = e
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::Error)
        .unwrap();
    assert_eq!(error.rule, "gemini-ref");
    assert!(error.message.contains("recursive"), "{}", error.message);
    assert_eq!(e.schema, recursive, "the input comes back unchanged");
    let foreign =
        json!({"type": "object", "properties": {"x": {"$ref": "https://example.invalid/x.json"}}});
    assert!(!gemini("t", &foreign).is_ok());
    // A pointer into the schema itself is inlined; one that recurses cannot be.
    let pointer = json!({"type": "object", "properties": {
        "a": {"type": "string", "description": "first"},
        "b": {"$ref": "#/properties/a"}
    }});
    let e = gemini("t", &pointer);
    assert!(e.is_ok(), "{:#?}", e.findings);
    assert_eq!(
        e.schema["properties"]["b"],
        json!({"type": "string", "description": "first"})
    );
    let tree = json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#"}}
    }});
    assert!(!gemini("t", &tree).is_ok());
    let several = json!({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"minLength": 1}]}}});
    assert!(!gemini("t", &several).is_ok());
}

#[test]
fn anthropic_deferred_tools_need_a_loaded_search_tool() {
    let ok = json!([
        {"name": "tool_search", "input_schema": {}},
        {"name": "read", "input_schema": {}, "defer_loading": true}
    ]);
    assert!(check_anthropic_request(&ok, "tool_search").is_empty());
    let no_search = json!([
        {"name": "list", "input_schema": {}},
        {"name": "read", "input_schema": {}, "defer_loading": true}
    ]);
    let f = check_anthropic_request(&no_search, "tool_search");
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("no search tool"), "{}", f[0].message);
    let all_deferred = json!([
        {"name": "tool_search", "input_schema": {}, "defer_loading": true},
        {"name": "read", "input_schema": {}, "defer_loading": true}
    ]);
    assert_eq!(
        check_anthropic_request(&all_deferred, "tool_search").len(),
        2
    );
    let server_search = json!([
        {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
        {"name": "read", "input_schema": {}, "defer_loading": true}
    ]);
    assert!(check_anthropic_request(&server_search, "tool_search").is_empty());
    assert!(check_anthropic_request(&json!([{"name": "x"}]), "tool_search").is_empty());
}

#[test]
fn report_counts_and_renders_per_target() {
    let strict = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let loose = json!({"type": "object", "properties": {"u": {"type": "string", "format": "uri"}}, "required": ["u"]});
    let tools = [
        ToolInput {
            exported_name: "search",
            schema: Some(&strict),
        },
        ToolInput {
            exported_name: "fetch",
            schema: Some(&loose),
        },
        ToolInput {
            exported_name: "admin.tools.list",
            schema: None,
        },
    ];
    let report = Report::check(&[Target::OpenAi, Target::Mcp], &tools);
    assert_eq!(report.tools.len(), 6);
    assert_eq!(
        report.errors(),
        1,
        "the dotted name is an error for openai only"
    );
    let text = report.render();
    assert!(
        text.starts_with("target `openai`: 3 tools, 1 strict, 1 `strict: false`"),
        "{text}"
    );
    assert!(
        text.contains("  `fetch`: `strict: false` (fallback)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "error at `/`: `admin.tools.list` has `.`, outside `a-zA-Z0-9_-` [openai-name]"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "target `mcp`: 3 tools, 0 rewritten, 0 cannot be exported, 1 schemas unchecked"
        ),
        "{text}"
    );
    assert!(text.contains("openai-name: function names match"), "{text}");
}

// ---- `$ref` with sibling keywords under OpenAI strict mode ----

/// What schemars writes for `todo_write`: a documented field whose type is a `$ref`.
fn ref_with_description() -> Value {
    json!({
        "type": "object",
        "properties": {
            "todos": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
        },
        "required": ["todos"],
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "status": {"$ref": "#/$defs/Status", "description": "Where the item stands."}
                },
                "required": ["content", "status"]
            },
            "Status": {"type": "string", "enum": ["pending", "done"], "description": "A status."}
        }
    })
}

#[test]
fn openai_strict_unravels_a_ref_with_sibling_keywords() {
    let e = openai("todo_write", &ref_with_description());
    assert_eq!(e.strict, Some(true), "{:#?}", e.findings);
    assert_eq!(
        e.schema["$defs"]["Item"]["properties"]["status"],
        json!({"type": "string", "enum": ["pending", "done"], "description": "Where the item stands."}),
        "the definition inlined, the node's own description kept, no `$ref`"
    );
    let unravelled: Vec<&str> = e
        .findings
        .iter()
        .filter(|f| f.rule == "openai-strict-ref")
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(unravelled, ["/$defs/Item/properties/status/$ref"]);
    // A bare `$ref` stays: strict mode takes it.
    assert_eq!(
        e.schema["properties"]["todos"]["items"],
        json!({"$ref": "#/$defs/Item"})
    );
    assert!(
        conformance::violations(conformance::Dialect::OpenAiStrict, &e.schema).is_empty(),
        "{:#?}",
        conformance::violations(conformance::Dialect::OpenAiStrict, &e.schema)
    );
    // The rewrite is a fixed point: strict output goes through unchanged.
    let again = openai("todo_write", &e.schema);
    assert_eq!(again.strict, Some(true));
    assert_eq!(again.schema, e.schema);
    // The unravelled definition is made strict too (an object behind the `$ref`).
    let object = json!({
        "type": "object",
        "properties": {"owner": {"$ref": "#/$defs/User", "description": "who"}},
        "required": ["owner"],
        "$defs": {"User": {"type": "object", "properties": {"login": {"type": "string"}}}}
    });
    let e = openai("t", &object);
    assert_eq!(
        e.schema["properties"]["owner"],
        json!({"type": "object", "properties": {"login": {"type": ["string", "null"]}}, "description": "who", "additionalProperties": false, "required": ["login"]})
    );
}

#[test]
fn openai_strict_falls_back_on_refs_it_cannot_unravel() {
    let recursive = json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "required": ["tree"],
        "$defs": {"Node": {"type": "object", "properties": {
            "child": {"$ref": "#/$defs/Node", "description": "the next node"}
        }, "required": ["child"]}}
    });
    let e = openai("t", &recursive);
    assert_eq!(e.strict, Some(false));
    let reason = &e.findings[0];
    assert_eq!(
        (reason.rule, reason.path.as_str()),
        (
            "openai-strict-ref",
            "/$defs/Node/properties/child/properties/child/$ref"
        )
    );
    assert!(reason.message.contains("recursive"), "{}", reason.message);
    let conflict = json!({
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N", "maximum": 5}},
        "required": ["n"],
        "$defs": {"N": {"type": "integer", "maximum": 9}}
    });
    let e = openai("t", &conflict);
    assert_eq!(e.strict, Some(false));
    assert!(
        e.findings[0].message.contains("`maximum` beside `$ref`"),
        "{}",
        e.findings[0].message
    );
}

// ---- Gemini: shapes behind known 400s ----

fn gemini_property(property: Value) -> Exported {
    gemini(
        "t",
        &json!({"type": "object", "properties": {"p": property}, "required": ["p"]}),
    )
}

/// The rewritten property `p`, with the rules of the rewrites.
fn gemini_ok(property: Value) -> (Value, Vec<&'static str>) {
    let e = gemini_property(property);
    assert!(e.is_ok(), "{:#?}", e.findings);
    assert!(
        conformance::violations(conformance::Dialect::Gemini, &e.schema).is_empty(),
        "{:#?}",
        conformance::violations(conformance::Dialect::Gemini, &e.schema)
    );
    let rules = e.findings.iter().map(|f| f.rule).collect();
    (e.schema["properties"]["p"].clone(), rules)
}

/// The (rule, path) of the first error exporting property `p`.
fn gemini_refused(property: Value) -> (&'static str, String) {
    let e = gemini_property(property.clone());
    assert!(!e.is_ok(), "{property} passed: {}", e.schema);
    let error = e
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::Error)
        .expect("an error");
    (error.rule, error.path.clone())
}

#[test]
fn gemini_writes_constants_so_the_constraint_survives() {
    assert_eq!(
        gemini_ok(json!({"const": "bug"})),
        (
            json!({"type": "string", "enum": ["bug"]}),
            vec!["gemini-enum"]
        )
    );
    assert_eq!(
        gemini_ok(json!({"const": 3})).0,
        json!({"type": "integer", "minimum": 3, "maximum": 3})
    );
    assert_eq!(
        gemini_ok(json!({"type": "number", "const": 3})).0,
        json!({"type": "number", "minimum": 3, "maximum": 3})
    );
    assert_eq!(
        gemini_ok(json!({"const": 2.5})).0,
        json!({"type": "number", "minimum": 2.5, "maximum": 2.5})
    );
    for constant in [json!(true), json!(null), json!({"a": 1}), json!([1])] {
        assert_eq!(
            gemini_refused(json!({"const": constant})),
            ("gemini-enum", "/properties/p/const".to_string())
        );
    }
    assert_eq!(
        gemini_refused(json!({"type": "integer", "const": 2.5})).0,
        "gemini-enum"
    );
    assert_eq!(
        gemini_refused(json!({"type": "string", "const": 3})).0,
        "gemini-enum"
    );
}

#[test]
fn gemini_puts_enums_on_strings_or_refuses_them() {
    assert_eq!(
        gemini_ok(json!({"enum": ["a", "b"]})),
        (
            json!({"enum": ["a", "b"], "type": "string"}),
            vec!["gemini-enum"]
        )
    );
    assert_eq!(
        gemini_ok(json!({"type": "string", "enum": ["a", null]})).0,
        json!({"type": "string", "enum": ["a"], "nullable": true})
    );
    assert_eq!(
        gemini_ok(json!({"type": "integer", "enum": [3, 1, 2]})).0,
        json!({"type": "integer", "minimum": 1, "maximum": 3})
    );
    assert_eq!(
        gemini_ok(json!({"enum": [7]})).0,
        json!({"type": "integer", "minimum": 7, "maximum": 7})
    );
    assert_eq!(
        gemini_ok(json!({"enum": [true, false]})).0,
        json!({"type": "boolean"})
    );
    for refused in [
        json!({"type": "integer", "enum": [1, 5]}),
        json!({"type": "number", "enum": [1, 2]}),
        json!({"enum": ["a", 1]}),
        json!({"enum": [true]}),
        json!({"enum": [null]}),
        json!({"type": "integer", "enum": ["a"]}),
    ] {
        assert_eq!(
            gemini_refused(refused),
            ("gemini-enum", "/properties/p/enum".to_string())
        );
    }
}

#[test]
fn gemini_keeps_properties_and_items_on_their_type() {
    // `properties` on a non-object type constrain nothing: dropped.
    assert_eq!(
        gemini_ok(
            json!({"type": "string", "properties": {"x": {"type": "string"}}, "required": ["x"]})
        ),
        (json!({"type": "string"}), vec!["gemini-object"])
    );
    // Without a `type`, they say what the value is.
    assert_eq!(
        gemini_ok(json!({"properties": {"x": {"type": "string"}}})).0,
        json!({"properties": {"x": {"type": "string"}}, "type": "object"})
    );
    assert_eq!(
        gemini_ok(json!({"type": "integer", "items": {"type": "string"}, "minItems": 1})),
        (json!({"type": "integer"}), vec!["gemini-array"])
    );
    assert_eq!(
        gemini_ok(json!({"items": {"type": "string"}})).0,
        json!({"items": {"type": "string"}, "type": "array"})
    );
}

#[test]
fn gemini_moves_keywords_beside_any_of_into_its_branches() {
    // `"type": ["string", "array"]` becomes an `anyOf`; the `items` beside it belongs to the
    // array branch.
    let (p, rules) = gemini_ok(json!({
        "type": ["string", "array"],
        "items": {"type": "string"},
        "description": "one or several names"
    }));
    assert_eq!(
        p,
        json!({
            "description": "one or several names",
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
        })
    );
    assert!(rules.contains(&"gemini-any-of"), "{rules:?}");
    let (p, _) = gemini_ok(json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}]
    }));
    assert_eq!(
        p["anyOf"][1],
        json!({"required": ["b"], "type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}})
    );
    assert_eq!(p.as_object().map(Map::len), Some(1), "{p}");
    // No array branch: the `items` constrained nothing.
    let (p, _) = gemini_ok(json!({
        "anyOf": [{"type": "string"}, {"type": "integer"}],
        "items": {"type": "string"}
    }));
    assert_eq!(
        p,
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
    // A branch with its own, different `items`: both would have to hold.
    assert_eq!(
        gemini_refused(json!({
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}],
            "items": {"type": "string"}
        })),
        ("gemini-any-of", "/properties/p/anyOf/1/items".to_string())
    );
}

// ---- conformance: the checker catches each shape ----

#[test]
fn conformance_catches_each_openai_strict_violation() {
    use conformance::{violations, Dialect};
    let rules = |schema: Value| -> Vec<(&'static str, String)> {
        violations(Dialect::OpenAiStrict, &schema)
            .into_iter()
            .map(|v| (v.rule, v.path))
            .collect()
    };
    let ok = json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": false});
    assert!(rules(ok.clone()).is_empty());
    let with = |key: &str, property: Value| {
        let mut s = ok.clone();
        s["properties"][key] = property;
        s["required"] = json!(["q", key]);
        s
    };
    assert_eq!(
        rules(json!({"anyOf": [ok.clone()]}))[0],
        ("openai-strict-root", String::new())
    );
    let mut open = ok.clone();
    open.as_object_mut()
        .unwrap()
        .shift_remove("additionalProperties");
    assert_eq!(rules(open), [("openai-strict-objects", String::new())]);
    let mut optional = ok.clone();
    optional["required"] = json!([]);
    assert_eq!(
        rules(optional),
        [("openai-strict-required", "/properties/q".to_string())]
    );
    assert_eq!(
        rules(with("n", json!({"type": "string", "minLength": 1}))),
        [(
            "openai-strict-keywords",
            "/properties/n/minLength".to_string()
        )]
    );
    assert_eq!(
        rules(with("n", json!({"type": "string", "format": "uri"}))),
        [("openai-strict-formats", "/properties/n/format".to_string())]
    );
    assert_eq!(
        rules(with("n", json!({"type": "integer", "format": "int64"}))),
        [("openai-strict-formats", "/properties/n/format".to_string())]
    );
    let mut defs = with("n", json!({"$ref": "#/$defs/N", "description": "n"}));
    defs["$defs"] = json!({"N": {"type": "string"}});
    assert_eq!(
        rules(defs),
        [("openai-strict-ref", "/properties/n/$ref".to_string())]
    );
    assert_eq!(
        rules(with("n", json!({"$ref": "#/$defs/Missing"}))),
        [("openai-strict-ref", "/properties/n/$ref".to_string())]
    );
    let mut deep =
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false});
    for _ in 0..OPENAI_MAX_DEPTH {
        deep = json!({"type": "object", "properties": {"inner": deep}, "required": ["inner"], "additionalProperties": false});
    }
    assert_eq!(
        rules(deep).first().map(|v| v.0),
        Some("openai-strict-limits")
    );
    assert_eq!(
        violations(Dialect::OpenAi, &json!({"type": "string"}))[0].rule,
        "openai-parameters"
    );
}

#[test]
fn conformance_catches_each_gemini_violation() {
    use conformance::{violations, Dialect};
    let first = |property: Value| -> (&'static str, String) {
        let schema = json!({"type": "object", "properties": {"p": property}});
        let v = violations(Dialect::Gemini, &schema);
        assert!(!v.is_empty(), "{schema} passed");
        (v[0].rule, v[0].path.clone())
    };
    assert!(violations(
        Dialect::Gemini,
        &json!({"type": "object", "properties": {"p": {"type": "string", "enum": ["a"], "nullable": true}}})
    )
    .is_empty());
    let at = |rule: &'static str, rest: &str| (rule, format!("/properties/p{rest}"));
    assert_eq!(
        first(json!({"type": "string", "properties": {}})),
        at("gemini-object", "/properties")
    );
    assert_eq!(first(json!({"enum": ["a"]})), at("gemini-enum", "/enum"));
    assert_eq!(
        first(json!({"type": "integer", "enum": [1]})),
        at("gemini-enum", "/enum")
    );
    let beside = json!({"type": "object", "properties": {"p": {"anyOf": [{"type": "array"}], "items": {"type": "string"}}}});
    assert!(violations(Dialect::Gemini, &beside)
        .iter()
        .any(|v| (v.rule, v.path.as_str()) == ("gemini-any-of", "/properties/p/items")));
    assert_eq!(
        first(json!({"type": "string", "items": {"type": "string"}})),
        at("gemini-array", "/items")
    );
    assert_eq!(first(json!({"const": 3})), at("gemini-enum", "/const"));
    assert_eq!(
        first(json!({"$ref": "#/$defs/X"})),
        at("gemini-ref", "/$ref")
    );
    assert_eq!(
        first(json!({"type": "object", "additionalProperties": false})),
        at("gemini-keywords", "/additionalProperties")
    );
    assert_eq!(
        first(json!({"type": ["string", "null"]})),
        at("gemini-union", "/type")
    );
    assert_eq!(
        first(json!({"oneOf": [{"type": "string"}]})),
        at("gemini-union", "/oneOf")
    );
    assert_eq!(
        first(json!({"type": "string", "format": "uri"})),
        at("gemini-formats", "/format")
    );
    for v in violations(
        Dialect::Gemini,
        &json!({"type": "object", "properties": {"p": {"const": 1}}}),
    ) {
        assert!(
            v.rule().source.url.starts_with("https://ai.google.dev/"),
            "{v}"
        );
    }
}

#[test]
fn restore_arguments_follows_optional_models_and_keeps_nulls_a_schema_accepts() {
    // `Optional[Inner]` (pydantic): strict mode makes `Inner.b` required and nullable.
    let schema = json!({
        "type": "object",
        "properties": {
            "opt": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
            "any": {"description": "any JSON value"},
            "nothing": {"const": null},
        },
        "$defs": {"Inner": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]}},
    });
    let mut args = json!({"opt": {"a": "x", "b": null}, "any": null, "nothing": null});
    assert_eq!(restore_arguments(&schema, &mut args), 1);
    assert_eq!(
        args,
        json!({"opt": {"a": "x"}, "any": null, "nothing": null})
    );
}

#[test]
fn restore_arguments_is_bounded_on_a_shared_reference_graph() {
    // 17 definitions, each an `anyOf` of 10 references to the next: walked naively, 10^16 visits.
    let mut defs = serde_json::Map::new();
    for i in 0..17 {
        let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
        defs.insert(format!("D{i}"), json!({"anyOf": vec![next; 10]}));
    }
    defs.insert("D17".into(), json!({"type": "string"}));
    let schema =
        json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/D0"}}, "$defs": defs});
    let started = std::time::Instant::now();
    let mut args = json!({"p": null});
    assert_eq!(restore_arguments(&schema, &mut args), 1);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_reference_graph_that_grows_exponentially_is_not_inlined() {
    // Each definition an `anyOf` of 8 references (with a sibling) to the next: inlined, 8^7 nodes.
    let mut defs = serde_json::Map::new();
    for i in 0..7 {
        let next = json!({"$ref": format!("#/$defs/D{}", i + 1), "description": "next"});
        defs.insert(format!("D{i}"), json!({"anyOf": vec![next; 8]}));
    }
    defs.insert("D7".into(), json!({"type": "string"}));
    let schema = json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/D0", "description": "p"}}, "$defs": defs});
    let openai = openai("bomb", &schema);
    assert_eq!(openai.strict, Some(false));
    assert!(
        openai
            .findings
            .iter()
            .any(|f| f.rule == "openai-strict-limits"),
        "{:?}",
        openai.findings
    );
    let gemini = gemini("bomb", &schema);
    assert!(!gemini.is_ok());
    assert!(
        gemini
            .findings
            .iter()
            .any(|f| f.message.contains("grows past")),
        "{:?}",
        gemini.findings
    );
}

#[test]
fn gemini_refuses_arrays_without_items_and_lone_nulls_and_drops_undeclared_required() {
    let arrays = gemini(
        "t",
        &json!({"type": "object", "properties": {"a": {"type": "array"}}}),
    );
    assert!(!arrays.is_ok());
    assert!(
        arrays
            .findings
            .iter()
            .any(|f| f.rule == "gemini-array" && f.path == "/properties/a"),
        "{:?}",
        arrays.findings
    );
    let null = gemini(
        "t",
        &json!({"type": "object", "properties": {"n": {"type": "null"}}}),
    );
    assert!(
        null.findings
            .iter()
            .any(|f| f.rule == "gemini-nullable" && f.kind == FindingKind::Error),
        "{:?}",
        null.findings
    );
    // `Optional[str]` stays expressible: the `null` branch becomes `nullable`.
    let optional = gemini(
        "t",
        &json!({"type": "object", "properties": {"o": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}),
    );
    assert!(optional.is_ok(), "{:?}", optional.findings);
    let required = gemini(
        "t",
        &json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "ghost"]}),
    );
    assert!(required.is_ok(), "{:?}", required.findings);
    assert_eq!(required.schema["required"], json!(["a"]));
    assert_eq!(rewritten(&required), [("gemini-object", "/required")]);
}

#[test]
fn openai_falls_back_past_the_enum_limits() {
    let values: Vec<String> = (0..1500).map(|i| format!("v{i}")).collect();
    let big = json!({"type": "object", "properties": {"e": {"type": "string", "enum": values}}, "required": ["e"]});
    let e = openai("t", &big);
    assert_eq!(e.strict, Some(false));
    assert!(
        e.findings
            .iter()
            .any(|f| f.rule == "openai-strict-limits" && f.message.contains("1500 `enum` values")),
        "{:?}",
        e.findings
    );
    let long: Vec<String> = (0..300).map(|i| format!("{i:0>60}")).collect();
    let wide = json!({"type": "object", "properties": {"e": {"type": "string", "enum": long}}, "required": ["e"]});
    let e = openai("t", &wide);
    assert_eq!(e.strict, Some(false));
    assert!(
        e.findings.iter().any(|f| f.path == "/properties/e/enum"),
        "{:?}",
        e.findings
    );
    let small = json!({"type": "object", "properties": {"e": {"type": "string", "enum": ["a", "b"]}}, "required": ["e"]});
    assert_eq!(openai("t", &small).strict, Some(true));
}
