//! The PostgreSQL server of a test: `TOOLCAT_TEST_POSTGRES_URL` when set (a server where this
//! user may create databases), else one started by the script beside this file
//! (`tests/services/postgres start DIR`) and stopped when dropped. When neither works a test
//! skips, saying why, unless `TOOLCAT_REQUIRE_POSTGRES=1` (CI), which makes it a failure.
//!
//! The tests of both the `toolcat` and the `toolcat-cli` crates include this file
//! (`#[path = ...] mod`), so the rule for finding a server is written once.
#![allow(dead_code)] // each including test binary uses part of it

use std::path::{Path, PathBuf};
use std::process::Command;

/// A test PostgreSQL server: its admin URL, and the data directory of the one this process
/// started (stopped on drop).
pub struct Server {
    pub url: String,
    started: Option<PathBuf>,
}

/// Whether a missing PostgreSQL fails the test rather than skipping it:
/// `TOOLCAT_REQUIRE_POSTGRES=1`.
pub fn required() -> bool {
    std::env::var_os("TOOLCAT_REQUIRE_POSTGRES").is_some_and(|v| v == "1")
}

/// `tests/services/postgres`, found above the including crate's directory.
fn script() -> Result<PathBuf, String> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|d| d.join("tests/services/postgres"))
        .find(|p| p.is_file())
        .ok_or_else(|| "tests/services/postgres is not above this crate".to_string())
}

impl Server {
    /// The server, or why there is none. `tag` names the data directory of one started here
    /// (in the temporary directory, with the process id).
    pub fn start(tag: &str) -> Result<Server, String> {
        if let Some(url) = std::env::var("TOOLCAT_TEST_POSTGRES_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            return Ok(Server { url, started: None });
        }
        let script = script()?;
        let dir =
            std::env::temp_dir().join(format!("toolcat-test-pg-{tag}-{}", std::process::id()));
        let out = Command::new(&script)
            .arg("start")
            .arg(&dir)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            let _ = Command::new(&script).arg("stop").arg(&dir).output();
            return Err(format!(
                "tests/services/postgres start failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        Ok(Server {
            url: stdout.lines().last().unwrap_or_default().trim().to_string(),
            started: Some(dir),
        })
    }

    /// [`Server::start`], or `None` after printing `skipped: no PostgreSQL (why)`.
    ///
    /// # Panics
    /// When there is no server and [`required`].
    pub fn or_skip(tag: &str) -> Option<Server> {
        match Server::start(tag) {
            Ok(server) => Some(server),
            Err(why) => {
                assert!(
                    !required(),
                    "TOOLCAT_REQUIRE_POSTGRES=1 but there is no PostgreSQL: {why}; set TOOLCAT_TEST_POSTGRES_URL or install PostgreSQL's server"
                );
                println!("skipped: no PostgreSQL ({why}); set TOOLCAT_TEST_POSTGRES_URL, or TOOLCAT_REQUIRE_POSTGRES=1 to fail instead");
                None
            }
        }
    }

    /// Stops the server if this process started it (a `static` server is never dropped, so its
    /// holder calls this).
    pub fn stop(&self) {
        if let (Some(dir), Ok(script)) = (&self.started, script()) {
            let _ = Command::new(script).arg("stop").arg(dir).output();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
