//! The Code Mode measurement set (`tests/fixtures/code_mode/tasks.json`) agrees with its fixtures:
//! every expected answer is recomputed here from `workspace/` and from the repository
//! `make_repo.sh` builds (history through the `git` command line), and every tool a task names is
//! a read tool of the reference catalog. No Code Mode is involved; the set cannot drift from the
//! files it is about.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::{json, Value};
use toolcat::ToolSource;
use toolcat_catalog::model::EffectKind;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/code_mode");

/// Most bytes the checked-in workspace may hold: a few dozen small files.
const WORKSPACE_MAX_BYTES: u64 = 200 * 1024;

fn tasks_file() -> Value {
    let path = Path::new(FIXTURE).join("tasks.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("`{}` does not read: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("`{}` is not JSON: {e}", path.display()))
}

fn tasks(file: &Value) -> &[Value] {
    file["tasks"].as_array().expect("`tasks` is an array")
}

fn str_field<'v>(task: &'v Value, field: &str) -> &'v str {
    task[field]
        .as_str()
        .unwrap_or_else(|| panic!("task {}: `{field}` is not a string", task["id"]))
}

/// The checked-in workspace, which is also the working tree of the built repository.
struct Workspace {
    root: PathBuf,
    /// Every file, as a `/`-separated path relative to the root, sorted.
    files: Vec<String>,
}

impl Workspace {
    fn open(root: &Path) -> Workspace {
        let mut files: Vec<String> = walkdir::WalkDir::new(root)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git")
            .map(|e| e.expect("a workspace entry reads"))
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                let rel = e.path().strip_prefix(root).expect("under the root");
                rel.iter()
                    .map(|p| p.to_str().expect("fixture paths are UTF-8"))
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        files.sort();
        Workspace {
            root: root.to_path_buf(),
            files,
        }
    }

    fn under<'w>(&'w self, dir: &'w str) -> impl Iterator<Item = &'w str> + 'w {
        self.files
            .iter()
            .map(String::as_str)
            .filter(move |f| f.starts_with(dir) && f.as_bytes().get(dir.len()) == Some(&b'/'))
    }

    fn text(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel))
            .unwrap_or_else(|e| panic!("`{rel}` does not read: {e}"))
    }

    fn has(&self, rel: &str) -> bool {
        self.files.binary_search_by(|f| f.as_str().cmp(rel)).is_ok()
    }

    /// Lines as `str::lines` counts them, as `grep` and `read_file` do.
    fn line_count(&self, rel: &str) -> usize {
        self.text(rel).lines().count()
    }

    /// The texts after `TODO:` on the lines that hold it, trimmed, in line order.
    fn todos(&self, rel: &str) -> Vec<String> {
        self.text(rel).lines().filter_map(todo_text).collect()
    }
}

fn todo_text(line: &str) -> Option<String> {
    line.split_once("TODO:").map(|(_, t)| t.trim().to_string())
}

/// The repository `make_repo.sh` built in a temporary directory.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn build() -> Repo {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let out = Command::new("bash")
            .arg(Path::new(FIXTURE).join("make_repo.sh"))
            .arg(dir.path())
            .output()
            .expect("bash runs make_repo.sh");
        assert!(
            out.status.success(),
            "make_repo.sh failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        Repo { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `git ARGS` in the repository without user or system configuration; its stdout.
    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(self.path())
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("LC_ALL", "C")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("git prints UTF-8")
    }

    /// Commits newest first as `(sha, author name)`, at most `n`.
    fn log(&self, n: usize, path: Option<&str>) -> Vec<(String, String)> {
        let max = format!("--max-count={n}");
        let mut args = vec!["log", &max, "--format=%H%x1f%an"];
        if let Some(path) = path {
            args.extend(["--", path]);
        }
        self.git(&args)
            .lines()
            .map(|l| {
                let (sha, author) = l.split_once('\x1f').expect("sha and author");
                (sha.to_string(), author.to_string())
            })
            .collect()
    }

    /// Paths a commit added, changed or deleted.
    fn changed(&self, rev: &str) -> Vec<String> {
        self.git(&["show", "--name-only", "--format=", rev])
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Sorted author names of the commits touching `path`.
    fn authors_of(&self, path: &str) -> BTreeSet<String> {
        self.log(1000, Some(path))
            .into_iter()
            .map(|(_, a)| a)
            .collect()
    }
}

