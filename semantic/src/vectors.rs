//! The tool vectors of a catalog: computed, cached on disk, or embedded at build time.
//!
//! # Stored form (cache files and embedded bytes)
//! Little-endian: the magic `TCVEC` + `\0\0` + format version byte (1); precision `u8`
//! (0 = f32, 1 = int8) and three zero bytes; tool count `u32`; dimension `u32`; the 32-byte key
//! ([`ToolVectors::key_for`]); the values (f32: `count × dim` floats; int8: `count × dim` signed
//! bytes, then `count` f32 scales); last, the SHA-256 of everything before it.

use std::fs;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{Encoder, SemanticError};
use toolcat::{Catalog, ToolIndex};

const MAGIC: &[u8; 8] = b"TCVEC\0\0\x01";
const HEADER: usize = 8 + 4 + 4 + 4 + 32;

/// How the vectors are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorPrecision {
    /// 4 bytes per value, exactly as encoded.
    F32,
    /// 1 byte per value plus one f32 scale per tool: symmetric per-tool quantization
    /// (`value ≈ byte · scale`, `scale = max |value| / 127`); cosines move by about 1e-3.
    Int8,
}

/// Where a [`ToolVectors`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorSource {
    /// Encoded in this process.
    Computed,
    /// Read from a cache file written by an earlier load.
    Cache,
    /// Read from bytes (compiled into the binary by a build script, or given by the caller).
    Bytes,
}

#[derive(Clone)]
enum Values {
    F32(Vec<f32>),
    Int8 { values: Vec<i8>, scales: Vec<f32> },
}

/// One embedding per tool of a catalog (or per text), in catalog order: `len() × dim()` values.
#[derive(Clone)]
pub struct ToolVectors {
    len: usize,
    dim: usize,
    key: [u8; 32],
    values: Values,
    source: VectorSource,
    cache_file: Option<PathBuf>,
    cache_error: Option<String>,
}

impl std::fmt::Debug for ToolVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolVectors")
            .field("len", &self.len)
            .field("dim", &self.dim)
            .field("precision", &self.precision())
            .field("source", &self.source)
            .field("cache_file", &self.cache_file)
            .finish_non_exhaustive()
    }
}

/// The reference protocol's name splitting (`peer_dense.py`, `peer_bm25s.py`): a space between
/// an ASCII lower-case letter and the ASCII upper-case letter after it, and every run of `_`,
/// `-` and `.` replaced by one space. `read_fileAsText.v2` → `read file As Text v2`.
pub fn peer_split_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev: Option<char> = None;
    let mut in_sep = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            if !in_sep {
                out.push(' ');
            }
            in_sep = true;
            prev = Some(c);
            continue;
        }
        in_sep = false;
        if let Some(p) = prev {
            if p.is_ascii_lowercase() && c.is_ascii_uppercase() {
                out.push(' ');
            }
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

/// The text a tool is embedded from, the reference protocol's tool text: the declared name split
/// by [`peer_split_name`], a space, the description; then the tool's keywords (space-separated)
/// and the property names of its *declared* `input_schema` (server tools) split the same way,
/// when it has any. For the benchmark catalogs (`toolcat import` of MetaTool and LiveMCPBench, no
/// keywords) this is exactly `peer_dense.py`'s text. Only what `tools.toml` declares is read, so
/// a compiled catalog and the same file loaded at run time (or by a build script) give the same
/// texts; the parameter names of local tools, which live in Rust, are not part of it.
pub fn tool_text(catalog: &Catalog, t: ToolIndex) -> String {
    let mut text = format!(
        "{} {}",
        peer_split_name(catalog.name(t)),
        catalog.description(t)
    );
    for k in catalog.keywords(t) {
        text.push(' ');
        text.push_str(k);
    }
    let declared = catalog
        .tables()
        .input_schema
        .get(t.index())
        .and_then(|s| s.as_deref())
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok());
    if let Some(props) = declared
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.as_object())
    {
        if !props.is_empty() {
            let names: Vec<&str> = props.keys().map(String::as_str).collect();
            text.push(' ');
            text.push_str(&peer_split_name(&names.join(" ")));
        }
    }
    text
}

