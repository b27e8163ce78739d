//! The one integration-test binary. Each module says what it pins.

/// Whether the real data sets (`../shared/data` beside the repository) are here. When they are
/// absent, prints one line naming them and returns false, so the test skips; with
/// `TOOLCAT_REQUIRE_DATA=1` (as CI sets) it fails instead.
pub fn data_present() -> bool {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    if dir.is_dir() {
        return true;
    }
    assert!(
        std::env::var_os("TOOLCAT_REQUIRE_DATA").is_none_or(|v| v != "1"),
        "../shared/data is absent (`{}`) and TOOLCAT_REQUIRE_DATA=1 requires it; lay the data sets out beside the repository (README, \"Data sets\")",
        dir.display()
    );
    eprintln!("skipped: ../shared/data is absent (set TOOLCAT_REQUIRE_DATA=1 to fail instead)");
    false
}

/// Returns from the test (a skip, with its line on stderr) when the data sets are absent; see
/// [`data_present`].
macro_rules! require_data {
    () => {
        if !crate::data_present() {
            return;
        }
    };
}

/// A user's quick-start crate builds, runs a tool, and fails to build on a broken tools.toml.
mod build_script;
/// Durable call records: a call killed by SIGKILL mid-side-effect is never `succeeded` nor replayed; `toolcat calls`; processes on one store share a `rate_limit`.
mod calls;
/// `--store postgres://...`: a bad or unreachable URL named without its password; a `toolcat call` SIGKILLed mid-call judged `outcome_unknown` by another process once its replica lease expired, never replayed.
mod calls_postgres;
/// The `toolcat` command line on the reference catalog and on real imported catalogs.
mod cli;
/// `toolcat` habits: completions, exit-code classes, a closed stdout ending quietly, `--json`, no progress on a piped stderr, warnings shown once.
mod cli_habits;
/// Code Mode through `toolcat session`: a replayed program's record and its three linked inner calls; hostile programs end with a clear error and run nothing.
mod code_mode;
/// The Code Mode task set agrees with its fixtures: each expected answer recomputed from the workspace and the built repository; every tool a read tool.
mod code_mode_tasks;
/// Exported input schemas of the reference, GitHub and LiveMCPBench catalogs break no OpenAI strict-mode or Gemini `Schema` rule; the checker catches each bad shape.
mod conformance;
/// Which catalog `toolcat` reads without `--catalog`: `TOOLCAT_CATALOG`, `tools.toml` here or in a parent, the reference; the README's session example starts no server it does not use.
mod discovery;
/// `toolcat eval`: recall@k, nDCG@5 and C@5 on hand-made rankings, the `metatool` import, the token economy.
mod eval;
/// File tools never follow a symbolic link out of the workspace, even one swapped in mid-call; stale writes are refused.
mod file_races;
/// generated/ is fresh and every file names `toolcat generate` on its first line.
mod generated;
/// `toolcat import`: real catalogs and fixtures become tools.toml text that compiles and round-trips.
mod import;
/// `toolcat init`: the crate it writes builds and passes its own test; existing crates keep their files.
mod init;
/// Malformed catalogs: each fixture's rendered diagnostics, snapshotted, with its expected codes.
mod invalid_catalogs;
/// The workspace layout: no import circles, `unsafe` only in the encoder, optional parts behind traits.
mod layout;
/// The PostgreSQL server of a test (shared with the `toolcat` crate's tests).
#[path = "services/postgres.rs"]
mod pg;
/// A session told its provider: OpenAI strict-mode nulls accepted for every reference tool; one recorded exchange per provider replayed.
mod providers;
/// The README's quick start shows the tested fixture crate, verbatim.
mod readme;
/// Remote MCP servers from PyPI and npm: imported, checked live, searched, called in sessions; drift, dying and silent servers.
mod remote_servers;
/// Transcripts replayed against a session: every step keeps the discovery loop's invariants.
mod replay;
/// Tool search quality on real catalogs: the GitHub pull-request paraphrases; the full report is `#[ignore]`d.
mod search_quality;
/// `toolcat search --semantic` and `toolcat eval --semantic` (feature `semantic`): one notice line and the BM25 results without a model; fused hits with it.
#[cfg(feature = "semantic")]
mod semantic_cli;
/// `toolcat serve`: the MCP server lists and runs exactly the exposure table, through a real MCP client, and survives hostile input.
mod serve;
/// `toolcat serve --http` with bearer tokens and OAuth JWTs: each token's profile and scope, revocation without restart, stateless requests, non-loopback binds.
mod serve_auth;
/// `toolcat serve --metrics`: calls, refusals and HTTP statuses scraped as Prometheus text, never an argument value; loopback only.
mod serve_metrics;
/// What the `toolcat serve --http` tests share: a started server, raw HTTP/1.1 requests, MCP call helpers.
mod served;
/// `toolcat check --target`: each export target's documented result on its fixtures and on the reference catalog.
mod targets;
/// Text-level invariants of tools.toml: the legend matches the model; every row has owner and description.
mod tidy;
/// `toolcat token` on its file: concurrent edits lose nothing; duplicated hashes, unsafe names, FIFOs refused; mistyped store URLs refused without their password.
mod token_file;