fn sorted_list<'a>(items: impl IntoIterator<Item = &'a str>) -> Value {
    let set: BTreeSet<&str> = items.into_iter().collect();
    json!(set)
}

fn counts<'a>(items: impl IntoIterator<Item = &'a str>) -> Value {
    let mut map: BTreeMap<&str, u64> = BTreeMap::new();
    for item in items {
        *map.entry(item).or_default() += 1;
    }
    json!(map)
}

/// Rust files under `src/` that `mod NAME;` declarations reach from `src/lib.rs`.
fn module_tree(ws: &Workspace) -> BTreeSet<String> {
    let decl = Regex::new(r"^\s*(pub(\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;")
        .expect("the declaration pattern compiles");
    let mut reached = BTreeSet::new();
    let mut stack = vec!["src/lib.rs".to_string()];
    while let Some(file) = stack.pop() {
        if !reached.insert(file.clone()) {
            continue;
        }
        let (dir, name) = file.rsplit_once('/').expect("under src/");
        let children = match name {
            "lib.rs" | "mod.rs" => dir.to_string(),
            _ => format!("{dir}/{}", name.trim_end_matches(".rs")),
        };
        for line in ws.text(&file).lines() {
            if let Some(m) = decl.captures(line) {
                let module = &m[3];
                for candidate in [
                    format!("{children}/{module}.rs"),
                    format!("{children}/{module}/mod.rs"),
                ] {
                    if ws.has(&candidate) {
                        stack.push(candidate);
                    }
                }
            }
        }
    }
    reached
}

