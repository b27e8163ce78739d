//! The BM25 search index of a catalog (tantivy), built once and embedded as bytes.
//!
//! One document per tool, fields in decreasing weight:
//!
//! | field         | text                                                    | boost |
//! |---------------|---------------------------------------------------------|-------|
//! | `name`        | exported and declared name, lower-cased, one token each | 0     |
//! | `name_parts`  | the names split into words by [`split_name`]            | 2.0   |
//! | `keywords`    | the declared `keywords`                                 | 0     |
//! | `text`        | name parts, keywords, description, parameter names and  | 2.0   |
//! |               | parameter descriptions: the whole tool as one text      |       |
//! | `params`      | parameter names, split into words                       | 0     |
//! | `param_docs`  | parameter descriptions from the `input_schema`          | 0     |
//! | `tool`        | the tool index (`u64` fast field, not searched)         | —     |
//!
//! Text fields go through one English analyzer ([`ANALYZER`]: split on non-alphanumerics,
//! drop tokens over 40 bytes, lower-case, spell out [`ABBREVIATIONS`], drop [`STOP_WORDS`],
//! Snowball English stemmer); [`register_analyzers`] installs it, and both the build and
//! [`open_index`] call it, so indexing and querying always agree. Queries are never parsed with
//! tantivy's query language (user text would hit syntax errors): [`SearchIndex::search`] runs the
//! query text through the same analyzer and builds a boolean "should" query of one boosted term
//! query per field and term, plus the [`SYNONYMS`] of the query's words at [`SYNONYM_WEIGHT`].
//!
//! # Why these choices
//! Each rule and constant is kept only if its gain on held-out folds is positive by at least one
//! standard error: `bench/tune` splits each of the three dev sets (MetaTool single-tool and
//! two-tool, LiveMCPBench) into 5 folds (`toolcat eval --folds`), picks the rule's value on 4
//! and scores it on the fifth against the neutral value (BENCHMARKS.md, "Cross-validated ranking
//! choices", has every figure). Fields at boost 0 are not searched on their own (see
//! [`BOOST_NAME`]):
//! - the `text` field scores the tool's words together, as a single-field BM25 does: term
//!   frequency saturates and length is normalized over the whole tool, and a tool that says what
//!   it does only in its parameters (`head`: "Branch containing changes") is still found by it.
//!   The name parts count a second time on their own (held-out gain +0.055 ± 0.013 of the mean of
//!   R@5 and nDCG@5), so a tool's name still leads;
//! - stop words include the pronouns, auxiliaries and modal verbs that fill requests ("can you
//!   show me my ..."), which otherwise match every description written in the second person
//!   (held-out gain over Lucene's list alone +0.031 ± 0.010);
//! - abbreviations are spelled out on both sides, so `PR`, `repo` and `dir` meet the words
//!   descriptions and names use (`RepoTool` matches "repositories"; +0.007 ± 0.004);
//! - synonyms cover the few verbs every catalog uses for the same operations (open / create /
//!   make / new, show / list / get, ...), at a reduced weight so the user's own word still wins
//!   (+0.005 ± 0.004).
//!
//! Tried and left out, because two-tool queries (which must match two tools on different words)
//! lost more than other sets gained: a per-term maximum over fields (DisjunctionMax, tie-breakers
//! 0 to 0.7) instead of the sum, and a coordination factor (score times the share of query words
//! matched). BM25's `k1` and `b` are tantivy's fixed 1.2 and 0.75.
//!
//! # Byte format
//! The index lives in a tantivy `RamDirectory`; [`build_index_bytes`] packs its files into one blob:
//!
//! ```text
//! magic    8 bytes  b"TCATIDX\0"
//! version  u32 LE   2 (1: before the `text` field, abbreviations and the longer stop-word list)
//! count    u32 LE   number of files
//! count × { name_len u32 LE, name (UTF-8), data_len u64 LE, data }   sorted by name
//! ```
//!
//! The build is deterministic: the same tables and parameters give the same bytes. Tantivy names
//! segments with random UUIDs, so the packer renames the one segment to a fixed id (in its file
//! names and in `meta.json`); everything else tantivy writes depends only on the documents, which
//! are added in catalog order by a single indexing thread.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::directory::{Directory, RamDirectory};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RawTokenizer, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter,
    TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

use crate::tables::{bit, Tables};

/// Name of the English analyzer registered on every index: simple tokenizer, long-token removal,
/// lower-casing, [`ABBREVIATIONS`] spelled out, [`STOP_WORDS`] removed, English stemmer.
pub const ANALYZER: &str = "toolcat_en";
/// Name of the analyzer of the `name` field: the whole name as one lower-cased token.
pub const NAME_ANALYZER: &str = "toolcat_name";

/// Field boosts, in the order of the table in the module docs, each kept only where its held-out
/// gain over the neutral value (0: the field is not searched on its own) is positive by at least
/// one standard error in `bench/tune` (5 folds of the three dev sets, tuned on 4 folds, scored on
/// the fifth; BENCHMARKS.md, "Cross-validated ranking choices"). Only the ratio of `name_parts`
/// to `text` matters once the others are 0, and every tuning run chose 1:1 — name parts twice
/// (once on their own, once in `text`), the rest of the tool once: held-out gain of `name_parts`
/// +0.055 ± 0.013 (mean of R@5 and nDCG@5), of `text` at 2 over 1 +0.006 ± 0.010 (se 0.004).
/// `name`, `keywords`, `params` and `param_docs` gained nothing measurable (−0.002 to 0.000;
/// keywords cannot be measured on imported catalogs, which have none), so they are 0: their words
/// still count through `text`, which holds them all. The fields stay in the index, unsearched.
pub const BOOST_NAME: f32 = 0.0;
/// See [`BOOST_NAME`].
pub const BOOST_NAME_PARTS: f32 = 2.0;
/// See [`BOOST_NAME`].
pub const BOOST_KEYWORDS: f32 = 0.0;
/// See [`BOOST_NAME`].
pub const BOOST_TEXT: f32 = 2.0;
/// See [`BOOST_NAME`].
pub const BOOST_PARAMS: f32 = 0.0;
/// See [`BOOST_NAME`].
pub const BOOST_PARAM_DOCS: f32 = 0.0;

