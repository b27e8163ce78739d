//! `toolcat import`: real tool surfaces (LiveMCPBench, github-mcp-server snapshots) and the
//! fixtures in `tests/fixtures/import/` become `tools.toml` text that compiles with no error, reads
//! back as the same catalog, and follows the documented rules of `toolcat_import`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolcat_catalog::diagnostics::render_all;
use toolcat_catalog::model::{
    CatalogFile, EffectKind, Exposure, Status, Tier, ToolDecl, Visibility, META_TOOLS,
};
use toolcat_catalog::Compiled;
use toolcat_import::{
    classify, import, import_mcp_tools_json_str, import_with, map_name, ImportError, ImportKind,
    ImportOptions, ImportOutput, McpHints, RenameReason, Transport,
};

/// A file of the real data sets beside the repository (`../shared/data`).
fn data(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data")).join(rel)
}

/// A file under `tests/fixtures/import/`.
fn fixture(rel: &str) -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/import"
    ))
    .join(rel)
}

/// Imports `path`, failing with the error's message.
fn imported(kind: ImportKind, path: &Path, options: &ImportOptions) -> ImportOutput {
    import_with(kind, path, options)
        .unwrap_or_else(|e| panic!("importing `{}` failed: {e}", path.display()))
}

/// Compiles an import's text with the pipeline `toolcat check` runs, failing with the rendered
/// diagnostics when any is an error.
fn compiles(out: &ImportOutput) -> Compiled {
    toolcat_catalog::compile_str("imported.toml", &out.text).unwrap_or_else(|diagnostics| {
        panic!(
            "the imported catalog does not compile:\n{}",
            render_all(&diagnostics, "imported.toml", &out.text)
        )
    })
}

/// Reads the text back with the loader `toolcat check` uses and compares it, as JSON, with the
/// catalog the import returned.
fn assert_round_trips(out: &ImportOutput) {
    let back: CatalogFile = toolcat_catalog::load::parse("imported.toml", &out.text)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, "imported.toml", &out.text)))
        .file;
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        serde_json::to_value(&out.catalog).unwrap(),
        "the text must read back as the catalog the import returned"
    );
}

fn row<'a>(out: &'a ImportOutput, name: &str) -> &'a ToolDecl {
    out.catalog
        .tool
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no row named `{name}`"))
}

fn exported(out: &ImportOutput, tool: &ToolDecl) -> String {
    match out
        .catalog
        .mcp_server
        .get(&tool.source)
        .and_then(|s| s.namespace.as_ref())
    {
        Some(ns) => format!("{ns}__{}", tool.name),
        None => tool.name.clone(),
    }
}

/// The meta-tool rows are emitted exactly as the discovery rules require.
fn assert_meta_tools(out: &ImportOutput) {
    for meta in META_TOOLS {
        let t = row(out, meta);
        assert_eq!(
            (t.tier, t.source.as_str()),
            (Tier::Loop, "loop"),
            "`{meta}`"
        );
        assert_eq!(
            (t.visibility, t.effect),
            (Visibility::Inline, EffectKind::Read),
            "`{meta}`"
        );
        assert_eq!(t.toolsets, ["discovery"], "`{meta}`");
    }
    assert_eq!(out.report.meta_tools, META_TOOLS.len());
}

// ---- real catalogs ----

/// The LiveMCPBench servers and tools, read straight from the JSON: (server key, tool object).
fn livemcpbench_tools() -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(data("livemcpbench/tools.json")).unwrap();
    let entries: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for entry in entries {
        for (key, list) in entry["tools"].as_object().unwrap() {
            for tool in list["tools"].as_array().unwrap() {
                out.push((key.clone(), tool.clone()));
            }
        }
    }
    out
}