/// The default folder for cached tool vectors: `$TOOLCAT_CACHE_DIR/vectors`, else
/// `$XDG_CACHE_HOME/toolcat/vectors`, else `$HOME/.cache/toolcat/vectors`; `None` when none of
/// these variables is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("TOOLCAT_CACHE_DIR")
        .map(|d| d.join("vectors"))
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("toolcat").join("vectors")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("toolcat").join("vectors")))
}

fn vectors_error(what: impl Into<String>) -> SemanticError {
    SemanticError::Vectors { what: what.into() }
}

impl ToolVectors {
    /// The vectors of every tool of `catalog` (catalog order), from [`tool_text`].
    ///
    /// With `cache_dir`, a file there named by the key ([`ToolVectors::key_for`]: model id and
    /// every text) is read when present and valid ([`VectorSource::Cache`], nothing encoded), and
    /// written after encoding otherwise; a cache that cannot be written leaves the vectors usable
    /// and says why in [`ToolVectors::cache_error`]. Encoding spreads the texts over the rayon
    /// global pool.
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when a text cannot be tokenized.
    pub fn for_catalog(
        catalog: &Catalog,
        encoder: &Encoder,
        cache_dir: Option<&Path>,
    ) -> Result<ToolVectors, SemanticError> {
        let texts: Vec<String> = catalog.tools().map(|t| tool_text(catalog, t)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        ToolVectors::for_texts(&refs, encoder, cache_dir)
    }

    /// The vectors of `catalog` from the best source there is: `embedded` bytes (from
    /// [`embed_catalog_vectors`] in a build script) when they match the catalog's current tool
    /// texts and the encoder ([`ToolVectors::matches_catalog`]), else as
    /// [`ToolVectors::for_catalog`] (cache, then encoding). Empty or stale embedded bytes are
    /// passed over; [`ToolVectors::source`] tells which source served.
    ///
    /// # Errors
    /// As [`ToolVectors::for_catalog`].
    pub fn load(
        catalog: &Catalog,
        encoder: &Encoder,
        embedded: Option<&[u8]>,
        cache_dir: Option<&Path>,
    ) -> Result<ToolVectors, SemanticError> {
        if let Some(bytes) = embedded.filter(|b| !b.is_empty()) {
            if let Ok(v) = ToolVectors::from_bytes(bytes) {
                if v.len == catalog.len() && v.matches_catalog(catalog, encoder) {
                    return Ok(v);
                }
            }
        }
        ToolVectors::for_catalog(catalog, encoder, cache_dir)
    }

    /// The vectors of `texts` (one per text, in order), cached as in
    /// [`ToolVectors::for_catalog`].
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when a text cannot be tokenized.
    pub fn for_texts(
        texts: &[&str],
        encoder: &Encoder,
        cache_dir: Option<&Path>,
    ) -> Result<ToolVectors, SemanticError> {
        let key = ToolVectors::key_for(encoder.model_id(), texts);
        let file = cache_dir.map(|d| d.join(format!("{}.tcvec", hex(&key[..16]))));
        if let Some(path) = &file {
            if let Ok(bytes) = fs::read(path) {
                if let Ok(mut v) = ToolVectors::from_bytes(&bytes) {
                    if v.key == key && v.len == texts.len() && v.dim == encoder.dim() {
                        v.source = VectorSource::Cache;
                        v.cache_file = file.clone();
                        return Ok(v);
                    }
                }
            }
        }
        let rows: Vec<Vec<f32>> = texts
            .par_iter()
            .map(|t| encoder.encode_document(t))
            .collect::<Result<_, _>>()?;
        let mut values = Vec::with_capacity(texts.len() * encoder.dim());
        rows.iter().for_each(|r| values.extend_from_slice(r));
        let mut v = ToolVectors {
            len: texts.len(),
            dim: encoder.dim(),
            key,
            values: Values::F32(values),
            source: VectorSource::Computed,
            cache_file: None,
            cache_error: None,
        };
        if let Some(path) = file {
            match write_atomic(&path, &v.to_bytes()) {
                Ok(()) => v.cache_file = Some(path),
                Err(e) => v.cache_error = Some(format!("cannot write `{}`: {e}", path.display())),
            }
        }
        Ok(v)
    }

    /// The cache key of `texts` embedded by the model `model_id` ([`Encoder::model_id`]):
    /// SHA-256 over a format tag, the model id and every text (length-prefixed), so a changed
    /// model, tool text, tool order or tool count gives another key.
    pub fn key_for(model_id: &str, texts: &[&str]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"toolcat tool vectors 1\0");
        h.update(model_id.as_bytes());
        h.update((texts.len() as u64).to_le_bytes());
        for t in texts {
            h.update((t.len() as u64).to_le_bytes());
            h.update(t.as_bytes());
        }
        h.finalize().into()
    }