/// Most distinct query terms used per field; a longer query is cut (its first terms are kept).
pub const MAX_QUERY_TERMS: usize = 64;

/// Weight of a synonym's term queries relative to the user's own word (its field boosts times
/// this). Below 1 so that a tool using the user's exact word ranks above one using a synonym.
/// Cross-validated (`bench/tune`, grid 0 / 0.2 / 0.4 / 0.6): 0.4 chosen on the training folds,
/// held-out gain over no synonyms +0.005 ± 0.004 (se 0.002).
pub const SYNONYM_WEIGHT: f32 = 0.4;

/// Words that name the same operation or thing in tool catalogs; a query word in a group also
/// searches the group's other words, at [`SYNONYM_WEIGHT`]. Kept small and general: the verbs
/// catalogs use for create, delete, read, update and search. `add` is left out of the first group
/// because it mostly means attach (`add_label`), not create.
pub const SYNONYMS: &[&[&str]] = &[
    &["create", "new", "make", "open"],
    &["delete", "remove", "erase"],
    &[
        "get", "show", "list", "fetch", "read", "view", "retrieve", "display",
    ],
    &["update", "edit", "modify", "change"],
    &["search", "find", "lookup", "query"],
];

/// Abbreviations the analyzer replaces with their long form, in tool names, descriptions and
/// queries alike (lower-case, before stop words and stemming).
pub const ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("pr", &["pull", "request"]),
    ("prs", &["pull", "requests"]),
    ("repo", &["repository"]),
    ("repos", &["repositories"]),
    ("dir", &["directory"]),
    ("dirs", &["directories"]),
    ("msg", &["message"]),
    ("msgs", &["messages"]),
];

/// Stop words of the English analyzer: Lucene's English list (the one tantivy ships), plus the
/// pronouns, auxiliaries and modal verbs that fill requests ("can you show me my ...") and would
/// otherwise match every description written in the second person.
pub const STOP_WORDS: &[&str] = &[
    // Lucene's English stop words.
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with", // Pronouns and determiners.
    "i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you", "your", "yours", "he",
    "him", "his", "she", "her", "its", "them", "what", "which", "who", "whom", "those",
    // Auxiliaries, modal verbs and fillers.
    "am", "were", "been", "being", "have", "has", "had", "having", "do", "does", "did", "would",
    "should", "could", "can", "may", "might", "must", "shall", "so", "than", "too", "very", "just",
    "also", "please",
];

/// How many of [`STOP_WORDS`] are Lucene's English list (the rest are the request fillers).
const LUCENE_STOP_WORDS: usize = 33;

const MAGIC: &[u8; 8] = b"TCATIDX\0";
const VERSION: u32 = 2;
const META_JSON: &str = "meta.json";
/// Heap budget of the single indexing thread, in bytes (tantivy's minimum is 15 MB).
const WRITER_BUDGET: usize = 15_000_000;

/// Why an index could not be built, opened or searched.
#[derive(Debug)]
pub struct IndexError(pub String);

impl std::fmt::Display for IndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for IndexError {}

impl IndexError {
    fn tantivy(doing: &str, e: impl std::fmt::Display) -> Self {
        IndexError(format!("search index: {doing}: {e}"))
    }
    fn format(what: impl std::fmt::Display) -> Self {
        IndexError(format!(
            "search index bytes are malformed: {what}; rebuild the catalog so its index is regenerated"
        ))
    }
}

/// Splits a tool or parameter name into lower-case words.
///
/// Separators are every non-alphanumeric character (`_`, `-`, `.`, `/`, spaces, so `snake_case`,
/// `kebab-case` and the `NS__` namespace prefix all split); inside a word, a lower-case letter or
/// digit followed by an upper-case letter starts a new word (`createPullRequest` → `create pull
/// request`), and so does the last capital of a run followed by a lower-case letter
/// (`HTTPServer` → `http server`). Digits stay with the letters before them (`s3Bucket` → `s3
/// bucket`).
pub fn split_name(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for chunk in name.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let boundary = (cur.is_uppercase() && (prev.is_lowercase() || prev.is_numeric()))
                || (cur.is_uppercase() && prev.is_uppercase() && next_lower);
            if boundary {
                parts.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        if start < chars.len() {
            parts.push(chars[start..].iter().collect::<String>().to_lowercase());
        }
    }
    parts
}

/// The English analyzer ([`ANALYZER`]).
pub fn english_analyzer() -> TextAnalyzer {
    let ranking = __tuning::current();
    let stop_words = if ranking.request_stop_words {
        STOP_WORDS
    } else {
        &STOP_WORDS[..LUCENE_STOP_WORDS]
    };
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(SpellOutAbbreviations {
            on: ranking.abbreviations,
        })
        .filter(StopWordFilter::remove(
            stop_words.iter().map(|w| (*w).to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Token filter replacing each of [`ABBREVIATIONS`] (a whole lower-cased token) by its long form,
/// one token per word, all at the abbreviation's position.
#[derive(Debug, Clone, Copy)]
struct SpellOutAbbreviations {
    /// `false` only in tuning runs that measure the rule ([`__tuning`]): tokens pass unchanged.
    on: bool,
}

impl TokenFilter for SpellOutAbbreviations {
    type Tokenizer<T: Tokenizer> = SpellOutFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> SpellOutFilter<T> {
        SpellOutFilter {
            inner: tokenizer,
            pending: Vec::new(),
            on: self.on,
        }
    }
}

#[derive(Clone)]
struct SpellOutFilter<T> {
    inner: T,
    pending: Vec<Token>,
    on: bool,
}

impl<T: Tokenizer> Tokenizer for SpellOutFilter<T> {
    type TokenStream<'a> = SpellOutStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        self.pending.clear();
        SpellOutStream {
            tail: self.inner.token_stream(text),
            pending: &mut self.pending,
            on: self.on,
        }
    }
}

struct SpellOutStream<'a, T> {
    tail: T,
    /// The long-form words of the current abbreviation, last word first: the current token is
    /// the last element, and the tail's token when this is empty.
    pending: &'a mut Vec<Token>,
    on: bool,
}

impl<T: TokenStream> TokenStream for SpellOutStream<'_, T> {
    fn advance(&mut self) -> bool {
        self.pending.pop();
        if !self.pending.is_empty() {
            return true;
        }
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token();
        if !self.on {
            return true;
        }
        if let Some((_, long)) = ABBREVIATIONS.iter().find(|(short, _)| *short == token.text) {
            self.pending.extend(long.iter().rev().map(|word| Token {
                text: (*word).to_string(),
                ..token.clone()
            }));
        }
        true
    }

    fn token(&self) -> &Token {
        self.pending.last().unwrap_or_else(|| self.tail.token())
    }

    fn token_mut(&mut self) -> &mut Token {
        match self.pending.last_mut() {
            Some(token) => token,
            None => self.tail.token_mut(),
        }
    }
}

/// The analyzer of the `name` field ([`NAME_ANALYZER`]): the whole text as one lower-cased token.
pub fn name_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(RawTokenizer::default())
        .filter(LowerCaser)
        .build()
}