/// The answer to task `id`, computed from the fixtures.
fn answer(id: &str, ws: &Workspace, repo: &Repo) -> Value {
    let src: Vec<&str> = ws.under("src").collect();
    let notes: Vec<&str> = ws.under("notes").collect();
    match id {
        "retry_files_without_tests" => sorted_list(src.iter().copied().filter(|f| {
            let text = ws.text(f);
            text.to_lowercase().contains("retry") && !text.contains("#[cfg(test)]")
        })),
        "todos_by_file" => {
            let map: BTreeMap<&str, Vec<String>> = src
                .iter()
                .map(|f| (*f, ws.todos(f)))
                .filter(|(_, t)| !t.is_empty())
                .collect();
            json!(map)
        }
        "rust_line_count" => json!(src
            .iter()
            .filter(|f| f.ends_with(".rs"))
            .map(|f| ws.line_count(f))
            .sum::<usize>()),
        "notes_with_cache_and_timeout" => sorted_list(notes.iter().copied().filter(|f| {
            let text = ws.text(f).to_lowercase();
            text.contains("cache") && text.contains("timeout")
        })),
        "large_src_files" => sorted_list(src.iter().copied().filter(|f| {
            let meta = std::fs::metadata(ws.root.join(f)).expect("a fixture file has metadata");
            meta.len() > 2048
        })),
        "orphan_rust_files" => {
            let tree = module_tree(ws);
            sorted_list(
                src.iter()
                    .copied()
                    .filter(|f| f.ends_with(".rs") && !tree.contains(*f)),
            )
        }
        "broken_note_links" => {
            let link = Regex::new(r"src/[A-Za-z0-9_/]+\.rs").expect("the link pattern compiles");
            let mut map = BTreeMap::new();
            for note in &notes {
                let text = ws.text(note);
                let missing: BTreeSet<&str> = link
                    .find_iter(&text)
                    .map(|m| m.as_str())
                    .filter(|p| !ws.has(p))
                    .collect();
                if !missing.is_empty() {
                    map.insert(*note, json!(missing));
                }
            }
            json!(map)
        }
        "commits_per_author" => {
            let log = repo.log(50, None);
            counts(log.iter().map(|(_, a)| a.as_str()))
        }
        "files_in_last_5_commits" => {
            let files: Vec<String> = (0..5)
                .flat_map(|i| repo.changed(&format!("HEAD~{i}")))
                .collect();
            sorted_list(files.iter().map(String::as_str))
        }
        "files_by_author" => {
            let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (sha, author) in repo.log(50, None) {
                map.entry(author).or_default().extend(repo.changed(&sha));
            }
            json!(map)
        }
        "changelog_commits_per_author" => {
            let log = repo.log(200, Some("CHANGELOG.md"));
            counts(log.iter().map(|(_, a)| a.as_str()))
        }
        "uncommitted_status" => {
            let status = repo.git(&["status", "--porcelain=v1"]);
            let (mut modified, mut untracked) = (BTreeSet::new(), BTreeSet::new());
            for line in status.lines() {
                let (code, path) = line.split_at(3);
                match code {
                    "?? " => untracked.insert(path),
                    " M " => modified.insert(path),
                    other => panic!("unexpected status `{other}` for `{path}`"),
                };
            }
            json!({"modified": modified, "untracked": untracked})
        }
        "uncommitted_line_counts" => {
            let mut map = BTreeMap::new();
            for line in repo.git(&["diff", "--numstat"]).lines() {
                let mut f = line.split('\t');
                let (added, removed, path) = (f.next(), f.next(), f.next());
                let number = |n: Option<&str>| -> u64 {
                    n.and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("numstat line `{line}`"))
                };
                map.insert(
                    path.expect("a path").to_string(),
                    json!({"added": number(added), "removed": number(removed)}),
                );
            }
            json!(map)
        }
        "todos_added_since_v0_2_0" => {
            let diff = repo.git(&["diff", "--no-color", "v0.2.0"]);
            let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
            let mut file: Option<String> = None;
            for line in diff.lines() {
                if let Some(header) = line.strip_prefix("+++ ") {
                    file = header.strip_prefix("b/").map(str::to_string);
                } else if let (Some(added), Some(f)) = (line.strip_prefix('+'), &file) {
                    if let Some(todo) = todo_text(added) {
                        map.entry(f.clone()).or_default().push(todo);
                    }
                }
            }
            json!(map)
        }
        "last_author_per_net_file" => {
            let mut map = BTreeMap::new();
            for f in ws.under("src/net") {
                if let Some((_, author)) = repo.log(1, Some(f)).into_iter().next() {
                    map.insert(f, author);
                }
            }
            json!(map)
        }
        "authors_of_todo_files" => {
            let map: BTreeMap<&str, BTreeSet<String>> = src
                .iter()
                .filter(|f| !ws.todos(f).is_empty())
                .map(|f| (*f, repo.authors_of(f)))
                .collect();
            json!(map)
        }
        "retry_commit_files_line_counts" => {
            let (sha, _) = repo
                .log(1, Some("src/net/retry.rs"))
                .into_iter()
                .next()
                .expect("a commit changed src/net/retry.rs");
            let map: BTreeMap<String, usize> = repo
                .changed(&sha)
                .into_iter()
                .map(|f| {
                    let lines = ws.line_count(&f);
                    (f, lines)
                })
                .collect();
            json!(map)
        }
        other => panic!(
            "task `{other}` has no computation in tests/code_mode_tasks.rs; add one beside the others"
        ),
    }
}