    /// The key these vectors were computed under ([`ToolVectors::key_for`]).
    pub fn key(&self) -> [u8; 32] {
        self.key
    }

    /// Whether these vectors are the ones `encoder` gives for `catalog`'s current tool texts
    /// (checks the key; encodes nothing). Embedded vectors that do not match are stale.
    pub fn matches_catalog(&self, catalog: &Catalog, encoder: &Encoder) -> bool {
        let texts: Vec<String> = catalog.tools().map(|t| tool_text(catalog, t)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        self.key == ToolVectors::key_for(encoder.model_id(), &refs) && self.dim == encoder.dim()
    }

    /// The number of vectors (tools).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Values per vector (the encoder's [`Encoder::dim`]).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How the values are stored.
    pub fn precision(&self) -> VectorPrecision {
        match self.values {
            Values::F32(_) => VectorPrecision::F32,
            Values::Int8 { .. } => VectorPrecision::Int8,
        }
    }

    /// Where these vectors came from.
    pub fn source(&self) -> VectorSource {
        self.source
    }

    /// The cache file read or written, when a cache folder was given and used.
    pub fn cache_file(&self) -> Option<&Path> {
        self.cache_file.as_deref()
    }

    /// Why the cache file could not be written, when it could not (the vectors are still good).
    pub fn cache_error(&self) -> Option<&str> {
        self.cache_error.as_deref()
    }

    /// Vector `i` as f32 (dequantized for int8); `None` past the end.
    pub fn vector(&self, i: usize) -> Option<Vec<f32>> {
        if i >= self.len {
            return None;
        }
        let r = i * self.dim..(i + 1) * self.dim;
        Some(match &self.values {
            Values::F32(v) => v[r].to_vec(),
            Values::Int8 { values, scales } => {
                values[r].iter().map(|&b| b as f32 * scales[i]).collect()
            }
        })
    }

    /// The same vectors quantized to int8 ([`VectorPrecision::Int8`]); int8 vectors are returned
    /// unchanged.
    pub fn quantized(&self) -> ToolVectors {
        let Values::F32(v) = &self.values else {
            return self.clone();
        };
        let mut values = Vec::with_capacity(v.len());
        let mut scales = Vec::with_capacity(self.len);
        for row in v.chunks_exact(self.dim.max(1)) {
            let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
            scales.push(scale);
            values.extend(
                row.iter()
                    .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
            );
        }
        ToolVectors {
            values: Values::Int8 { values, scales },
            ..self.clone()
        }
    }

    /// The cosine of `query` (an L2-normalised vector from [`Encoder::encode_query`]) with every tool
    /// vector: one score per tool in catalog order, in [-1, 1]. A query whose length is not
    /// [`ToolVectors::dim`] scores 0 everywhere.
    pub fn cosine_all(&self, query: &[f32]) -> Vec<f32> {
        if query.len() != self.dim || self.dim == 0 {
            return vec![0.0; self.len];
        }
        match &self.values {
            Values::F32(v) => v
                .chunks_exact(self.dim)
                .map(|row| super::kernels::dot(row, query))
                .collect(),
            Values::Int8 { values, scales } => values
                .chunks_exact(self.dim)
                .zip(scales)
                .map(|(row, s)| dot_i8(row, query) * s)
                .collect(),
        }
    }

    /// The stored form (see the module docs): what the cache files hold and what a build script
    /// embeds.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.len * self.dim * 4 + 32);
        out.extend_from_slice(MAGIC);
        out.push(match self.precision() {
            VectorPrecision::F32 => 0,
            VectorPrecision::Int8 => 1,
        });
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&(self.len as u32).to_le_bytes());
        out.extend_from_slice(&(self.dim as u32).to_le_bytes());
        out.extend_from_slice(&self.key);
        match &self.values {
            Values::F32(v) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Values::Int8 { values, scales } => {
                out.extend(values.iter().map(|&b| b as u8));
                scales
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
            }
        }
        let digest: [u8; 32] = Sha256::digest(&out).into();
        out.extend_from_slice(&digest);
        out
    }

    /// Vectors from their stored form ([`ToolVectors::to_bytes`]), e.g. the bytes a build script
    /// embedded with `include_bytes!`. Check them against the catalog with
    /// [`ToolVectors::matches_catalog`].
    ///
    /// # Errors
    /// [`SemanticError::Vectors`] when the bytes are not tool vectors of this format version, are
    /// cut short, or fail their checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<ToolVectors, SemanticError> {
        if bytes.len() < HEADER + 32 || &bytes[..5] != b"TCVEC" {
            return Err(vectors_error("are not in the toolcat vector format"));
        }
        if &bytes[..8] != MAGIC {
            return Err(vectors_error(format!(
                "have format version {}, this build reads version {}",
                bytes[7], MAGIC[7]
            )));
        }
        let (body, digest) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body).as_slice() != digest {
            return Err(vectors_error("fail their checksum (the file is damaged)"));
        }
        let u32_at =
            |i: usize| u32::from_le_bytes([body[i], body[i + 1], body[i + 2], body[i + 3]]);
        let precision = body[8];
        let len = u32_at(12) as usize;
        let dim = u32_at(16) as usize;
        let mut key = [0u8; 32];
        key.copy_from_slice(&body[20..52]);
        let data = &body[HEADER..];
        let count = len
            .checked_mul(dim)
            .ok_or_else(|| vectors_error("declare an impossible size"))?;
        let values = match precision {
            0 if data.len() == count * 4 => Values::F32(
                data.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
            ),
            1 if data.len() == count + len * 4 => Values::Int8 {
                values: data[..count].iter().map(|&b| b as i8).collect(),
                scales: data[count..]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
            },
            0 | 1 => {
                return Err(vectors_error(
                    "have a length that does not fit their header",
                ))
            }
            p => return Err(vectors_error(format!("have an unknown precision {p}"))),
        };
        Ok(ToolVectors {
            len,
            dim,
            key,
            values,
            source: VectorSource::Bytes,
            cache_file: None,
            cache_error: None,
        })
    }
}