/// Registers [`ANALYZER`] and [`NAME_ANALYZER`] on `index`; the build and [`open_index`] both call
/// this, so indexed and queried text are analyzed the same way.
pub fn register_analyzers(index: &Index) {
    index.tokenizers().register(ANALYZER, english_analyzer());
    index.tokenizers().register(NAME_ANALYZER, name_analyzer());
}

/// The schema's fields.
#[derive(Debug, Clone, Copy)]
struct Fields {
    name: Field,
    name_parts: Field,
    keywords: Field,
    text: Field,
    params: Field,
    param_docs: Field,
    tool: Field,
}

impl Fields {
    /// The searched text fields with their boosts and analyzers (`true` = English analyzer).
    fn weighted(&self) -> [(Field, f32, bool); 6] {
        let r = __tuning::current();
        [
            (self.name, r.boost_name, false),
            (self.name_parts, r.boost_name_parts, true),
            (self.keywords, r.boost_keywords, true),
            (self.text, r.boost_text, true),
            (self.params, r.boost_params, true),
            (self.param_docs, r.boost_param_docs, true),
        ]
    }
}

fn schema() -> (Schema, Fields) {
    let text = |analyzer: &str| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(analyzer)
                .set_index_option(IndexRecordOption::WithFreqs),
        )
    };
    let mut b = Schema::builder();
    let fields = Fields {
        name: b.add_text_field("name", text(NAME_ANALYZER)),
        name_parts: b.add_text_field("name_parts", text(ANALYZER)),
        keywords: b.add_text_field("keywords", text(ANALYZER)),
        text: b.add_text_field("text", text(ANALYZER)),
        params: b.add_text_field("params", text(ANALYZER)),
        param_docs: b.add_text_field("param_docs", text(ANALYZER)),
        tool: b.add_u64_field("tool", NumericOptions::default().set_fast()),
    };
    (b.build(), fields)
}

fn fields_of(schema: &Schema) -> Result<Fields, IndexError> {
    let get = |name: &str| {
        schema
            .get_field(name)
            .map_err(|_| IndexError::format(format!("field `{name}` is missing")))
    };
    Ok(Fields {
        name: get("name")?,
        name_parts: get("name_parts")?,
        keywords: get("keywords")?,
        text: get("text")?,
        params: get("params")?,
        param_docs: get("param_docs")?,
        tool: get("tool")?,
    })
}

/// Parameter names and descriptions declared in a tool's `input_schema` JSON text (top-level
/// `properties` only). Unparsable text yields nothing: validation reports it, not the index.
fn schema_params(input_schema: Option<&str>) -> (Vec<String>, Vec<String>) {
    let mut names = Vec::new();
    let mut docs = Vec::new();
    let Some(text) = input_schema else {
        return (names, docs);
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return (names, docs);
    };
    if let Some(props) = value.get("properties").and_then(|p| p.as_object()) {
        for (name, prop) in props {
            names.push(name.clone());
            if let Some(d) = prop.get("description").and_then(|d| d.as_str()) {
                docs.push(d.to_string());
            }
        }
    }
    (names, docs)
}

/// Builds the search index of `tables` and serializes it to bytes (format in the module docs).
///
/// `params[i]` are the parameter names of tool `i` known outside its declared `input_schema`
/// (a local tool's argument fields); it may be shorter than `tables.len` (missing entries = none).
/// Parameter names and descriptions of a declared `input_schema` are read from the tables.
///
/// # Errors
/// When tantivy fails to build the index.
pub fn build_index_bytes(tables: &Tables, params: &[Vec<String>]) -> Result<Vec<u8>, IndexError> {
    let (schema, f) = schema();
    let dir = RamDirectory::create();
    let index = Index::create(dir.clone(), schema, Default::default())
        .map_err(|e| IndexError::tantivy("creating the index", e))?;
    register_analyzers(&index);
    // One thread: documents keep catalog order, so doc id == tool index and the bytes are stable.
    let mut writer = index
        .writer_with_num_threads::<TantivyDocument>(1, WRITER_BUDGET)
        .map_err(|e| IndexError::tantivy("starting the writer", e))?;
    for i in 0..tables.len {
        let mut doc = TantivyDocument::new();
        let exported = tables.exported_names[i].as_ref();
        let declared = tables.names[i].as_ref();
        doc.add_text(f.name, exported);
        if declared != exported {
            doc.add_text(f.name, declared);
        }
        let name_parts = split_name(exported).join(" ");
        doc.add_text(f.name_parts, &name_parts);
        doc.add_text(f.text, &name_parts);
        for kw in tables.keywords[i].iter() {
            doc.add_text(f.keywords, kw.as_ref());
            doc.add_text(f.text, kw.as_ref());
        }
        doc.add_text(f.text, tables.descriptions[i].as_ref());
        let (mut names, docs) = schema_params(tables.input_schema[i].as_deref());
        if let Some(extra) = params.get(i) {
            names.extend(extra.iter().cloned());
        }
        for name in &names {
            let words = split_name(name).join(" ");
            doc.add_text(f.params, &words);
            doc.add_text(f.text, &words);
        }
        for d in &docs {
            doc.add_text(f.param_docs, d);
            doc.add_text(f.text, d);
        }
        doc.add_u64(f.tool, i as u64);
        writer
            .add_document(doc)
            .map_err(|e| IndexError::tantivy("adding a document", e))?;
    }
    writer
        .commit()
        .map_err(|e| IndexError::tantivy("committing", e))?;
    writer
        .wait_merging_threads()
        .map_err(|e| IndexError::tantivy("finishing the writer", e))?;
    pack(&index, &dir)
}