#[test]
fn livemcpbench_imports_527_tools_over_70_servers_and_compiles() {
    require_data!();
    let out = imported(
        ImportKind::LiveMcpBench,
        &data("livemcpbench/tools.json"),
        &ImportOptions::default(),
    );
    let compiled = compiles(&out);
    assert_round_trips(&out);
    assert_meta_tools(&out);

    let source = livemcpbench_tools();
    let servers: BTreeSet<&str> = source.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        (source.len(), servers.len()),
        (527, 70),
        "the data set as SOURCE.md describes it"
    );
    assert_eq!((out.report.tools, out.report.servers), (527, 70));
    assert_eq!(compiled.tables.len, 527 + META_TOOLS.len());

    // Every empty description was derived, and listed.
    let empty = source
        .iter()
        .filter(|(_, t)| t["description"].as_str().unwrap_or("").trim().is_empty())
        .count();
    assert_eq!(empty, 19);
    assert_eq!(out.report.derived_descriptions.len(), empty);

    // Exported names are unique, valid and within 64 characters.
    let names: BTreeSet<&str> = compiled
        .tables
        .exported_names
        .iter()
        .map(|n| n.as_ref())
        .collect();
    assert_eq!(names.len(), compiled.tables.len);
    assert!(names
        .iter()
        .all(|n| n.len() <= 64 && toolcat_catalog::model::is_valid_name(n)));

    // A name on several servers is namespaced on every one of them, and only those servers are.
    let mut servers_of: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (key, tool) in &source {
        servers_of
            .entry(tool["name"].as_str().unwrap())
            .or_default()
            .insert(key);
    }
    let repeated: BTreeMap<&str, BTreeSet<&str>> = servers_of
        .into_iter()
        .filter(|(_, s)| s.len() > 1)
        .collect();
    assert_eq!(
        repeated.len(),
        13,
        "13 names repeat across servers (SOURCE.md)"
    );
    let must_namespace: BTreeSet<&str> = repeated.values().flatten().copied().collect();
    for (name, decl) in &out.catalog.mcp_server {
        assert_eq!(
            decl.namespace.is_some(),
            must_namespace.contains(name.as_str()),
            "server `{name}`: namespaced exactly when it shares a tool name"
        );
    }
    for (name, servers) in &repeated {
        for server in servers {
            let t = out
                .catalog
                .tool
                .iter()
                .find(|t| t.source == *server && t.name == *name)
                .unwrap_or_else(|| panic!("`{name}` of `{server}` is missing"));
            assert_eq!(exported(&out, t), format!("{server}__{name}"));
        }
    }

    // Safe-side defaults: no annotations → destructive, gated, full, open world.
    let unannotated = source
        .iter()
        .filter(|(_, t)| t["annotations"].is_null())
        .count();
    assert_eq!(
        out.report.effects[EffectKind::Destructive.code() as usize],
        unannotated
    );
    let bare = out
        .catalog
        .tool
        .iter()
        .find(|t| t.name == "get_current_time")
        .unwrap();
    assert_eq!(
        (bare.effect, bare.tier, bare.exposure, bare.open_world),
        (EffectKind::Destructive, Tier::Gated, Exposure::Full, true)
    );

    // One toolset per server, one composite per category.
    let categories: BTreeSet<String> = {
        let text = std::fs::read_to_string(data("livemcpbench/tools.json")).unwrap();
        let entries: Vec<Value> = serde_json::from_str(&text).unwrap();
        entries
            .iter()
            .map(|e| e["category"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        out.catalog.toolset.len(),
        70 + categories.len() + 1,
        "servers + categories + discovery"
    );
    let file_access = &out.catalog.toolset["category_file_access"];
    assert!(file_access.includes.contains(&"filesystem".to_string()));
    assert!(
        out.catalog
            .tool
            .iter()
            .all(|t| t.visibility == Visibility::Discoverable
                || META_TOOLS.contains(&t.name.as_str()))
    );
}

#[test]
fn livemcpbench_import_loads_into_the_runtime_catalog() {
    require_data!();
    let out = import(ImportKind::LiveMcpBench, &data("livemcpbench/tools.json")).unwrap();
    let catalog = toolcat::Catalog::from_source("imported.toml", &out.text)
        .unwrap_or_else(|e| panic!("the runtime rejects the imported catalog: {e}"));
    assert_eq!(catalog.len(), 527 + META_TOOLS.len());
}

#[test]
fn github_snapshots_import_92_normal_tools_and_flagged_ones_as_experimental() {
    require_data!();
    let out = imported(
        ImportKind::GithubToolsnaps,
        &data("github-mcp-server/toolsnaps"),
        &ImportOptions::default(),
    );
    let compiled = compiles(&out);
    assert_round_trips(&out);
    assert_meta_tools(&out);

    let snaps = std::fs::read_dir(data("github-mcp-server/toolsnaps"))
        .unwrap()
        .count();
    assert_eq!(snaps, 117);
    let tools = &out.catalog.tool[out.report.meta_tools..];
    let active = tools.iter().filter(|t| t.status == Status::Active).count();
    let experimental = tools
        .iter()
        .filter(|t| t.status == Status::Experimental)
        .count();
    assert_eq!((active, experimental), (92, 25));
    assert_eq!(out.report.experimental.len(), 25);
    // No flagged snapshot shares its tool name with the normal surface, so none is skipped.
    assert!(out.report.skipped_variants.is_empty());
    assert_eq!(compiled.tables.len, 117 + META_TOOLS.len());

    // Toolsets come from toolsets.json; `get_label` is in two of them.
    assert_eq!(row(&out, "get_label").toolsets, ["issues", "labels"]);
    assert!(
        !out.catalog.toolset.contains_key("all") && !out.catalog.toolset.contains_key("default")
    );
    assert_eq!(
        out.report.empty_toolsets,
        ["copilot_spaces", "github_support_docs_search"]
    );
    // Default toolsets: their active tools are inline, and the `default` preset turns them on.
    let preset = &out.catalog.preset["default"];
    assert_eq!(preset.profile, "full");
    assert_eq!(
        preset.toolsets.last().map(String::as_str),
        Some("discovery")
    );
    for t in tools {
        let in_default = t.toolsets.iter().any(|s| preset.toolsets.contains(s));
        assert_eq!(
            t.visibility == Visibility::Inline,
            in_default && t.status == Status::Active,
            "`{}`",
            t.name
        );
    }
    // Names are kept as the server gives them: no namespace needed.
    assert!(out.catalog.mcp_server["github"].namespace.is_none());
    // `create_pull_request` declares no `destructiveHint`: taken as destructive.
    let pr = row(&out, "create_pull_request");
    assert_eq!(
        (pr.effect, pr.tier, pr.exposure),
        (EffectKind::Destructive, Tier::Gated, Exposure::Full)
    );
    let title = row(&out, "update_issue_title");
    assert_eq!(
        (title.effect, title.tier, title.exposure),
        (EffectKind::Write, Tier::Gated, Exposure::Staging)
    );
    let read = row(&out, "get_me");
    assert_eq!(
        (read.effect, read.tier, read.exposure),
        (EffectKind::Read, Tier::Silent, Exposure::ReadOnly)
    );
}

#[test]
fn github_feature_flag_turned_on_makes_its_tools_active() {
    require_data!();
    let options = ImportOptions {
        feature_flags: vec!["issues_granular".to_string()],
        ..ImportOptions::default()
    };
    let out = imported(
        ImportKind::GithubToolsnaps,
        &data("github-mcp-server/toolsnaps"),
        &options,
    );
    compiles(&out);
    let tools = &out.catalog.tool[out.report.meta_tools..];
    let active = tools.iter().filter(|t| t.status == Status::Active).count();
    assert_eq!(
        active,
        92 + 11,
        "`issues_granular` has 11 tools (SOURCE.md)"
    );
    assert_eq!(row(&out, "create_issue").status, Status::Active);
    assert_eq!(
        row(&out, "create_issue").visibility,
        Visibility::Inline,
        "issues is a default toolset"
    );
    assert_eq!(row(&out, "find_duplicate").status, Status::Experimental);
    assert!(out.text.starts_with(
        "# tools.toml made by `toolcat import --from github-toolsnaps --feature-flag issues_granular "
    ));
    assert!(out.text.contains("# Feature flags on: issues_granular."));
}

#[test]
fn github_unknown_feature_flag_is_an_error_naming_the_known_ones() {
    require_data!();
    let options = ImportOptions {
        feature_flags: vec!["issue_granular".to_string()],
        ..ImportOptions::default()
    };
    let err = import_with(
        ImportKind::GithubToolsnaps,
        &data("github-mcp-server/toolsnaps"),
        &options,
    )
    .unwrap_err();
    assert!(matches!(err, ImportError::UnknownFeatureFlag { .. }));
    let message = err.to_string();
    assert!(
        message.contains("`issue_granular`") && message.contains("`issues_granular`"),
        "{message}"
    );
}

// ---- fixtures ----

#[test]
fn feature_flag_variant_of_an_existing_tool_is_skipped_by_default() {
    let dir = fixture("github/toolsnaps");
    let out = imported(ImportKind::GithubToolsnaps, &dir, &ImportOptions::default());
    compiles(&out);
    // Without toolsets.json the flag comes from the file name `X_ff_Y.snap`.
    let skipped: Vec<(&str, &str)> = out
        .report
        .skipped_variants
        .iter()
        .map(|v| (v.tool.as_str(), v.flag.as_str()))
        .collect();
    assert_eq!(skipped, [("get_thing", "rich_things")]);
    assert_eq!(
        row(&out, "get_thing").description,
        "Get one thing of a repository by its id."
    );
    // A variant whose base is missing is imported, experimental and discoverable.
    let label = row(&out, "label_thing");
    assert_eq!(
        (label.status, label.visibility),
        (Status::Experimental, Visibility::Discoverable)
    );
    assert_eq!(row(&out, "delete_thing").status, Status::Active);
    // No toolsets.json: one toolset for the server.
    assert_eq!(row(&out, "delete_thing").toolsets, ["github"]);
}

#[test]
fn feature_flag_turned_on_replaces_the_tool_in_place() {
    let dir = fixture("github/toolsnaps");
    let options = ImportOptions {
        feature_flags: vec!["rich_things".to_string()],
        ..ImportOptions::default()
    };
    let out = imported(ImportKind::GithubToolsnaps, &dir, &options);
    compiles(&out);
    let thing = row(&out, "get_thing");
    assert!(
        thing.description.contains("with its history"),
        "{}",
        thing.description
    );
    assert_eq!(thing.status, Status::Active);
    assert!(out.report.skipped_variants.is_empty());
    assert_eq!(out.report.replaced_by_variant.len(), 1);
    let order: Vec<&str> = out.catalog.tool.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        &order[META_TOOLS.len()..],
        ["delete_thing", "get_thing", "label_thing"]
    );
}