fn dot_i8(row: &[i8], q: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let cr = row.chunks_exact(8);
    let cq = q.chunks_exact(8);
    let tail: f32 = cr
        .remainder()
        .iter()
        .zip(cq.remainder())
        .map(|(&b, y)| b as f32 * y)
        .sum();
    for (b, y) in cr.zip(cq) {
        for i in 0..8 {
            acc[i] += b[i] as f32 * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so readers
/// never see half a file; creates the folder.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// The file [`embed_catalog_vectors`] writes into `OUT_DIR`; include it with
/// `include_bytes!(concat!(env!("OUT_DIR"), "/toolcat_tool_vectors.bin"))`.
pub const VECTORS_FILE: &str = "toolcat_tool_vectors.bin";

/// For a build script: embeds the catalog's tool vectors in the crate being built.
///
/// When `TOOLCAT_MODEL_DIR` names a model directory, the catalog at `catalog` (relative to
/// `CARGO_MANIFEST_DIR`, or absolute) is loaded, its tool vectors are encoded (through the cache
/// of [`default_cache_dir`], so a rebuild with unchanged texts encodes nothing) and written to
/// `OUT_DIR/`[`VECTORS_FILE`] in the stored form, int8-quantized when `TOOLCAT_VECTORS=int8`
/// (f32 otherwise: `f32` or unset; any other value is an error). Without `TOOLCAT_MODEL_DIR` the
/// file is written empty, so the `include_bytes!` still compiles and [`ToolVectors::load`] falls
/// back to the run-time path.
/// The file is rewritten only when its content changes. Returns the `cargo::` lines to print
/// (rerun triggers, and a warning or error naming what failed); the caller prints them.
///
/// The build script needs `toolcat` with feature `semantic` as a build dependency:
/// ```toml
/// [build-dependencies]
/// toolcat = { version = "0.1", features = ["semantic"] }
///
/// # Build dependencies are compiled without optimisation; the encoder wants it.
/// [profile.release.package.toolcat]
/// opt-level = 3
/// ```
pub fn embed_catalog_vectors(catalog: &str) -> Vec<String> {
    let mut lines = vec![
        "cargo::rerun-if-env-changed=TOOLCAT_MODEL_DIR".to_string(),
        "cargo::rerun-if-env-changed=TOOLCAT_VECTORS".to_string(),
    ];
    let (Some(manifest), Some(out)) = (
        std::env::var_os("CARGO_MANIFEST_DIR"),
        std::env::var_os("OUT_DIR"),
    ) else {
        lines.push(
            "cargo::error=`embed_catalog_vectors` runs in a build script (`CARGO_MANIFEST_DIR` \
             and `OUT_DIR` are not set)"
                .to_string(),
        );
        return lines;
    };
    let out_file = PathBuf::from(out).join(VECTORS_FILE);
    let model = std::env::var_os("TOOLCAT_MODEL_DIR").filter(|d| !d.is_empty());
    let path = PathBuf::from(manifest).join(catalog);
    if let Some(model) = &model {
        lines.push(format!("cargo::rerun-if-changed={}", path.display()));
        lines.push(format!(
            "cargo::rerun-if-changed={}",
            PathBuf::from(model).display()
        ));
    }
    let precision = match std::env::var("TOOLCAT_VECTORS").as_deref() {
        Ok("int8") => VectorPrecision::Int8,
        Ok("f32") | Ok("") | Err(std::env::VarError::NotPresent) => VectorPrecision::F32,
        Ok(other) => {
            lines.push(format!(
                "cargo::error=TOOLCAT_VECTORS is `{}`; set it to `f32` or `int8`, or unset it \
                 (f32)",
                other.replace(['\r', '\n'], " ")
            ));
            return lines;
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            lines.push(
                "cargo::error=TOOLCAT_VECTORS is not UTF-8; set it to `f32` or `int8`, or unset it"
                    .to_string(),
            );
            return lines;
        }
    };
    let cache = default_cache_dir();
    if let Err(e) = write_catalog_vectors(
        &path,
        model.as_deref().map(Path::new),
        precision,
        cache.as_deref(),
        &out_file,
    ) {
        let fix = if model.is_some() && !matches!(e, SemanticError::Catalog(_)) {
            " (the model directory comes from TOOLCAT_MODEL_DIR: point it at a \
             sentence-transformers model, or unset it to build without compiled-in tool vectors)"
        } else {
            ""
        };
        lines.push(format!(
            "cargo::error={}{fix}",
            e.to_string().replace(['\r', '\n'], " ")
        ));
    }
    lines
}

/// The work of [`embed_catalog_vectors`] without the environment: writes the stored form of the
/// tool vectors of the catalog file `catalog`, encoded by the model in `model_dir` (through
/// `cache_dir`), to `out_file` — or an empty file when `model_dir` is `None`. Writes only when
/// the content changes; returns whether it wrote.
///
/// # Errors
/// [`SemanticError::Catalog`] when the catalog does not load, the encoder's errors, and
/// [`SemanticError::Vectors`] when `out_file` cannot be written.
pub fn write_catalog_vectors(
    catalog: &Path,
    model_dir: Option<&Path>,
    precision: VectorPrecision,
    cache_dir: Option<&Path>,
    out_file: &Path,
) -> Result<bool, SemanticError> {
    let bytes = match model_dir {
        None => Vec::new(),
        Some(model) => {
            let catalog =
                Catalog::load(catalog).map_err(|e| SemanticError::Catalog(e.to_string()))?;
            let encoder = Encoder::load(model)?;
            let v = ToolVectors::for_catalog(&catalog, &encoder, cache_dir)?;
            match precision {
                VectorPrecision::F32 => v.to_bytes(),
                VectorPrecision::Int8 => v.quantized().to_bytes(),
            }
        }
    };
    if fs::read(out_file).ok().as_deref() == Some(bytes.as_slice()) {
        return Ok(false);
    }
    write_atomic(out_file, &bytes).map_err(|e| {
        vectors_error(format!(
            "cannot be written to `{}`: {e}",
            out_file.display()
        ))
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_split_name_follows_the_reference_regexes() {
        assert_eq!(
            peer_split_name("read_fileAsText.v2"),
            "read file As Text v2"
        );
        assert_eq!(peer_split_name("PDF&URLTool"), "PDF&URLTool");
        assert_eq!(peer_split_name("a__b--c"), "a b c");
        assert_eq!(peer_split_name("getHTTPResponse"), "get HTTPResponse");
    }

    fn sample(len: usize, dim: usize) -> ToolVectors {
        let mut values = Vec::new();
        for i in 0..len {
            let row: Vec<f32> = (0..dim)
                .map(|j| ((i * 7 + j * 3) % 11) as f32 - 5.0)
                .collect();
            let n = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            values.extend(row.iter().map(|x| x / n));
        }
        ToolVectors {
            len,
            dim,
            key: [7; 32],
            values: Values::F32(values),
            source: VectorSource::Computed,
            cache_file: None,
            cache_error: None,
        }
    }

    #[test]
    fn bytes_round_trip_and_damage_is_refused() {
        for v in [sample(5, 12), sample(5, 12).quantized()] {
            let bytes = v.to_bytes();
            let back = ToolVectors::from_bytes(&bytes).unwrap();
            assert_eq!(back.source(), VectorSource::Bytes);
            assert_eq!(back.precision(), v.precision());
            assert_eq!(back.key(), v.key());
            for i in 0..5 {
                assert_eq!(back.vector(i), v.vector(i));
            }
            let mut bad = bytes.clone();
            bad[HEADER + 3] ^= 1;
            let e = ToolVectors::from_bytes(&bad).unwrap_err().to_string();
            assert!(e.contains("checksum"), "{e}");
            let e = ToolVectors::from_bytes(&bytes[..40])
                .unwrap_err()
                .to_string();
            assert!(e.contains("format"), "{e}");
        }
    }

    #[test]
    fn int8_cosines_stay_close_to_f32() {
        let v = sample(9, 384);
        let q = v.vector(3).unwrap();
        let exact = v.cosine_all(&q);
        let approx = v.quantized().cosine_all(&q);
        assert!((exact[3] - 1.0).abs() < 1e-5);
        for (a, b) in exact.iter().zip(&approx) {
            assert!((a - b).abs() < 5e-3, "{a} vs {b}");
        }
        assert_eq!(v.cosine_all(&[1.0, 0.0]), vec![0.0; 9]);
    }
}