/// Reads the files of the committed index, renames its segment to a fixed id and packs them.
fn pack(index: &Index, dir: &RamDirectory) -> Result<Vec<u8>, IndexError> {
    let metas = index
        .load_metas()
        .map_err(|e| IndexError::tantivy("reading the index metadata", e))?;
    let read = |path: &Path| {
        dir.atomic_read(path)
            .map_err(|e| IndexError::tantivy("reading an index file", e))
    };
    let mut meta = String::from_utf8(read(Path::new(META_JSON))?)
        .map_err(|e| IndexError::tantivy("reading `meta.json`", e))?;
    let segments = metas.segments.clone();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let paths = metas.list_segment_files();
    for (n, segment) in segments.iter().enumerate() {
        let id = segment.id();
        let fixed = format!("{:032x}", n + 1);
        let fixed_hyphenated = format!(
            "{}-{}-{}-{}-{}",
            &fixed[0..8],
            &fixed[8..12],
            &fixed[12..16],
            &fixed[16..20],
            &fixed[20..32]
        );
        let simple = id.uuid_string();
        let hyphenated = format!(
            "{}-{}-{}-{}-{}",
            &simple[0..8],
            &simple[8..12],
            &simple[12..16],
            &simple[16..20],
            &simple[20..32]
        );
        meta = meta
            .replace(&hyphenated, &fixed_hyphenated)
            .replace(&simple, &fixed);
        let mut own: Vec<&PathBuf> = paths
            .iter()
            .filter(|p| p.to_string_lossy().starts_with(&simple))
            .collect();
        own.sort();
        for path in own {
            let exists = dir
                .exists(path)
                .map_err(|e| IndexError::tantivy("listing index files", e))?;
            if exists {
                let name = path.to_string_lossy().replace(&simple, &fixed);
                files.push((name, read(path)?));
            }
        }
    }
    files.push((META_JSON.to_string(), meta.into_bytes()));
    files.sort_by(|a, b| a.0.cmp(&b.0));

    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for (name, data) in &files {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(data);
    }
    Ok(out)
}

/// Unpacks the container into `(name, data)` pairs, checking every length.
fn unpack(bytes: &[u8]) -> Result<Vec<(&str, &[u8])>, IndexError> {
    struct Cursor<'a>(&'a [u8]);
    impl<'a> Cursor<'a> {
        fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], IndexError> {
            if self.0.len() < n {
                return Err(IndexError::format(format!("truncated {what}")));
            }
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            Ok(head)
        }
        fn u32(&mut self, what: &str) -> Result<u32, IndexError> {
            let b = self.take(4, what)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        fn u64(&mut self, what: &str) -> Result<u64, IndexError> {
            let b = self.take(8, what)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Ok(u64::from_le_bytes(a))
        }
    }
    let mut c = Cursor(bytes);
    if c.take(MAGIC.len(), "header")? != MAGIC {
        return Err(IndexError::format("the header is not `TCATIDX`"));
    }
    let version = c.u32("version")?;
    if version != VERSION {
        return Err(IndexError::format(format!(
            "container version {version}, expected {VERSION}"
        )));
    }
    let count = c.u32("file count")?;
    let mut files: Vec<(&str, &[u8])> = Vec::new();
    for _ in 0..count {
        let len = c.u32("file name length")? as usize;
        let name = std::str::from_utf8(c.take(len, "file name")?)
            .map_err(|_| IndexError::format("a file name is not UTF-8"))?;
        let len = usize::try_from(c.u64("file length")?)
            .map_err(|_| IndexError::format("a file is larger than memory"))?;
        let data = c.take(len, "file data")?;
        if files.iter().any(|(n, _)| *n == name) {
            return Err(IndexError::format(format!("file `{name}` appears twice")));
        }
        files.push((name, data));
    }
    if !c.0.is_empty() {
        return Err(IndexError::format("trailing bytes after the last file"));
    }
    Ok(files)
}

/// An opened search index, ready to answer queries. Cheap to share (`Send + Sync`).
pub struct SearchIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    len: usize,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// Opens an index serialized by [`build_index_bytes`]; the files are copied into a `RamDirectory`.
///
/// # Errors
/// When the bytes are not a well-formed container or tantivy cannot open the index in it.
pub fn open_index(bytes: &[u8]) -> Result<SearchIndex, IndexError> {
    let dir = RamDirectory::create();
    for (name, data) in unpack(bytes)? {
        dir.atomic_write(Path::new(name), data)
            .map_err(|e| IndexError::tantivy("loading an index file", e))?;
    }
    let index = Index::open(dir).map_err(|e| IndexError::tantivy("opening the index", e))?;
    register_analyzers(&index);
    let fields = fields_of(&index.schema())?;
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(|e| IndexError::tantivy("opening a reader", e))?;
    let searcher = reader.searcher();
    let len = searcher.num_docs() as usize;
    Ok(SearchIndex {
        index,
        reader,
        fields,
        len,
    })
}

impl SearchIndex {
    /// Number of indexed tools (documents).
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The underlying tantivy index.
    pub fn tantivy(&self) -> &Index {
        &self.index
    }