fn notes_fixture() -> ImportOutput {
    let text = std::fs::read_to_string(fixture("mcp_tools.json")).unwrap();
    import_mcp_tools_json_str(
        Path::new("tests/fixtures/import/mcp_tools.json"),
        &text,
        "notes",
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn mcp_tools_json_fixture_snapshot() {
    let out = notes_fixture();
    insta::assert_snapshot!("mcp_tools_json_fixture", out.text);
    insta::assert_snapshot!("mcp_tools_json_fixture_report", out.report.to_string());
}

#[test]
fn mcp_tools_json_fixture_round_trips_and_compiles() {
    let out = notes_fixture();
    assert_round_trips(&out);
    let compiled = compiles(&out);
    assert_meta_tools(&out);
    // The schema survives whole, apart from the `null`s TOML cannot hold.
    let source: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("mcp_tools.json")).unwrap()).unwrap();
    let i = compiled
        .tables
        .names
        .iter()
        .position(|n| n == "delete_note")
        .unwrap();
    let schema: Value =
        serde_json::from_str(compiled.tables.input_schema[i].as_deref().unwrap()).unwrap();
    assert_eq!(schema, source["tools"][2]["inputSchema"]);
    let search = row(&out, "search_notes").input_schema.as_ref().unwrap();
    assert!(
        search["properties"]["tags"].get("default").is_none(),
        "`default: null` left out"
    );
    assert_eq!(search["properties"]["limit"]["default"], 10);
    let export = row(&out, "export-note").input_schema.as_ref().unwrap();
    assert_eq!(
        export["properties"]["format"]["enum"],
        serde_json::json!(["markdown", "html"])
    );
    assert_eq!(out.report.schema_changes.len(), 2);
    // Same input, same bytes.
    assert_eq!(notes_fixture().text, out.text);
}

