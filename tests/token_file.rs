//! `toolcat token` on its file: concurrent `add` and `revoke` take turns (none lost), a
//! duplicated hash and an unsafe name are refused, a FIFO or a directory is refused at once (never
//! read, which would block), a missing file exits 1; a mistyped `--store` URL is refused without
//! its password, and `--http localhost:0` says to write an IP address.

use std::path::Path;
use std::process::{Command, Output};

fn toolcat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .env_remove("TOOLCAT_STORE")
        .output()
        .expect("the toolcat binary runs")
}

fn add(file: &Path, name: &str) -> Output {
    toolcat(&[
        "token",
        "add",
        "--file",
        file.to_str().unwrap(),
        "--name",
        name,
        "--profile",
        "coding",
        "--scope",
        "read-only",
    ])
}

fn names(file: &Path) -> Vec<String> {
    let o = toolcat(&["token", "list", "--file", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn concurrent_adds_and_revokes_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    assert!(add(&file, "victim").status.success());
    let revoker = {
        let file = file.clone();
        std::thread::spawn(move || {
            toolcat(&[
                "token",
                "revoke",
                "--file",
                file.to_str().unwrap(),
                "victim",
            ])
        })
    };
    let adders: Vec<_> = (0..12)
        .map(|i| {
            let file = file.clone();
            std::thread::spawn(move || add(&file, &format!("client-{i}")))
        })
        .collect();
    for a in adders {
        let o = a.join().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = revoker.join().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut got = names(&file);
    got.sort();
    let mut want: Vec<String> = (0..12).map(|i| format!("client-{i}")).collect();
    want.sort();
    assert_eq!(got, want, "12 adds kept, `victim` stays revoked");
}

#[test]
fn duplicate_hashes_and_unsafe_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    let hash = "a".repeat(64);
    std::fs::write(
        &file,
        format!(
            "[[token]]\nname = \"one\"\nsha256 = \"{hash}\"\nprofile = \"coding\"\nscope = \"full\"\n\
             [[token]]\nname = \"two\"\nsha256 = \"{hash}\"\nprofile = \"coding\"\nscope = \"read-only\"\n"
        ),
    )
    .unwrap();
    for args in [
        &["token", "list", "--file", file.to_str().unwrap()][..],
        &["token", "revoke", "--file", file.to_str().unwrap(), "one"],
    ] {
        let o = toolcat(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("token `two`")
                && stderr(&o).contains("`sha256` is another entry's"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let o = add(&dir.path().join("new.toml"), "evil\n\u{1b}[31mname");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 to 64 characters") && !stderr(&o).contains('\u{1b}'),
        "{}",
        stderr(&o)
    );
    std::fs::write(
        &file,
        format!("[[token]]\nname = \"a\\u001b[2J\"\nsha256 = \"{hash}\"\nprofile = \"coding\"\nscope = \"full\"\n"),
    )
    .unwrap();
    let o = toolcat(&["token", "list", "--file", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty() && !stderr(&o).contains('\u{1b}'),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_file_that_is_not_regular_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let o = toolcat(&["token", "list", "--file", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("--tokens"), "{}", stderr(&o));
    let o = toolcat(&["token", "list", "--file", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is a directory, not a regular file"),
        "{}",
        stderr(&o)
    );
    #[cfg(unix)]
    {
        let fifo = dir.path().join("fifo");
        let made = Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            println!("skipped the FIFO case: `mkfifo` is not available");
            return;
        }
        let started = std::time::Instant::now();
        for args in [
            &["token", "list", "--file", fifo.to_str().unwrap()][..],
            &["token", "revoke", "--file", fifo.to_str().unwrap(), "x"],
        ] {
            let o = toolcat(args);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("is a FIFO, not a regular file"),
                "{}",
                stderr(&o)
            );
        }
        let o = add(&fifo, "x");
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("is a FIFO"), "{}", stderr(&o));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}

#[test]
fn a_mistyped_store_url_is_refused_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    for store in [
        "postgres:/u:Pw9secret@h/db",
        "mysql://u:Pw9secret@h/db",
        "host=h password=Pw9secret",
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_toolcat"))
            .args(["calls", "--store", store])
            .current_dir(dir.path())
            .env_remove("TOOLCAT_STORE")
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{store}: {err}");
        assert!(
            !err.contains("Pw9secret") && err.contains("postgres://USER"),
            "{store}: {err}"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{store}: nothing created"
        );
    }
}

#[test]
fn a_host_name_as_http_address_says_to_write_an_ip_address() {
    let o = toolcat(&["serve", "--http", "localhost:0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("127.0.0.1:PORT"), "{}", stderr(&o));
}