#[test]
fn every_expected_answer_is_what_the_fixtures_give() {
    let file = tasks_file();
    let ws = Workspace::open(&Path::new(FIXTURE).join("workspace"));
    let repo = Repo::build();
    let mut wrong = Vec::new();
    for task in tasks(&file) {
        let id = str_field(task, "id");
        let got = answer(id, &ws, &repo);
        // serde_json objects compare regardless of key order; arrays in order.
        if got != task["expected"] {
            wrong.push(format!(
                "{id}:\n  expected {}\n  computed {got}",
                task["expected"]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "tasks.json disagrees with its fixtures: restore the fixture, or, when the change was meant, update `expected` (and `repository.head`) with it:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_built_repository_has_the_pinned_history_and_the_workspace_as_working_tree() {
    let file = tasks_file();
    let repo = Repo::build();
    let head = repo.git(&["rev-parse", "HEAD"]);
    assert_eq!(
        head.trim(),
        file["repository"]["head"]
            .as_str()
            .expect("`repository.head` is a string"),
        "make_repo.sh built another history; a changed plan or committed file changes every commit id"
    );
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]).trim(), "50");
    let authors = repo.git(&["log", "--format=%an <%ae>"]);
    let authors: BTreeSet<&str> = authors.lines().collect();
    assert_eq!(authors.len(), 4, "{authors:?}");
    assert_eq!(repo.git(&["tag", "--list"]).trim(), "v0.1.0\nv0.2.0");

    let ws = Workspace::open(&Path::new(FIXTURE).join("workspace"));
    let tree = Workspace::open(repo.path());
    assert_eq!(tree.files, ws.files, "the working tree lists other files");
    for f in &ws.files {
        assert_eq!(
            tree.text(f),
            ws.text(f),
            "`{f}` differs in the working tree"
        );
    }
}

#[test]
fn every_task_is_well_formed_and_names_read_tools_of_the_reference_catalog() {
    let file = tasks_file();
    let catalog = toolcat_cli::reference_catalog();
    let tasks = tasks(&file);
    assert!(tasks.len() >= 10, "only {} tasks", tasks.len());
    let mut ids = BTreeSet::new();
    for task in tasks {
        let id = str_field(task, "id");
        assert!(ids.insert(id), "task id `{id}` appears twice");
        assert!(
            !str_field(task, "prompt").trim().is_empty(),
            "{id}: empty prompt"
        );
        assert!(
            !str_field(task, "note").trim().is_empty(),
            "{id}: empty note"
        );
        assert!(!task["expected"].is_null(), "{id}: no `expected`");
        let steps = task["direct_steps_min"]
            .as_u64()
            .unwrap_or_else(|| panic!("{id}: `direct_steps_min` is not a whole number"));
        assert!(
            steps >= 2,
            "{id}: `direct_steps_min` is {steps}, but a call and the answer take two responses"
        );
        let tools = task["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{id}: `tools` is not an array"));
        assert!(!tools.is_empty(), "{id}: `tools` is empty");
        for tool in tools {
            let name = tool
                .as_str()
                .unwrap_or_else(|| panic!("{id}: a tool name is not a string"));
            let t = catalog
                .tool(name)
                .unwrap_or_else(|e| panic!("{id}: `{name}` is not in the reference catalog: {e}"));
            assert_eq!(
                catalog.effect(t).kind,
                EffectKind::Read,
                "{id}: `{name}` is not a read tool"
            );
            assert!(
                matches!(catalog.source(t), ToolSource::Local),
                "{id}: `{name}` is not one of the reference agent's local tools"
            );
        }
    }
}

#[test]
fn the_workspace_stays_small() {
    let ws = Workspace::open(&Path::new(FIXTURE).join("workspace"));
    let bytes: u64 = ws
        .files
        .iter()
        .map(|f| {
            std::fs::metadata(ws.root.join(f))
                .expect("a fixture file has metadata")
                .len()
        })
        .sum();
    assert!(
        bytes <= WORKSPACE_MAX_BYTES,
        "the workspace holds {bytes} bytes, over {WORKSPACE_MAX_BYTES}"
    );
    assert!(ws.under("src").count() >= 30, "{:?}", ws.files);
}