/// A tool's `outputSchema` becomes its row's `output_schema` (fitted to TOML like an input
/// schema) and compiles into the tables the runtime serves it from; one that is not an object
/// schema is left out with a warning naming the tool, and no warning is left about the others.
#[test]
fn an_output_schema_is_carried_over_and_a_non_object_one_is_warned() {
    let out = notes_fixture();
    let compiled = compiles(&out);
    let export = row(&out, "export-note");
    let expected =
        serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}});
    assert_eq!(export.output_schema.as_ref(), Some(&expected));
    let i = compiled
        .tables
        .names
        .iter()
        .position(|n| n == "export-note")
        .unwrap();
    let served: Value =
        serde_json::from_str(compiled.tables.output_schema[i].as_deref().unwrap()).unwrap();
    assert_eq!(served, expected);
    assert!(row(&out, "delete_note").output_schema.is_none());
    assert!(
        !out.report
            .warnings
            .iter()
            .any(|w| w.contains("outputSchema")),
        "{}",
        out.report
    );

    let text = r#"{"tools": [
        {"name": "count", "inputSchema": {"type": "object"},
         "outputSchema": {"type": "object", "properties": {"n": {"type": "integer", "default": null}}, "required": ["n"]}},
        {"name": "names", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array", "items": {"type": "string"}}},
        {"name": "word", "inputSchema": {"type": "object"}, "outputSchema": "a word"},
        {"name": "plain", "inputSchema": {"type": "object"}, "outputSchema": null}
    ]}"#;
    let out = import_mcp_tools_json_str(Path::new("shapes.json"), text, "shapes")
        .unwrap_or_else(|e| panic!("{e}"));
    compiles(&out);
    assert_eq!(
        row(&out, "count").output_schema.as_ref(),
        Some(
            &serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
        )
    );
    for name in ["names", "word", "plain"] {
        assert!(row(&out, name).output_schema.is_none(), "{name}");
    }
    let changes: Vec<(&str, &str)> = out
        .report
        .schema_changes
        .iter()
        .map(|c| (c.tool.name.as_str(), c.field))
        .collect();
    assert_eq!(changes, [("count", "output_schema")]);
    let report = out.report.to_string();
    assert!(
        report.contains("output schemas changed to fit TOML (1 tool: 1 `null` value left out, 0 large integers made floats): `count`"),
        "{report}"
    );
    let warned: Vec<&String> = out
        .report
        .warnings
        .iter()
        .filter(|w| w.contains("outputSchema"))
        .collect();
    assert_eq!(warned.len(), 2, "{warned:#?}");
    assert!(
        warned[0].contains("`names`") && warned[0].contains("has `type` \"array\""),
        "{warned:#?}"
    );
    assert!(
        warned[1].contains("`word`") && warned[1].contains("is a string, not an object"),
        "{warned:#?}"
    );
}

