//! Which catalog the `toolcat` command line reads without `--catalog`: `TOOLCAT_CATALOG`, else
//! `tools.toml` in the current or nearest parent directory, else the compiled-in reference
//! catalog; and the one stderr line that names a choice that is not the obvious one.

use std::path::Path;
use std::process::{Command, Output};

/// `toolcat ARGS` in `cwd`, with `TOOLCAT_CATALOG` set to `env` (removed when `None`).
fn toolcat_in(cwd: &Path, env: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolcat"));
    cmd.args(args).current_dir(cwd);
    match env {
        Some(p) => cmd.env("TOOLCAT_CATALOG", p),
        None => cmd.env_remove("TOOLCAT_CATALOG"),
    };
    cmd.output().expect("the toolcat binary runs")
}

/// The tool names of `toolcat list` (first column, header left out).
fn listed(o: &Output) -> Vec<String> {
    assert!(
        o.status.success(),
        "toolcat list failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The lines of `o`'s stderr that name the chosen catalog.
fn notes(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter(|l| l.starts_with("toolcat: catalog "))
        .map(str::to_string)
        .collect()
}

const QUICKSTART: &[&str] = &[
    "read_file",
    "count_words",
    "tool_search",
    "tool_describe",
    "tool_call",
];

fn repo(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn the_catalog_is_found_in_the_current_or_a_parent_directory_then_env_then_flag() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::copy(
        repo("tests/fixtures/quickstart/tools.toml"),
        root.join("tools.toml"),
    )
    .unwrap();
    let sub = root.join("a/b");
    std::fs::create_dir_all(&sub).unwrap();

    // In the directory of the file: its tools, and no note (the obvious choice).
    let o = toolcat_in(&root, None, &["list"]);
    assert_eq!(listed(&o), QUICKSTART);
    assert_eq!(notes(&o), Vec::<String>::new(), "{}", stderr(&o));

    // Two levels below: the same tools, with one line naming the file and why.
    let o = toolcat_in(&sub, None, &["list"]);
    assert_eq!(listed(&o), QUICKSTART);
    assert_eq!(
        notes(&o),
        [format!(
            "toolcat: catalog {} (found in a parent directory; pass --catalog to choose another)",
            root.join("tools.toml").display()
        )]
    );

    // `TOOLCAT_CATALOG` wins over the discovered file.
    let other = root.join("other.toml");
    std::fs::copy(repo("tests/fixtures/valid/small.toml"), &other).unwrap();
    let expected = listed(&toolcat_in(
        &root,
        None,
        &["list", "--catalog", "other.toml"],
    ));
    assert!(
        !expected.is_empty() && expected != QUICKSTART,
        "{expected:?}"
    );
    let o = toolcat_in(&sub, Some(&other), &["list"]);
    assert_eq!(listed(&o), expected);
    assert_eq!(
        notes(&o),
        [format!(
            "toolcat: catalog {} (from TOOLCAT_CATALOG; pass --catalog to choose another)",
            other.display()
        )]
    );

    // An empty `TOOLCAT_CATALOG` counts as unset.
    let o = toolcat_in(&sub, Some(Path::new("")), &["list"]);
    assert_eq!(listed(&o), QUICKSTART);

    // `--catalog` wins over both, without a note.
    let o = toolcat_in(
        &sub,
        Some(&other),
        &[
            "list",
            "--catalog",
            root.join("tools.toml").to_str().unwrap(),
        ],
    );
    assert_eq!(listed(&o), QUICKSTART);
    assert_eq!(notes(&o), Vec::<String>::new(), "{}", stderr(&o));
}

#[test]
fn a_missing_toolcat_catalog_is_an_error_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.toml");
    let o = toolcat_in(dir.path(), Some(&missing), &["list"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("TOOLCAT_CATALOG names")
            && err.contains("absent.toml")
            && err.contains("unset it"),
        "{err}"
    );
}

#[test]
fn without_any_tools_toml_the_reference_catalog_is_read_and_the_reference_file_is_compiled_in() {
    let reference = listed(&toolcat_in(&repo(""), None, &["list"]));
    assert!(reference.len() > 100, "{}", reference.len());
    // A directory with no tools.toml above it (the temp dir is outside the repository).
    let dir = tempfile::tempdir().unwrap();
    let o = toolcat_in(dir.path(), None, &["list"]);
    if dir
        .path()
        .ancestors()
        .all(|d| !d.join("tools.toml").is_file())
    {
        assert_eq!(listed(&o), reference);
        assert_eq!(notes(&o), Vec::<String>::new(), "{}", stderr(&o));
    }
    // Below the repository root, whose tools.toml is the reference catalog's own text: the
    // compiled-in catalog, named as such.
    let o = toolcat_in(&repo("tests/fixtures"), None, &["list"]);
    assert_eq!(listed(&o), reference);
    let note = notes(&o);
    assert_eq!(note.len(), 1, "{}", stderr(&o));
    assert!(note[0].contains("it is the reference catalog"), "{note:?}");
}

/// The README's `toolcat session` example (the `sh` block that pipes into `toolcat session`),
/// verbatim.
fn readme_session_example() -> String {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("\n```").next())
        .filter(|b| b.contains("| toolcat session --preset code --no-preselect"))
        .collect();
    assert_eq!(
        blocks.len(),
        1,
        "the README has one such example: {blocks:?}"
    );
    blocks[0].to_string()
}

/// Runs `script` with `sh` in a fresh git repository with one commit, with `toolcat` and fake
/// `npx`/`uvx` (each appends to `marker` and fails) first on `PATH`.
fn run_with_fake_launchers(script: &str) -> (Output, Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let marker = dir.path().join("marker");
    for launcher in ["npx", "uvx"] {
        let path = bin.join(launcher);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho \"$0 $*\" >> '{}'\nexit 1\n",
                marker.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .current_dir(&work)
            .output()
            .expect("git runs");
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    git(&["init", "-q"]);
    std::fs::write(work.join("a.txt"), "a\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first commit of the example"]);
    let toolcat_dir = Path::new(env!("CARGO_BIN_EXE_toolcat")).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        toolcat_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("sh")
        .args(["-c", script])
        .current_dir(&work)
        .env("PATH", path)
        .env_remove("TOOLCAT_CATALOG")
        .output()
        .expect("sh runs");
    (o, std::fs::read_to_string(&marker).ok())
}

#[test]
fn the_readme_session_example_starts_no_server_it_does_not_use() {
    let script = readme_session_example();
    let (o, marker) = run_with_fake_launchers(&script);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        marker,
        None,
        "a server process was started:\n{}",
        stderr(&o)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let outcomes: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  error:") || l.starts_with("  result:"))
        .collect();
    assert_eq!(outcomes.len(), 3, "{out}");
    assert!(
        outcomes[0].starts_with("  error: Tool 'git_log' not in active set. Call tool_search"),
        "{out}"
    );
    assert!(
        outcomes[1].starts_with("  result: {\"tools\":[{\"name\":\"git_log\""),
        "{out}"
    );
    assert!(
        outcomes[2].starts_with("  result:") && outcomes[2].contains("first commit of the example"),
        "{out}"
    );

    // The control: connecting every server at start runs the launchers.
    let eager = script.replace("--no-preselect", "--no-preselect --servers all --wait 200");
    let (_, marker) = run_with_fake_launchers(&eager);
    let marker = marker.expect("`--servers all` starts the declared servers");
    assert!(marker.contains("npx") && marker.contains("uvx"), "{marker}");
}

/// A `tools.toml` that is there but cannot be read as a file (a dangling link, a directory) is
/// an error naming it, never a silent fall-back to the reference catalog.
#[test]
fn a_tools_toml_that_is_not_a_file_is_an_error_not_a_fall_back() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("c");
    std::fs::create_dir(&sub).unwrap();
    std::os::unix::fs::symlink(dir.path().join("absent"), dir.path().join("tools.toml")).unwrap();
    for cwd in [dir.path(), sub.as_path()] {
        let o = toolcat_in(cwd, None, &["list"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            o.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        let err = stderr(&o);
        assert!(
            err.contains("tools.toml` is not a file") && err.contains("--catalog PATH"),
            "{err}"
        );
    }
    let as_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(as_dir.path().join("tools.toml")).unwrap();
    let o = toolcat_in(as_dir.path(), None, &["list"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not a file"), "{}", stderr(&o));
}
