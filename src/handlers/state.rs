//! Session state of the local tools: JSON files under `WORKSPACE/.toolcat/`.
//!
//! Each area keeps one file (`todos.json`, `plan.json`, `memory.json`, `reminders.json`). Every
//! write goes through the workspace's write layer ([`Workspace::write_atomically`]): a temporary
//! file created exclusively beside the state file and renamed over it (a crash never leaves half
//! a file), no symbolic link followed (a link at `.toolcat` or at the file is refused), under
//! the file's advisory lock, which works across processes. [`update`] holds that lock across
//! the read and the write, so concurrent calls, in one process or many, never lose each other's
//! update: a call that cannot get the lock within [`toolcat_tools::workspace::LOCK_WAIT`] fails and
//! says so, and writes nothing.

use serde::de::DeserializeOwned;
use serde::Serialize;
use toolcat::{Access, Target, ToolContext, ToolError};

use super::failed;
pub use toolcat_tools::workspace::STATE_DIR;
use toolcat_tools::workspace::{blocking, Workspace};

/// The target of `.toolcat/FILE` for a prepare step: the path as it is under the workspace root
/// (nothing resolved or followed), scheduled with `access` by the execution coordinator, without
/// a fingerprint (an update is a read-modify-write under the file's lock, so it does not depend
/// on what an earlier call left in the file).
///
/// # Errors
/// When the workspace cannot be opened.
pub fn target(ctx: &ToolContext, file: &str, access: Access) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    Ok(vec![Target::path_lock(&ws.state_file(file), access)])
}

/// `value` as the text of a state file: pretty JSON with a final newline.
fn encode<T: Serialize>(file: &str, value: &T) -> Result<Vec<u8>, ToolError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| failed(format!("cannot encode `{STATE_DIR}/{file}`: {e}")))?;
    text.push('\n');
    Ok(text.into_bytes())
}

/// The value of a state file's bytes, or `T::default()` for a file that does not exist.
fn decode<T: DeserializeOwned + Default>(file: &str, bytes: Option<&[u8]>) -> Result<T, ToolError> {
    let Some(bytes) = bytes else {
        return Ok(T::default());
    };
    serde_json::from_slice(bytes).map_err(|e| {
        failed(format!(
            "state file `{STATE_DIR}/{file}` is not valid: {e}; fix it by hand or delete it to \
             start over"
        ))
    })
}

/// Loads `.toolcat/FILE`, lets `change` modify it, and saves it when `change` succeeds, all
/// under the file's lock ([`Workspace::write_atomically`] without an expected fingerprint), on
/// the blocking pool ([`blocking`]).
///
/// # Errors
/// When the file cannot be read, is not the JSON shape `T`, is a symbolic link or not a regular
/// file, or cannot be written; when its lock is still held after `LOCK_WAIT`; whatever `change`
/// returns. In every error case nothing is written.
pub async fn update<T, R>(
    ws: &Workspace,
    file: &str,
    change: impl FnOnce(&mut T) -> Result<R, ToolError> + Send + 'static,
) -> Result<R, ToolError>
where
    T: DeserializeOwned + Serialize + Default,
    R: Send + 'static,
{
    let ws = ws.clone();
    let file = file.to_string();
    let shown = format!("{STATE_DIR}/{file}");
    blocking(&format!("`{shown}`"), move |work| {
        let path = ws.state_file(&file);
        ws.write_atomically(&path, &shown, None, work, |old| {
            let mut value: T = decode(&file, old)?;
            let result = change(&mut value)?;
            Ok((encode(&file, &value)?, result))
        })
    })
    .await
}

/// Loads `.toolcat/FILE`, or `T::default()` when it does not exist yet. No lock is needed: the
/// write layer replaces the file by a rename, so a read sees one whole version.
///
/// # Errors
/// When the file cannot be read, is a symbolic link or not a regular file, or is not the JSON
/// shape `T`.
pub async fn read<T>(ws: &Workspace, file: &str) -> Result<T, ToolError>
where
    T: DeserializeOwned + Default + Send + 'static,
{
    let ws = ws.clone();
    let file = file.to_string();
    let shown = format!("{STATE_DIR}/{file}");
    blocking(&format!("`{shown}`"), move |_| {
        let bytes = ws.read_nofollow(&ws.state_file(&file), &shown)?;
        decode(&file, bytes.as_deref())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcat::ToolContext;

    #[tokio::test]
    async fn missing_file_loads_default_and_update_persists() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::open(&ToolContext::new(dir.path())).expect("open");
        let empty: Vec<String> = read(&ws, "list.json").await.expect("default");
        assert!(empty.is_empty());
        let len = update(&ws, "list.json", |v: &mut Vec<String>| {
            v.push("a".into());
            Ok(v.len())
        })
        .await
        .expect("update");
        assert_eq!(len, 1);
        let text = std::fs::read_to_string(dir.path().join(".toolcat/list.json")).expect("file");
        assert_eq!(text, "[\n  \"a\"\n]\n");
    }

    #[tokio::test]
    async fn failed_change_writes_nothing_and_corrupt_file_is_reported() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::open(&ToolContext::new(dir.path())).expect("open");
        let err = update(&ws, "list.json", |_: &mut Vec<String>| -> Result<(), _> {
            Err(failed("no"))
        })
        .await
        .expect_err("change fails");
        assert_eq!(err.to_string(), "no");
        assert!(!dir.path().join(".toolcat/list.json").exists());

        std::fs::create_dir_all(dir.path().join(".toolcat")).expect("mkdir");
        std::fs::write(dir.path().join(".toolcat/list.json"), "{not json").expect("write");
        let err = read::<Vec<String>>(&ws, "list.json")
            .await
            .expect_err("corrupt");
        assert!(
            err.to_string()
                .contains("`.toolcat/list.json` is not valid"),
            "{err}"
        );
    }
}