#[test]
fn mcp_tools_json_fixture_follows_the_rules() {
    let out = notes_fixture();
    // `.` and space are mapped to `_`, and the report says so.
    row(&out, "notes_append");
    row(&out, "sync_now");
    let renamed: Vec<(&str, &str)> = out
        .report
        .renamed
        .iter()
        .map(|r| (r.original.as_str(), r.name.as_str()))
        .collect();
    assert_eq!(
        renamed,
        [("notes.append", "notes_append"), ("sync now", "sync_now")]
    );
    // readOnlyHint → read, silent, read-only.
    let search = row(&out, "search_notes");
    assert_eq!(
        (
            search.effect,
            search.tier,
            search.exposure,
            search.open_world
        ),
        (EffectKind::Read, Tier::Silent, Exposure::ReadOnly, false)
    );
    // Non-destructive write → staging.
    let append = row(&out, "notes_append");
    assert_eq!(
        (append.effect, append.tier, append.exposure),
        (EffectKind::Write, Tier::Gated, Exposure::Staging)
    );
    // Missing annotations → gated, destructive, not read-only, open world.
    let delete = row(&out, "delete_note");
    assert_eq!(
        (
            delete.effect,
            delete.tier,
            delete.exposure,
            delete.idempotent,
            delete.open_world
        ),
        (
            EffectKind::Destructive,
            Tier::Gated,
            Exposure::Full,
            false,
            true
        )
    );
    // Empty descriptions are derived from the title, else from the name, and listed.
    assert_eq!(
        row(&out, "export-note").description,
        "Export a note as Markdown (from the `notes` MCP server, which gives no description)"
    );
    assert_eq!(
        row(&out, "sync_now").description,
        "Sync now (from the `notes` MCP server, which gives no description)"
    );
    let derived: Vec<&str> = out
        .report
        .derived_descriptions
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(derived, ["export-note", "sync_now"]);
    // The title is a keyword when it adds words.
    assert_eq!(row(&out, "notes_append").keywords, ["Append to a note"]);
    assert_eq!(row(&out, "search_notes").keywords, ["Search notes"]);
    // No transport in a tools/list: a marked placeholder.
    assert_eq!(
        out.catalog.mcp_server["notes"].command.as_deref(),
        Some("notes")
    );
    assert_eq!(out.report.placeholder_transport, ["notes"]);
    assert!(out.text.contains("# placeholder: `command` below"));
}