    /// The analyzed query terms, per searched field, as `(field name, terms)`, the query's own
    /// terms first, then its [`SYNONYMS`] (searched at [`SYNONYM_WEIGHT`]); for diagnostics and
    /// tests of what a query matches on.
    pub fn query_terms(&self, query: &str) -> Vec<(String, Vec<String>)> {
        let schema = self.index.schema();
        let terms = QueryTerms::of(query);
        self.fields
            .weighted()
            .iter()
            .map(|&(field, _, english)| {
                let mut list: Vec<String> = terms
                    .for_field(&self.fields, field, english)
                    .iter()
                    .cloned()
                    .collect();
                if english {
                    list.extend(terms.synonyms.iter().cloned());
                }
                (schema.get_field_name(field).to_string(), list)
            })
            .collect()
    }

    /// BM25 search: the best `limit` tools whose bit is set in `allowed`, as `(tool index,
    /// score)`, best first (ties in catalog order).
    ///
    /// `allowed` is a bitset in the table layout (bit `i` = tool `i`); bits past its end count as
    /// unset. The filter runs inside the collector, so the top `limit` are filled from allowed
    /// tools only. Scores are tantivy BM25 sums over fields and terms, times the field boosts
    /// (times [`SYNONYM_WEIGHT`] for a synonym's terms); they are comparable only within one
    /// query. An empty or all-stop-word query returns nothing.
    ///
    /// # Errors
    /// When tantivy fails while searching.
    pub fn search(
        &self,
        query: &str,
        allowed: &[u64],
        limit: usize,
    ) -> Result<Vec<(u32, f32)>, IndexError> {
        if limit == 0 || self.len == 0 {
            return Ok(Vec::new());
        }
        let terms = QueryTerms::of(query);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (field, boost, english) in self.fields.weighted() {
            if boost == 0.0 {
                // A field at weight 0 (a tuning run without it) adds nothing to any score.
                continue;
            }
            let own = terms.for_field(&self.fields, field, english);
            let synonyms = if english { Some(&terms.synonyms) } else { None };
            let weighted = own.iter().take(MAX_QUERY_TERMS).map(|t| (t, boost)).chain(
                synonyms
                    .into_iter()
                    .flatten()
                    .take(MAX_QUERY_TERMS)
                    .map(|t| (t, boost * __tuning::current().synonym_weight)),
            );
            for (text, boost) in weighted {
                let term = Term::from_field_text(field, text);
                let q = TermQuery::new(term, IndexRecordOption::WithFreqs);
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost))));
            }
        }
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let query = BooleanQuery::new(clauses);
        let allowed: Arc<[u64]> = Arc::from(allowed);
        let filter = move |tool: u64| {
            let i = tool as usize;
            i / 64 < allowed.len() && bit(&allowed, i)
        };
        let collector = FilterCollector::new(
            "tool".to_string(),
            filter,
            TopDocs::with_limit(limit).order_by_score(),
        );
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&query, &collector)
            .map_err(|e| IndexError::tantivy("searching", e))?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let reader = searcher.segment_reader(address.segment_ord);
            let column = reader
                .fast_fields()
                .u64("tool")
                .map_err(|e| IndexError::tantivy("reading the `tool` field", e))?;
            if let Some(tool) = column.first(address.doc_id) {
                hits.push((tool as u32, score));
            }
        }
        // Equal scores keep catalog order, whatever order the collector left them in.
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(hits)
    }
}

/// Overrides of this module's ranking constants (and of `toolcat::fusion::LEXICAL_DEPTH`) for the
/// cross-validation runs that decide them (`bench/tune`): not an API. `toolcat eval` alone sets
/// them, once, from the environment variable [`__tuning::ENV`], before it loads a catalog; every
/// other process ranks with the constants ([`__tuning::DEFAULT`]).
///
/// Why a process-wide value set once rather than parameters: the constants are read deep in the
/// analyzer (at index build and query time alike) and in the fused search; threading a parameter
/// through `Catalog` would make the tuning knobs public API for good, while this hidden module
/// can be removed without touching a signature, and a value fixed before the first search can
/// never leave a catalog's index and its queries analyzed two ways.
#[doc(hidden)]
pub mod __tuning {
    use std::sync::OnceLock;

    /// The environment variable `toolcat eval` reads the overrides from:
    /// `KEY=VALUE[,KEY=VALUE...]` with the keys of [`KEYS`].
    pub const ENV: &str = "TOOLCAT_EVAL_RANKING";

