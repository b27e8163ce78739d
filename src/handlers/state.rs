//! Session state of the local tools: JSON files under `WORKSPACE/.toolcat/`.
//!
//! Each area keeps one file (`todos.json`, `plan.json`, `memory.json`, `reminders.json`). Writes
//! go to a temporary file that is then renamed over the old one, so a crash never leaves half a
//! file. Read-modify-write cycles hold one process-wide lock, so two calls in flight cannot lose
//! each other's update.

use serde::de::DeserializeOwned;
use serde::Serialize;
use toolcat::{Access, Target, ToolContext, ToolError};

use super::failed;
use super::workspace::Workspace;

/// Directory, relative to the workspace root, that holds the state files.
pub const STATE_DIR: &str = ".toolcat";

/// The target of `.toolcat/FILE` for a prepare step: scheduled with `access` by the execution
/// coordinator, without a fingerprint (an update is a read-modify-write under the state lock, so
/// it does not depend on what an earlier call left in the file).
///
/// # Errors
/// When the workspace cannot be opened.
pub fn target(ctx: &ToolContext, file: &str, access: Access) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.target(&format!("{STATE_DIR}/{file}"))?;
    Ok(vec![Target::path_lock(&path, access)])
}

/// Serializes read-modify-write cycles on state files.
static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Reads `.toolcat/FILE`, or `T::default()` when it does not exist yet.
///
/// # Errors
/// When the file cannot be read or is not the JSON shape `T`.
pub async fn load<T: DeserializeOwned + Default>(
    ws: &Workspace,
    file: &str,
) -> Result<T, ToolError> {
    let path = ws.target(&format!("{STATE_DIR}/{file}"))?;
    let text = match tokio::fs::read_to_string(&path).await {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(e) => {
            return Err(ToolError::io(
                format!("cannot read `{STATE_DIR}/{file}`"),
                e,
            ))
        }
    };
    serde_json::from_str(&text).map_err(|e| {
        failed(format!(
            "state file `{STATE_DIR}/{file}` is not valid: {e}; fix it by hand or delete it to \
             start over"
        ))
    })
}

/// Writes `value` to `.toolcat/FILE` (pretty JSON, final newline), creating the directory.
///
/// # Errors
/// When the directory or file cannot be written.
pub async fn save<T: Serialize>(ws: &Workspace, file: &str, value: &T) -> Result<(), ToolError> {
    let path = ws.target(&format!("{STATE_DIR}/{file}"))?;
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| ToolError::io(format!("cannot create `{STATE_DIR}`"), e))?;
    }
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| failed(format!("cannot encode `{STATE_DIR}/{file}`: {e}")))?;
    text.push('\n');
    let tmp = path.with_extension("json.tmp");
    tokio::fs::write(&tmp, text)
        .await
        .map_err(|e| ToolError::io(format!("cannot write `{STATE_DIR}/{file}`"), e))?;
    tokio::fs::rename(&tmp, &path)
        .await
        .map_err(|e| ToolError::io(format!("cannot replace `{STATE_DIR}/{file}`"), e))
}

/// Loads `.toolcat/FILE`, lets `change` modify it, and saves it when `change` succeeds; the whole
/// cycle runs under the state lock.
///
/// # Errors
/// Those of [`load`] and [`save`], and whatever `change` returns (then nothing is written).
pub async fn update<T, R>(
    ws: &Workspace,
    file: &str,
    change: impl FnOnce(&mut T) -> Result<R, ToolError>,
) -> Result<R, ToolError>
where
    T: DeserializeOwned + Serialize + Default,
{
    let _guard = LOCK.lock().await;
    let mut value: T = load(ws, file).await?;
    let result = change(&mut value)?;
    save(ws, file, &value).await?;
    Ok(result)
}

/// Loads `.toolcat/FILE` under the state lock (a consistent read while writers are active).
///
/// # Errors
/// Those of [`load`].
pub async fn read<T: DeserializeOwned + Default>(
    ws: &Workspace,
    file: &str,
) -> Result<T, ToolError> {
    let _guard = LOCK.lock().await;
    load(ws, file).await
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