#[test]
fn mcp_tools_json_accepts_the_shapes_of_a_tools_list_exchange() {
    let tool = r#"{"name": "ping", "description": "Check the server answers.", "inputSchema": {"type": "object"}}"#;
    let shapes = [
        format!("[{tool}]"),
        format!(r#"{{"tools": [{tool}]}}"#),
        format!(
            r#"{{"jsonrpc": "2.0", "id": 1, "result": {{"tools": [{tool}], "nextCursor": "abc"}}}}"#
        ),
    ];
    for text in &shapes {
        let out = import_mcp_tools_json_str(Path::new("list.json"), text, "pinger")
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(out.report.tools, 1, "{text}");
        compiles(&out);
    }
    let paged = import_mcp_tools_json_str(Path::new("list.json"), &shapes[2], "pinger").unwrap();
    assert!(paged
        .report
        .warnings
        .iter()
        .any(|w| w.contains("nextCursor")));

    let error_reply = r#"{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}"#;
    let err = import_mcp_tools_json_str(Path::new("list.json"), error_reply, "pinger").unwrap_err();
    assert!(err.to_string().contains("JSON-RPC error reply"), "{err}");
    let empty = import_mcp_tools_json_str(Path::new("list.json"), r#"{"tools": []}"#, "pinger")
        .unwrap_err();
    assert!(matches!(empty, ImportError::NoTools { .. }));
    let not_json =
        import_mcp_tools_json_str(Path::new("list.json"), "tools:", "pinger").unwrap_err();
    assert!(matches!(not_json, ImportError::Json { .. }));
}

#[test]
fn transport_option_replaces_the_placeholder() {
    let options = ImportOptions {
        server_name: Some("notes".to_string()),
        transport: Some(Transport::Http {
            url: "http://127.0.0.1:3000/mcp".to_string(),
        }),
        ..ImportOptions::default()
    };
    let out = imported(
        ImportKind::McpToolsJson,
        &fixture("mcp_tools.json"),
        &options,
    );
    compiles(&out);
    let server = &out.catalog.mcp_server["notes"];
    assert_eq!(
        (server.command.as_deref(), server.url.as_deref()),
        (None, Some("http://127.0.0.1:3000/mcp"))
    );
    assert!(out.report.placeholder_transport.is_empty());
    // Without a server name, the file name names the server.
    let out = imported(
        ImportKind::McpToolsJson,
        &fixture("mcp_tools.json"),
        &ImportOptions::default(),
    );
    assert!(out.catalog.mcp_server.contains_key("mcp_tools"));
}

#[test]
fn tool_named_like_a_meta_tool_is_renamed_after_its_server() {
    let text = r#"{"tools": [
        {"name": "tool_search", "description": "Search the plugin registry.", "inputSchema": {"type": "object"}},
        {"name": "install", "description": "Install a plugin.", "inputSchema": {"type": "object"}}
    ]}"#;
    let out = import_mcp_tools_json_str(Path::new("plugins.json"), text, "plugins").unwrap();
    compiles(&out);
    assert_eq!(out.catalog.mcp_server["plugins"].namespace, None);
    let names: Vec<&str> = out.catalog.tool.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        &names[META_TOOLS.len()..],
        ["plugins_tool_search", "install"]
    );
    assert_eq!(out.report.renamed[0].reasons, [RenameReason::Reserved]);
}

#[test]
fn livemcpbench_fixture_pins_names_namespaces_and_toolsets() {
    let out = imported(
        ImportKind::LiveMcpBench,
        &fixture("livemcpbench_small.json"),
        &ImportOptions::default(),
    );
    compiles(&out);
    assert_round_trips(&out);
    let servers = &out.catalog.mcp_server;
    // Server names follow the charset rule; `search` on two servers namespaces both.
    assert_eq!(
        servers.keys().collect::<Vec<_>>(),
        ["12306-mcp", "news", "orphan", "web_search"]
    );
    assert_eq!(
        servers["web_search"].namespace.as_deref(),
        Some("web_search")
    );
    assert_eq!(servers["news"].namespace.as_deref(), Some("news"));
    assert_eq!(servers["12306-mcp"].namespace, None);
    assert_eq!(
        servers["12306-mcp"].url.as_deref(),
        Some("http://127.0.0.1:8765/mcp")
    );
    let exported_names: Vec<String> = out.catalog.tool[META_TOOLS.len()..]
        .iter()
        .map(|t| exported(&out, t))
        .collect();
    let long = exported_names
        .iter()
        .find(|n| n.starts_with("get_the_complete"))
        .unwrap()
        .clone();
    assert_eq!(long.len(), 64);
    assert_eq!(
        exported_names,
        [
            "web_search__search",
            "web_search__web_search_tool_search",
            "news__search",
            "news__getTopHeadlines",
            "_2-stop-search",
            long.as_str(),
            "ping",
        ]
    );
    let reasons: BTreeMap<&str, &[RenameReason]> = out
        .report
        .renamed
        .iter()
        .map(|r| (r.original.as_str(), r.reasons.as_slice()))
        .collect();
    assert_eq!(reasons["2-stop-search"], [RenameReason::Leading]);
    assert_eq!(
        reasons["get_the_complete_timetable_of_every_train_that_stops_at_a_given_station_today"],
        [RenameReason::Length]
    );
    assert_eq!(
        row(&out, "getTopHeadlines").description,
        "Get top headlines (from the `news` MCP server, which gives no description)"
    );
    // `annotations: null` and null hints count as missing.
    let search = out
        .catalog
        .tool
        .iter()
        .find(|t| t.source == "web_search" && t.name == "search")
        .unwrap();
    assert_eq!(
        (search.effect, search.tier),
        (EffectKind::Destructive, Tier::Gated)
    );
    let plugins = row(&out, "web_search_tool_search");
    assert_eq!(
        (plugins.effect, plugins.tier),
        (EffectKind::Read, Tier::Silent)
    );
    // Category toolsets include their servers' toolsets.
    assert_eq!(
        out.catalog.toolset["category_travel"].includes,
        ["12306-mcp", "orphan"]
    );
    assert_eq!(
        out.catalog.toolset["category_discovery"].includes,
        ["web_search", "news"]
    );
    assert_eq!(out.report.placeholder_transport, ["orphan"]);
    assert!(out
        .report
        .warnings
        .iter()
        .any(|w| w.contains("`news`") && w.contains("`env`")));
}