    /// The overridable constants; [`DEFAULT`] holds the shipped values.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Ranking {
        pub boost_name: f32,
        pub boost_name_parts: f32,
        pub boost_keywords: f32,
        pub boost_text: f32,
        pub boost_params: f32,
        pub boost_param_docs: f32,
        /// `0` drops the synonyms.
        pub synonym_weight: f32,
        /// `false`: no abbreviation is spelled out.
        pub abbreviations: bool,
        /// `false`: Lucene's English stop words only, without the request fillers.
        pub request_stop_words: bool,
        /// `toolcat::fusion`'s lexical depth; `None` = its constant, `Some(0)` = every candidate.
        pub lexical_depth: Option<usize>,
    }

    /// The shipped constants.
    pub const DEFAULT: Ranking = Ranking {
        boost_name: super::BOOST_NAME,
        boost_name_parts: super::BOOST_NAME_PARTS,
        boost_keywords: super::BOOST_KEYWORDS,
        boost_text: super::BOOST_TEXT,
        boost_params: super::BOOST_PARAMS,
        boost_param_docs: super::BOOST_PARAM_DOCS,
        synonym_weight: super::SYNONYM_WEIGHT,
        abbreviations: true,
        request_stop_words: true,
        lexical_depth: None,
    };

    /// The keys of [`ENV`], one per field of [`Ranking`], named as the fields.
    pub const KEYS: [&str; 10] = [
        "boost_name",
        "boost_name_parts",
        "boost_keywords",
        "boost_text",
        "boost_params",
        "boost_param_docs",
        "synonym_weight",
        "abbreviations",
        "request_stop_words",
        "lexical_depth",
    ];

    static OVERRIDE: OnceLock<Ranking> = OnceLock::new();

    /// The ranking in force: the override when one was set, else [`DEFAULT`].
    pub fn current() -> &'static Ranking {
        OVERRIDE.get().unwrap_or(&DEFAULT)
    }

    /// Sets the override for the rest of the process; `Err` with the value already in force
    /// when one was set before.
    pub fn set(ranking: Ranking) -> Result<(), Ranking> {
        OVERRIDE.set(ranking)
    }

    /// [`DEFAULT`] with the `KEY=VALUE` pairs of `text` (comma-separated) applied. Boosts and
    /// the synonym weight are finite numbers ≥ 0, the switches `0` or `1`, the depth a count.
    ///
    /// # Errors
    /// A message naming the pair at fault and what it must be.
    pub fn parse(text: &str) -> Result<Ranking, String> {
        let mut r = DEFAULT;
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}` is not KEY=VALUE"))?;
            let (key, value) = (key.trim(), value.trim());
            let weight = || -> Result<f32, String> {
                value
                    .parse::<f32>()
                    .ok()
                    .filter(|w| w.is_finite() && *w >= 0.0)
                    .ok_or_else(|| format!("`{key}={value}`: the value must be a number ≥ 0"))
            };
            let switch = || -> Result<bool, String> {
                match value {
                    "0" => Ok(false),
                    "1" => Ok(true),
                    _ => Err(format!("`{key}={value}`: the value must be 0 or 1")),
                }
            };
            match key {
                "boost_name" => r.boost_name = weight()?,
                "boost_name_parts" => r.boost_name_parts = weight()?,
                "boost_keywords" => r.boost_keywords = weight()?,
                "boost_text" => r.boost_text = weight()?,
                "boost_params" => r.boost_params = weight()?,
                "boost_param_docs" => r.boost_param_docs = weight()?,
                "synonym_weight" => r.synonym_weight = weight()?,
                "abbreviations" => r.abbreviations = switch()?,
                "request_stop_words" => r.request_stop_words = switch()?,
                "lexical_depth" => {
                    r.lexical_depth = Some(value.parse().map_err(|_| {
                        format!("`{key}={value}`: the value must be a count (0 = every candidate)")
                    })?)
                }
                _ => {
                    return Err(format!(
                        "unknown key `{key}`; the keys are {}",
                        KEYS.join(", ")
                    ))
                }
            }
        }
        Ok(r)
    }
}

/// A query's terms, analyzed once per analyzer.
struct QueryTerms {
    /// Whole whitespace-separated words, lower-cased (for the `name` field).
    names: BTreeSet<String>,
    /// English-analyzed words of the query text.
    words: BTreeSet<String>,
    /// `words` plus the English-analyzed [`split_name`] parts of each word (for `name_parts`), so
    /// `createPullRequest` in a query also matches `create`, `pull` and `request`.
    with_parts: BTreeSet<String>,
    /// The [`SYNONYMS`] of `with_parts`, analyzed, minus `with_parts` itself (searched in every
    /// English-analyzed field at [`SYNONYM_WEIGHT`]).
    synonyms: BTreeSet<String>,
}

impl QueryTerms {
    fn of(query: &str) -> Self {
        let mut names = BTreeSet::new();
        for word in query.split_whitespace() {
            let word = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'));
            if !word.is_empty() {
                names.insert(word.to_lowercase());
            }
        }
        let mut english = english_analyzer();
        let words = analyze(&mut english, query);
        let mut with_parts = words.clone();
        let split: Vec<String> = query
            .split_whitespace()
            .flat_map(split_name)
            .collect::<Vec<_>>();
        with_parts.extend(analyze(&mut english, &split.join(" ")));
        let synonyms = analyzed_synonyms()
            .iter()
            .filter(|group| group.iter().any(|w| with_parts.contains(w)))
            .flatten()
            .filter(|w| !with_parts.contains(*w))
            .cloned()
            .collect();
        QueryTerms {
            names,
            words,
            with_parts,
            synonyms,
        }
    }
}

impl QueryTerms {
    /// The terms searched in `field`.
    fn for_field(&self, fields: &Fields, field: Field, english: bool) -> &BTreeSet<String> {
        if field == fields.name_parts {
            &self.with_parts
        } else if english {
            &self.words
        } else {
            &self.names
        }
    }
}

/// [`SYNONYMS`] through the English analyzer (stemmed, as query and index terms are), computed
/// once.
fn analyzed_synonyms() -> &'static [BTreeSet<String>] {
    static GROUPS: OnceLock<Vec<BTreeSet<String>>> = OnceLock::new();
    GROUPS.get_or_init(|| {
        let mut english = english_analyzer();
        SYNONYMS
            .iter()
            .map(|group| {
                group
                    .iter()
                    .flat_map(|w| analyze(&mut english, w))
                    .collect()
            })
            .collect()
    })
}

fn analyze(analyzer: &mut TextAnalyzer, text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stream = analyzer.token_stream(text);
    stream.process(&mut |token| {
        out.insert(token.text.clone());
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// A test row: `(name, description, keywords, input_schema)`.
    type Row<'a> = (&'a str, &'a str, &'a [&'a str], Option<&'a str>);

    /// Tables for `tools`, one bitset column each.
    fn tables(tools: &[Row<'_>]) -> Tables {
        let len = tools.len();
        let words = len.div_ceil(64);
        let strs = |f: &dyn Fn(&Row<'_>) -> String| -> crate::tables::Strs {
            tools
                .iter()
                .map(|t| Cow::Owned(f(t)))
                .collect::<Vec<_>>()
                .into()
        };
        let none_u32: Vec<Option<u32>> = vec![None; len];
        Tables {
            len,
            words,
            review_inline: crate::validate::DEFAULT_REVIEW_INLINE as usize,
            names: strs(&|t| t.0.rsplit("__").next().unwrap_or(t.0).to_string()),
            exported_names: strs(&|t| t.0.to_string()),
            descriptions: strs(&|t| t.1.to_string()),
            keywords: tools
                .iter()
                .map(|t| {
                    let k: crate::tables::Strs =
                        t.2.iter()
                            .map(|s| Cow::Owned(s.to_string()))
                            .collect::<Vec<_>>()
                            .into();
                    k
                })
                .collect::<Vec<_>>()
                .into(),
            owners: strs(&|_| "team".to_string()),
            visibility: vec![0; len].into(),
            tier: vec![0; len].into(),
            effect: vec![0; len].into(),
            exposure: vec![0; len].into(),
            status: vec![0; len].into(),
            idempotent: vec![0; words].into(),
            open_world: vec![0; words].into(),
            code_mode: vec![0; words].into(),
            source: vec![crate::tables::SOURCE_LOCAL; len].into(),
            requires: vec![Cow::Owned(Vec::new()); len].into(),
            pair: none_u32.clone().into(),
            replaced_by: none_u32.into(),
            removal: vec![None; len].into(),
            rate_limit: vec![None; len].into(),
            input_schema: tools
                .iter()
                .map(|t| t.3.map(|s| Cow::Owned(s.to_string())))
                .collect::<Vec<_>>()
                .into(),
            output_schema: vec![None; len].into(),
            remote_names: vec![None; len].into(),
            timeout_ms: vec![None; len].into(),
            profile_names: vec![Cow::Borrowed("full")].into(),
            profile_descriptions: vec![Cow::Borrowed("every tool")].into(),
            profile_max_inline: vec![None].into(),
            profile_max_tools: vec![None].into(),
            profile_manifest_tokens: vec![0].into(),
            profile_bits: vec![u64::MAX; words].into(),
            toolset_names: Vec::new().into(),
            toolset_descriptions: Vec::new().into(),
            toolset_bits: Vec::new().into(),
            preset_names: Vec::new().into(),
            preset_descriptions: Vec::new().into(),
            preset_profile: Vec::new().into(),
            preset_toolsets: Vec::new().into(),
            preset_max_tools: Vec::new().into(),
            server_names: Vec::new().into(),
            server_descriptions: Vec::new().into(),
            server_namespaces: Vec::new().into(),
            server_commands: Vec::new().into(),
            server_args: Vec::new().into(),
            server_urls: Vec::new().into(),
            tier_bits: vec![0; 3 * words].into(),
            effect_bits: vec![0; 3 * words].into(),
            scope_bits: vec![0; 3 * words].into(),
            visibility_bits: vec![0; 2 * words].into(),
            status_bits: vec![0; 3 * words].into(),
        }
    }

    fn sample() -> Tables {
        tables(&[
            (
                "read_file",
                "Read the contents of a file in the workspace.",
                &["open", "cat"],
                None,
            ),
            (
                "write_file",
                "Create or overwrite a file with new contents.",
                &["save"],
                None,
            ),
            (
                "github__createPullRequest",
                "Open a pull request from a branch.",
                &["pr", "merge request"],
                Some(
                    r#"{"type":"object","properties":{"head_branch":{"type":"string","description":"Branch holding the changes"},"base":{"type":"string"}}}"#,
                ),
            ),
            (
                "github__list_issues",
                "List issues of a repository.",
                &["bugs", "tickets"],
                None,
            ),
            (
                "run-shell-command",
                "Execute a command in a shell and return its output.",
                &["bash", "terminal"],
                None,
            ),
        ])
    }

    fn all(len: usize) -> Vec<u64> {
        let mut set = vec![0u64; len.div_ceil(64)];
        for i in 0..len {
            crate::tables::set_bit(&mut set, i);
        }
        set
    }

    #[test]
    fn split_name_handles_every_convention() {
        let cases: &[(&str, &[&str])] = &[
            ("createPullRequest", &["create", "pull", "request"]),
            ("create_pull_request", &["create", "pull", "request"]),
            ("create-pull-request", &["create", "pull", "request"]),
            (
                "github__create_pull_request",
                &["github", "create", "pull", "request"],
            ),
            ("HTTPServer", &["http", "server"]),
            ("getHTTPResponseCode", &["get", "http", "response", "code"]),
            ("s3Bucket", &["s3", "bucket"]),
            ("NS__listIssues", &["ns", "list", "issues"]),
            ("already lower", &["already", "lower"]),
            ("", &[]),
            ("__", &[]),
        ];
        for (input, expected) in cases {
            assert_eq!(split_name(input), *expected, "split_name({input:?})");
        }
    }

    #[test]
    fn round_trip_through_bytes_keeps_every_tool() {
        let t = sample();
        let bytes = build_index_bytes(&t, &[]).expect("index builds");
        let index = open_index(&bytes).expect("index opens");
        assert_eq!(index.len(), t.len);
        // Every tool is findable by its own exported name, and comes first.
        for i in 0..t.len {
            let hits = index
                .search(&t.exported_names[i], &all(t.len), 3)
                .expect("search runs");
            assert_eq!(
                hits.first().map(|h| h.0),
                Some(i as u32),
                "{}",
                t.exported_names[i]
            );
        }
    }

    #[test]
    fn build_is_deterministic() {
        let t = sample();
        let a = build_index_bytes(&t, &[]).expect("index builds");
        let b = build_index_bytes(&t, &[]).expect("index builds");
        assert!(a == b, "two builds of the same tables differ");
    }

    #[test]
    fn ranks_on_name_parts_keywords_description_and_params() {
        let t = sample();
        let params = vec![
            vec![],
            vec![],
            vec![],
            vec![],
            vec!["workingDirectory".to_string()],
        ];
        let index = open_index(&build_index_bytes(&t, &params).expect("builds")).expect("opens");
        let top = |q: &str| index.search(q, &all(t.len), 5).expect("search runs");
        // name parts of a camelCase name, stemmed ("requests" → "request")
        assert_eq!(top("pull requests")[0].0, 2);
        // keywords
        assert_eq!(top("tickets")[0].0, 3);
        assert_eq!(top("terminal")[0].0, 4);
        // description only
        assert_eq!(top("repository")[0].0, 3);
        // parameter name from the declared input_schema, split
        assert_eq!(top("head")[0].0, 2);
        // parameter description
        assert_eq!(top("changes")[0].0, 2);
        // parameter names passed in for a local tool
        assert_eq!(top("working directory")[0].0, 4);
        // a camelCase query matches the name parts too
        assert_eq!(top("listIssues")[0].0, 3);
        // the exact name as a word inside a sentence
        assert_eq!(top("please use read_file now")[0].0, 0);
    }

    fn tokens(text: &str) -> Vec<String> {
        let mut english = english_analyzer();
        let mut out = Vec::new();
        english
            .token_stream(text)
            .process(&mut |t| out.push(t.text.clone()));
        out
    }

    #[test]
    fn analyzer_spells_out_abbreviations_and_drops_request_fillers() {
        assert_eq!(
            tokens("Can you open my PR in the repo?"),
            ["open", "pull", "request", "repositori"]
        );
        // Abbreviations inside split names and in plural, as indexed and queried alike.
        assert_eq!(
            tokens("list prs dirs msg"),
            ["list", "pull", "request", "directori", "messag"]
        );
        // A word that only starts like an abbreviation is left alone.
        assert_eq!(tokens("print repository"), ["print", "repositori"]);
    }

    #[test]
    fn synonyms_find_another_verb_below_the_users_own_word() {
        let t = tables(&[
            ("remove_item", "Remove an item from the list.", &[], None),
            ("delete_item", "Delete an item from the list.", &[], None),
            ("rename_item", "Give an item a new name.", &[], None),
        ]);
        let index = open_index(&build_index_bytes(&t, &[]).expect("builds")).expect("opens");
        let names = |q: &str| -> Vec<&str> {
            index
                .search(q, &all(t.len), 5)
                .expect("search runs")
                .iter()
                .map(|h| t.names[h.0 as usize].as_ref())
                .collect()
        };
        // Both verbs find both tools; the user's own word ranks first either way.
        assert_eq!(names("delete item")[..2], ["delete_item", "remove_item"]);
        assert_eq!(names("remove item")[..2], ["remove_item", "delete_item"]);
        // "erase" is in neither tool: both are found through the synonym, equally.
        let erase = names("erase");
        assert_eq!(erase.len(), 2, "{erase:?}");
        assert!(!erase.contains(&"rename_item"));
    }

    #[test]
    fn query_terms_list_synonyms_after_the_querys_own_terms() {
        let t = sample();
        let index = open_index(&build_index_bytes(&t, &[]).expect("builds")).expect("opens");
        let terms = index.query_terms("open PR");
        let parts = &terms
            .iter()
            .find(|(field, _)| field == "name_parts")
            .expect("name_parts is searched")
            .1;
        assert_eq!(
            parts,
            &["open", "pull", "request", "creat", "make", "new"],
            "{terms:?}"
        );
        // The whole-name field takes the words as typed, without synonyms.
        let name = &terms
            .iter()
            .find(|(field, _)| field == "name")
            .expect("name")
            .1;
        assert_eq!(name, &["open", "pr"]);
    }

    #[test]
    fn filter_keeps_disallowed_tools_out_and_fills_top_k() {
        let t = sample();
        let index = open_index(&build_index_bytes(&t, &[]).expect("builds")).expect("opens");
        // "file" matches tools 0 and 1; allow only tool 1.
        let mut allowed = vec![0u64; 1];
        crate::tables::set_bit(&mut allowed, 1);
        let hits = index.search("file", &allowed, 1).expect("search runs");
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1]);
        let none = index.search("file", &[], 5).expect("search runs");
        assert!(none.is_empty());
    }

    #[test]
    fn hostile_queries_do_not_fail() {
        let t = sample();
        let index = open_index(&build_index_bytes(&t, &[]).expect("builds")).expect("opens");
        for q in [
            "",
            "   ",
            "the a of",
            "\"unclosed",
            "a:b AND (",
            "*",
            "file)))",
            "ümlaut ß",
        ] {
            index.search(q, &all(t.len), 5).expect("search runs");
        }
        assert!(index
            .search("the of", &all(t.len), 5)
            .expect("runs")
            .is_empty());
        assert!(index
            .search("file", &all(t.len), 0)
            .expect("runs")
            .is_empty());
    }

    #[test]
    fn malformed_bytes_are_errors() {
        let t = sample();
        let bytes = build_index_bytes(&t, &[]).expect("builds");
        assert!(open_index(&[]).is_err());
        assert!(open_index(b"not an index at all").is_err());
        assert!(open_index(&bytes[..bytes.len() - 1]).is_err());
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(open_index(&extra).is_err());
        let mut version = bytes;
        version[8] = 99;
        assert!(open_index(&version).is_err());
    }

    #[test]
    fn tuning_overrides_parse_and_name_their_faults() {
        assert_eq!(STOP_WORDS[LUCENE_STOP_WORDS - 1], "with");
        assert_eq!(STOP_WORDS[LUCENE_STOP_WORDS], "i");
        assert_eq!(__tuning::parse(""), Ok(__tuning::DEFAULT));
        let r = __tuning::parse("boost_text=1.5, synonym_weight=0,abbreviations=0,lexical_depth=0")
            .expect("parses");
        assert_eq!(
            (
                r.boost_text,
                r.synonym_weight,
                r.abbreviations,
                r.lexical_depth
            ),
            (1.5, 0.0, false, Some(0))
        );
        assert_eq!(r.boost_name, BOOST_NAME);
        for (text, says) in [
            ("boost_txt=1", "unknown key `boost_txt`"),
            ("boost_text", "not KEY=VALUE"),
            ("boost_text=-1", "a number ≥ 0"),
            ("abbreviations=yes", "0 or 1"),
            ("lexical_depth=x", "a count"),
        ] {
            let err = __tuning::parse(text).expect_err(text);
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn empty_catalog_builds_and_searches() {
        let t = tables(&[]);
        let index = open_index(&build_index_bytes(&t, &[]).expect("builds")).expect("opens");
        assert!(index.is_empty());
        assert!(index.search("anything", &[], 5).expect("runs").is_empty());
    }
}
