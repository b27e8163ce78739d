//! `toolcat init`: the crate it writes builds, and its own test calls the example tool through
//! the execution coordinator; its tools.toml passes `toolcat check`; an existing crate gets the
//! dependencies with its manifest's formatting kept; an existing file is never overwritten.
//!
//! The written crate is built as the quick start is (`build_script::cargo`): in trybuild's
//! target directory with trybuild's flags and this workspace's lock file, so the dependencies
//! compiled for the UI cases and the quick start are reused and reruns are incremental.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

use crate::build_script::{cargo, text};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

fn toolcat(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the toolcat binary runs")
}

#[test]
fn init_writes_a_crate_whose_build_and_test_pass() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let demo = tmp.path().join("demo");
    let demo_arg = demo.to_str().expect("a UTF-8 temporary path");
    let init = toolcat(&["init", "--path", MANIFEST_DIR, demo_arg], tmp.path());
    assert!(init.status.success(), "init succeeds:\n{}", text(&init));
    for file in [
        "Cargo.toml",
        "tools.toml",
        "build.rs",
        "src/main.rs",
        "src/tools.rs",
    ] {
        assert!(
            demo.join(file).is_file(),
            "init wrote {file}:\n{}",
            text(&init)
        );
    }
    let manifest: toml::Table = std::fs::read_to_string(demo.join("Cargo.toml"))
        .expect("Cargo.toml reads")
        .parse()
        .expect("Cargo.toml parses");
    assert_eq!(manifest["package"]["name"].as_str(), Some("demo"));
    assert!(manifest.contains_key("workspace"), "a workspace of its own");
    let runtime = Path::new(MANIFEST_DIR)
        .join("runtime")
        .canonicalize()
        .unwrap();
    assert_eq!(
        manifest["dependencies"]["toolcat"]["path"].as_str(),
        runtime.to_str(),
        "--path points toolcat at this checkout's runtime/"
    );

    // The catalog passes the CLI's checks as it passes the build script's.
    let check = toolcat(&["check", "--catalog", "tools.toml"], &demo);
    assert!(check.status.success(), "toolcat check:\n{}", text(&check));
    let legend = std::fs::read_to_string(demo.join("tools.toml")).unwrap();
    assert!(
        legend.contains("# [[tool]] rows, one per tool") && legend.contains("name = \"tool_call\""),
        "the legend and the discovery rows:\n{legend}"
    );

    // The workspace's lock pins the versions the shared target directory holds; no resolution
    // against the registry is needed, so the build runs offline.
    std::fs::copy(
        Path::new(MANIFEST_DIR).join("Cargo.lock"),
        demo.join("Cargo.lock"),
    )
    .expect("Cargo.lock copies");
    let start = Instant::now();
    let build = cargo(&demo, &["build", "--offline", "--quiet"]);
    let build_time = start.elapsed();
    assert!(build.status.success(), "cargo build:\n{}", text(&build));
    let start = Instant::now();
    let test = cargo(&demo, &["test", "--offline"]);
    let test_time = start.elapsed();
    assert!(test.status.success(), "cargo test:\n{}", text(&test));
    let out = String::from_utf8_lossy(&test.stdout);
    assert!(
        out.contains("tools::tests::greet_runs_through_the_coordinator ... ok"),
        "the crate's own test ran and passed:\n{}",
        text(&test)
    );
    println!(
        "toolcat init crate: cargo build {:.1} s, cargo test {:.1} s",
        build_time.as_secs_f64(),
        test_time.as_secs_f64()
    );

    let run = cargo(&demo, &["run", "--offline", "--quiet"]);
    assert!(run.status.success(), "cargo run:\n{}", text(&run));
    assert!(
        String::from_utf8_lossy(&run.stdout).contains(r#"greet: {"greeting":"Hello, world!"}"#),
        "main calls greet through the coordinator:\n{}",
        text(&run)
    );
}

#[test]
fn init_refuses_an_existing_tools_toml_and_writes_nothing() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let manifest = "[package]\nname = \"mine\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    std::fs::write(tmp.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::write(tmp.path().join("tools.toml"), "# mine\n").unwrap();

    let init = toolcat(&["init"], tmp.path());
    assert_eq!(init.status.code(), Some(1), "{}", text(&init));
    let stderr = String::from_utf8_lossy(&init.stderr);
    assert!(
        stderr.contains("tools.toml` exists already") && stderr.contains("never overwrites"),
        "names the file and the fix:\n{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap(),
        manifest,
        "Cargo.toml is untouched"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("tools.toml")).unwrap(),
        "# mine\n"
    );
    assert!(!tmp.path().join("build.rs").exists(), "nothing is written");
    assert!(!tmp.path().join("src").exists(), "nothing is written");
}