// ---- rule functions ----

#[test]
fn classify_takes_every_missing_hint_on_the_safe_side() {
    use EffectKind::*;
    let cases = [
        // (readOnly, destructive, idempotent, openWorld) → (effect, tier, exposure, idempotent, open_world)
        (
            (Some(true), None, None, None),
            (Read, Tier::Silent, Exposure::ReadOnly, false, true),
        ),
        (
            (Some(true), Some(false), Some(true), Some(false)),
            (Read, Tier::Silent, Exposure::ReadOnly, true, false),
        ),
        // Contradictory hints: the destructive reading wins.
        (
            (Some(true), Some(true), Some(true), Some(false)),
            (Destructive, Tier::Gated, Exposure::Full, true, false),
        ),
        (
            (Some(false), Some(false), None, None),
            (Write, Tier::Gated, Exposure::Staging, false, true),
        ),
        (
            (None, Some(false), Some(true), Some(false)),
            (Write, Tier::Gated, Exposure::Staging, true, false),
        ),
        (
            (Some(false), Some(true), None, None),
            (Destructive, Tier::Gated, Exposure::Full, false, true),
        ),
        (
            (Some(false), None, None, None),
            (Destructive, Tier::Gated, Exposure::Full, false, true),
        ),
        (
            (None, None, None, None),
            (Destructive, Tier::Gated, Exposure::Full, false, true),
        ),
    ];
    for ((read_only, destructive, idempotent, open_world), expected) in cases {
        let hints = McpHints {
            read_only,
            destructive,
            idempotent,
            open_world,
        };
        let c = classify(&hints);
        assert_eq!(
            (c.effect, c.tier, c.exposure, c.idempotent, c.open_world),
            expected,
            "{hints:?}"
        );
    }
}

#[test]
fn map_name_follows_the_charset_rule() {
    let cases = [
        ("search_notes", "search_notes"),
        ("get-user", "get-user"),
        ("notes.append", "notes_append"),
        ("fs/read file", "fs_read_file"),
        ("a..b", "a_b"),
        ("  trim me  ", "trim_me"),
        ("café_au_lait", "caf_au_lait"),
        ("八字", "tool"),
        ("", "tool"),
        ("-leading-dash.", "leading-dash"),
        ("Ant Design Components", "Ant_Design_Components"),
    ];
    for (raw, mapped) in cases {
        assert_eq!(map_name(raw, "tool"), mapped, "{raw:?}");
    }
}

#[test]
fn import_kind_spellings_match_the_cli() {
    for kind in ImportKind::ALL {
        assert_eq!(ImportKind::parse(kind.as_str()), Some(*kind));
        assert_eq!(kind.as_str().parse::<ImportKind>().unwrap(), *kind);
    }
    let err = "mcp-json".parse::<ImportKind>().unwrap_err();
    assert!(err.to_string().contains("`mcp-tools-json`"), "{err}");
}

#[test]
fn missing_path_is_an_error_naming_it() {
    let path = fixture("no_such_file.json");
    let err = import(ImportKind::LiveMcpBench, &path).unwrap_err();
    assert!(matches!(err, ImportError::Read { .. }));
    assert!(err.to_string().contains("no_such_file.json"), "{err}");
}

#[test]
fn json_with_a_byte_order_mark_imports_like_without() {
    let plain = fixture("mcp_tools.json");
    let text = std::fs::read_to_string(&plain).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marked = dir.path().join("mcp_tools.json");
    std::fs::write(&marked, format!("\u{feff}{text}")).unwrap();
    let options = ImportOptions::default();
    let a = imported(ImportKind::McpToolsJson, &plain, &options);
    let b = imported(ImportKind::McpToolsJson, &marked, &options);
    let json = |out: &ImportOutput| serde_json::to_value(&out.catalog).unwrap();
    assert_eq!(json(&a), json(&b));
    assert!(!a.catalog.tool.is_empty());
}

