//! The BM25 search index of a catalog (tantivy), built once and embedded as bytes.

use crate::tables::Tables;

/// Builds the search index of `tables` and serializes it to bytes.
///
/// `params[i]` are the parameter names of tool `i` known outside its declared `input_schema`
/// (a local tool's argument fields); it may be shorter than `tables.len` (missing entries = none).
///
/// # Errors
/// When tantivy fails to build the index.
pub fn build_index_bytes(tables: &Tables, params: &[Vec<String>]) -> Result<Vec<u8>, IndexError> {
    let _ = (tables, params);
    todo!("index::build_index_bytes")
}

/// Why an index could not be built or opened.
#[derive(Debug)]
pub struct IndexError(pub String);

impl std::fmt::Display for IndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for IndexError {}