#[test]
fn init_adds_dependencies_to_an_existing_crate_keeping_its_manifest() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let manifest =
        "[package]\nname = \"mine\" # my crate\nversion = \"0.3.0\"\nedition = \"2021\"\n\n\
                    [dependencies]\n# serialization\nserde = \"1.0.200\"\n";
    std::fs::write(tmp.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::create_dir(tmp.path().join("src")).unwrap();
    std::fs::write(tmp.path().join("src/lib.rs"), "pub fn mine() {}\n").unwrap();

    let init = toolcat(&["init"], tmp.path());
    assert!(init.status.success(), "{}", text(&init));
    let edited = std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap();
    assert!(
        edited.starts_with("[package]\nname = \"mine\" # my crate\n")
            && edited.contains("# serialization\n"),
        "the manifest's comments and layout stay:\n{edited}"
    );
    let parsed: toml::Table = edited.parse().expect("the edited Cargo.toml parses");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(parsed["dependencies"]["toolcat"].as_str(), Some(version));
    assert_eq!(
        parsed["build-dependencies"]["toolcat-codegen"].as_str(),
        Some(version),
        "crates.io dependencies at this toolcat's version:\n{edited}"
    );
    assert_eq!(
        parsed["dependencies"]["serde"]["version"].as_str(),
        Some("1.0.200")
    );
    assert_eq!(
        parsed["dependencies"]["serde"]["features"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>()),
        Some(vec!["derive"]),
        "serde keeps its version and gains `derive`:\n{edited}"
    );
    assert!(
        !parsed.contains_key("workspace"),
        "an existing crate keeps its workspace"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("src/lib.rs")).unwrap(),
        "pub fn mine() {}\n",
        "the crate root is untouched"
    );
    assert!(tmp.path().join("src/tools.rs").is_file());
    assert!(!tmp.path().join("src/main.rs").exists());
    let stderr = String::from_utf8_lossy(&init.stderr);
    assert!(
        stderr.contains("toolcat::include_catalog!();") && stderr.contains("mod tools;"),
        "says what to add to src/lib.rs:\n{stderr}"
    );

    // Run again, init refuses: tools.toml exists now.
    let again = toolcat(&["init"], tmp.path());
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
}

/// Every refusal comes before anything is written: a file where `src/` must go, a manifest with
/// `build = false`, or a DIR that is a file leave the directory exactly as it was.
#[test]
fn init_refuses_what_is_in_the_way_before_writing_anything() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let crate_dir = tmp.path().join("blocked");
    std::fs::create_dir(&crate_dir).unwrap();
    std::fs::write(crate_dir.join("src"), "precious\n").unwrap();
    let init = toolcat(&["init", "blocked"], tmp.path());
    assert_eq!(init.status.code(), Some(1), "{}", text(&init));
    let stderr = String::from_utf8_lossy(&init.stderr);
    assert!(
        stderr.contains("src` is in the way") && stderr.contains("move it aside"),
        "{stderr}"
    );
    let mut left: Vec<_> = std::fs::read_dir(&crate_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["src"], "nothing is written");
    assert_eq!(
        std::fs::read_to_string(crate_dir.join("src")).unwrap(),
        "precious\n"
    );

    let no_build = tmp.path().join("no-build");
    std::fs::create_dir(&no_build).unwrap();
    let manifest =
        "[package]\nname = \"nb\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = false\n";
    std::fs::write(no_build.join("Cargo.toml"), manifest).unwrap();
    let init = toolcat(&["init"], &no_build);
    assert_eq!(init.status.code(), Some(1), "{}", text(&init));
    assert!(
        String::from_utf8_lossy(&init.stderr).contains("`build = false`"),
        "{}",
        text(&init)
    );
    assert!(!no_build.join("tools.toml").exists(), "nothing is written");

    std::fs::write(tmp.path().join("afile"), "x").unwrap();
    let init = toolcat(&["init", "afile"], tmp.path());
    assert_eq!(init.status.code(), Some(1), "{}", text(&init));
    assert!(
        String::from_utf8_lossy(&init.stderr).contains("is a file, not a directory"),
        "{}",
        text(&init)
    );
}

/// An existing crate's package name becomes the owner of the new rows only when it is a valid
/// package name: one that would break the generated `tools.toml` is refused before writing.
#[test]
fn init_refuses_a_package_name_that_is_not_one() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let manifest =
        "[package]\nname = \"a\\\"b\\nx = 1\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    std::fs::write(tmp.path().join("Cargo.toml"), manifest).unwrap();
    let init = toolcat(&["init"], tmp.path());
    assert_eq!(init.status.code(), Some(1), "{}", text(&init));
    assert!(
        String::from_utf8_lossy(&init.stderr).contains("is not a valid package name"),
        "{}",
        text(&init)
    );
    assert!(
        !tmp.path().join("tools.toml").exists(),
        "nothing is written"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap(),
        manifest
    );
}