#[test]
fn only_regular_files_are_read() {
    // A device would never end; a directory is not a file of this source kind.
    for path in [Path::new("/dev/zero").to_path_buf(), fixture("")] {
        let err = import(ImportKind::McpToolsJson, &path).unwrap_err();
        assert!(matches!(err, ImportError::Read { .. }), "{err}");
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
}

#[test]
fn mcp_tools_json_refuses_a_livemcpbench_file() {
    let path = fixture("livemcpbench_small.json");
    let err = import(ImportKind::McpToolsJson, &path).unwrap_err();
    assert!(matches!(err, ImportError::Shape { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("did you mean `--from livemcpbench`?"),
        "{err}"
    );
    // The same file is accepted by the source kind it belongs to.
    imported(ImportKind::LiveMcpBench, &path, &ImportOptions::default());
}

#[test]
fn livemcpbench_config_transports_are_cleaned_up() {
    let server = |key: &str, config: &str| {
        format!(
            r#"{{"name": "{key}", "description": "d", "config": {{"mcpServers": {{"{key}": {config}}}}},
               "tools": {{"{key}": {{"tools": [{{"name": "ping_{key}", "description": "Pings the {key} host once.",
               "inputSchema": {{"type": "object"}}}}]}}}}}}"#
        )
    };
    let text = format!(
        "[{}, {}, {}]",
        server(
            "both",
            r#"{"command": "npx", "args": ["srv"], "url": "https://x.invalid/mcp"}"#
        ),
        server(
            "blank",
            r#"{"command": " ", "url": "https://y.invalid/mcp"}"#
        ),
        server(
            "odd",
            r#"{"command": "srv", "args": ["--port", 8080, true, null, {"a": 1}]}"#
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(&path, text).unwrap();
    let out = imported(ImportKind::LiveMcpBench, &path, &ImportOptions::default());
    compiles(&out);
    let servers = &out.catalog.mcp_server;
    assert_eq!(servers["both"].command.as_deref(), Some("npx"));
    assert_eq!(servers["both"].url, None);
    assert_eq!(servers["blank"].command, None);
    assert_eq!(
        servers["blank"].url.as_deref(),
        Some("https://y.invalid/mcp")
    );
    assert_eq!(servers["odd"].args, ["--port", "8080", "true"]);
    let warnings = out.report.warnings.join("\n");
    assert!(
        warnings.contains("server `both` states both `command`"),
        "{warnings}"
    );
    for k in [1, 2, 3, 4] {
        assert!(
            warnings.contains(&format!("server `odd`: argument {k} of `args`")),
            "{warnings}"
        );
    }
}

#[test]
fn contradictory_hints_import_gated_with_a_warning() {
    let text = r#"{"tools": [{"name": "wipe_cache", "description": "Clears the cache of the host.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": true, "destructiveHint": true}}]}"#;
    let out = import_mcp_tools_json_str(Path::new("list.json"), text, "cache").unwrap();
    let row = row(&out, "wipe_cache");
    assert_eq!(row.effect, EffectKind::Destructive);
    assert_eq!(row.tier, Tier::Gated);
    let warnings = out.report.warnings.join("\n");
    assert!(
        warnings.contains("`wipe_cache` of server `cache` has both `readOnlyHint: true` and `destructiveHint: true`"),
        "{warnings}"
    );
    compiles(&out);
}

#[test]
fn a_mapped_name_never_takes_the_name_a_server_serves_and_every_renamed_row_keeps_the_servers() {
    // The dotted tool comes first: it still leaves `admin_tools_delete` to the tool the server
    // serves under that name, and takes a suffix itself.
    let text = r#"{"tools": [
        {"name": "admin.tools.delete", "description": "Deletes every admin tool.", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}},
        {"name": "admin_tools_delete", "description": "Deletes one admin tool by id.", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}},
        {"name": "tool_search", "description": "Searches the admin tools.", "inputSchema": {"type": "object", "properties": {}}}
    ]}"#;
    let out = import_mcp_tools_json_str(Path::new("list.json"), text, "admin").unwrap();
    compiles(&out);
    let rows: Vec<(&str, Option<&str>)> = out
        .catalog
        .tool
        .iter()
        .filter(|t| t.source == "admin")
        .map(|t| (t.name.as_str(), t.remote_name.as_deref()))
        .collect();
    assert_eq!(
        rows,
        [
            // `_` and the CRC-32 of `admin.tools.delete`.
            ("admin_tools_delete_2da03d2d", Some("admin.tools.delete")),
            ("admin_tools_delete", None),
            ("admin_tool_search", Some("tool_search")),
        ]
    );
    assert!(
        out.text.contains("remote_name = \"admin.tools.delete\""),
        "{}",
        out.text
    );
}
