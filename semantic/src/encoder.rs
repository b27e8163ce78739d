//! The sentence encoder: a BERT forward pass over a sentence-transformers model directory.

use std::collections::HashMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use safetensors::Dtype;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use super::kernels::{
    dot, gelu_erf, layer_norm, part_pairs, quantize_block_part, row_blocks, softmax_row, Input,
    Kernel, Linear, MatMul, View,
};
use super::team::{with_team, Team};
use super::SemanticError;

/// The longest input the encoder reads, in tokens including the prompt and the special tokens
/// the tokenizer adds (`[CLS]` and `[SEP]` for BERT; longer texts are truncated), unless the
/// model's positions are fewer (`max_position_embeddings`, less `pad_token_id + 1` for RoBERTa): the limit of the
/// reference measurement (`peer_dense.py --max-len`).
pub const MAX_TOKENS: usize = 128;

/// The threads an [`Encoder`] uses per forward pass unless [`Encoder::with_threads`] says
/// otherwise: the machine's available parallelism, at most [`MAX_DEFAULT_THREADS`] (1 when it
/// cannot be read).
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_DEFAULT_THREADS)
}

/// The cap of [`default_threads`]. A query of ~30 tokens splits into ~70 steps of 5–200 µs per
/// pass, so each added thread buys less and spins more. Measured on 2-core machines only: two
/// threads cut the p50 latency of a query 1.4–1.6× on an idle Intel Xeon (Sapphire Rapids) and
/// 1.7–1.85× on an AMD EPYC (Zen 3) when a core was free, and brought nothing while other
/// processes kept both cores busy (see the module docs); more are left to
/// [`Encoder::with_threads`].
pub const MAX_DEFAULT_THREADS: usize = 2;

/// The files of a model directory the encoder reads, relative to it; each must be there.
pub const MODEL_FILES: [&str; 5] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "modules.json",
    "1_Pooling/config.json",
];

/// The file of a model directory the encoder reads when it is there: the model's prompts
/// (`prompts`, `default_prompt_name`; see [`Encoder::query_prompt`]).
pub const PROMPTS_FILE: &str = "config_sentence_transformers.json";

/// `config.json`: the hyper-parameters the forward pass needs.
#[derive(Debug, Deserialize)]
struct BertConfig {
    model_type: String,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    #[serde(default = "default_act")]
    hidden_act: String,
    #[serde(default = "default_position")]
    position_embedding_type: String,
    /// RoBERTa's `padding_idx`: its positions start at `pad_token_id + 1`.
    #[serde(default)]
    pad_token_id: Option<u32>,
}

fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".to_string()
}
fn default_position() -> String {
    "absolute".to_string()
}

/// A pooling mode of `1_Pooling/config.json`: how the token vectors of the last layer become
/// one vector of the model's `hidden_size` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The first token's vector (`[CLS]`, `<s>`): `pooling_mode_cls_token`.
    Cls,
    /// The largest value of each dimension over the tokens: `pooling_mode_max_tokens`.
    Max,
    /// The mean over the tokens: `pooling_mode_mean_tokens`.
    Mean,
    /// The sum over the tokens divided by the square root of their count:
    /// `pooling_mode_mean_sqrt_len_tokens`.
    MeanSqrtLen,
}

impl Pooling {
    /// Every mode with its flag in `1_Pooling/config.json`, in the order sentence-transformers
    /// concatenates the modes that are on.
    pub const ALL: [(Pooling, &'static str); 4] = [
        (Pooling::Cls, "pooling_mode_cls_token"),
        (Pooling::Max, "pooling_mode_max_tokens"),
        (Pooling::Mean, "pooling_mode_mean_tokens"),
        (Pooling::MeanSqrtLen, "pooling_mode_mean_sqrt_len_tokens"),
    ];

    /// The mode's flag in `1_Pooling/config.json` (`pooling_mode_cls_token`, …).
    pub fn flag(self) -> &'static str {
        Pooling::ALL
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("", |(_, f)| f)
    }
}

/// The pooling modes `1_Pooling/config.json` turns on, in sentence-transformers' order: every
/// `pooling_mode_*` flag must be a boolean and a true one must be in [`Pooling::ALL`];
/// `include_prompt: false` and a `word_embedding_dimension` other than `hidden` are refused.
fn parse_pooling(dir: &Path, bytes: &[u8], hidden: usize) -> Result<Vec<Pooling>, SemanticError> {
    const NAME: &str = "1_Pooling/config.json";
    let supported = || {
        Pooling::ALL
            .iter()
            .map(|(_, f)| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let map: serde_json::Map<String, serde_json::Value> = parse_json(dir, NAME, bytes)?;
    for (key, value) in &map {
        if !key.starts_with("pooling_mode_") {
            continue;
        }
        match value.as_bool() {
            None => {
                return Err(unsupported(
                    dir,
                    NAME,
                    format!("`{key}` {value} (a pooling flag is true or false)"),
                ))
            }
            Some(true) if !Pooling::ALL.iter().any(|(_, f)| f == key) => {
                return Err(unsupported(
                    dir,
                    NAME,
                    format!(
                        "`{key}` true (the pooling modes this encoder runs are {}, alone or \
                         together; set `{key}` to false or use another model)",
                        supported()
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    if map.get("include_prompt") == Some(&serde_json::Value::Bool(false)) {
        return Err(unsupported(
            dir,
            NAME,
            "`include_prompt` false (pooling that leaves out the prompt's tokens; remove the key \
             or set it to true)"
                .to_string(),
        ));
    }
    if let Some(dim) = map.get("word_embedding_dimension") {
        if dim.as_u64() != Some(hidden as u64) {
            return Err(unsupported(
                dir,
                NAME,
                format!(
                    "`word_embedding_dimension` {dim} while config.json's `hidden_size` is \
                     {hidden} (the pooling config is not this model's)"
                ),
            ));
        }
    }
    let modes: Vec<Pooling> = Pooling::ALL
        .iter()
        .filter(|(_, f)| map.get(*f) == Some(&serde_json::Value::Bool(true)))
        .map(|(p, _)| *p)
        .collect();
    if modes.is_empty() {
        return Err(unsupported(
            dir,
            NAME,
            format!("no pooling mode (set one of {} to true)", supported()),
        ));
    }
    Ok(modes)
}

/// One entry of `modules.json`.
#[derive(Debug, Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

/// Whether `modules.json` ends with a `Normalize` module. The modules must be a `Transformer`,
/// a `Pooling` module at `1_Pooling`, then optionally `Normalize`; any other (a `Dense`
/// projection, …) is refused.
fn parse_modules(dir: &Path, bytes: &[u8]) -> Result<bool, SemanticError> {
    const NAME: &str = "modules.json";
    let modules: Vec<Module> = parse_json(dir, NAME, bytes)?;
    let kinds: Vec<&str> = modules
        .iter()
        .map(|m| m.kind.rsplit('.').next().unwrap_or(&m.kind))
        .collect();
    let fits = match kinds[..] {
        ["Transformer", "Pooling"] | ["Transformer", "Pooling", "Normalize"] => {
            modules[1].path.trim_end_matches('/') == "1_Pooling"
        }
        _ => false,
    };
    if !fits {
        let got: Vec<String> = modules
            .iter()
            .map(|m| format!("`{}` at `{}`", m.kind, m.path))
            .collect();
        return Err(unsupported(
            dir,
            NAME,
            format!(
                "the modules [{}] (this encoder runs a `Transformer`, then a `Pooling` module at \
                 `1_Pooling`, then optionally `Normalize`)",
                got.join(", ")
            ),
        ));
    }
    Ok(kinds.len() == 3)
}

/// `config_sentence_transformers.json`: the model's prompts.
#[derive(Debug, Default, Deserialize)]
struct PromptsConfig {
    #[serde(default)]
    prompts: Option<HashMap<String, String>>,
    #[serde(default)]
    default_prompt_name: Option<String>,
}

/// The texts put before a text to embed, as sentence-transformers' `encode`,
/// `encode_query` and `encode_document` put them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Prompts {
    default: String,
    query: String,
    document: String,
}

/// The prompts of [`PROMPTS_FILE`] (`None`: the file is absent, no prompts): the default is
/// `prompts[default_prompt_name]`; a query's is `prompts["query"]`, a document's the first of
/// `prompts["document"]`, `["passage"]`, `["corpus"]`, each else the default.
fn parse_prompts(dir: &Path, bytes: Option<&[u8]>) -> Result<Prompts, SemanticError> {
    let Some(bytes) = bytes else {
        return Ok(Prompts::default());
    };
    let cfg: PromptsConfig = parse_json(dir, PROMPTS_FILE, bytes)?;
    let prompts = cfg.prompts.unwrap_or_default();
    let default = match &cfg.default_prompt_name {
        None => String::new(),
        Some(name) => prompts.get(name).cloned().ok_or_else(|| {
            unsupported(
                dir,
                PROMPTS_FILE,
                format!(
                    "`default_prompt_name` `{name}`, which `prompts` does not hold (name one of \
                     its keys or set it to null)"
                ),
            )
        })?,
    };
    let pick = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| prompts.get(*k).cloned())
            .unwrap_or_else(|| default.clone())
    };
    Ok(Prompts {
        query: pick(&["query"]),
        document: pick(&["document", "passage", "corpus"]),
        default,
    })
}

/// `tokenizer.json`'s unknown token: `model.unk_token` (WordPiece, BPE) or `model.unk_id`
/// (Unigram).
#[derive(Debug, Default, Deserialize)]
struct TokenizerFile {
    #[serde(default)]
    model: UnknownToken,
}

#[derive(Debug, Default, Deserialize)]
struct UnknownToken {
    #[serde(default)]
    unk_token: Option<String>,
    #[serde(default)]
    unk_id: Option<u32>,
}

/// One transformer layer, matrices stored `in × out`, row-major (`x · W`).
struct Layer {
    qkv_w: Linear, // hidden × 3·hidden: query | key | value
    qkv_b: Vec<f32>,
    out_w: Linear, // hidden × hidden
    out_b: Vec<f32>,
    ln1_w: Vec<f32>,
    ln1_b: Vec<f32>,
    inter_w: Linear, // hidden × intermediate
    inter_b: Vec<f32>,
    ffn_w: Linear, // intermediate × hidden
    ffn_b: Vec<f32>,
    ln2_w: Vec<f32>,
    ln2_b: Vec<f32>,
}

/// A sentence-transformers model of the BERT family loaded for encoding: texts in, pooled
/// embeddings out (see the crate docs for the model shapes it runs and the ones it refuses).
///
/// The forward pass is the reference encoder's (`bench/peer_dense.py`): word + position + token
/// type embeddings → LayerNorm → per layer [multi-head self-attention → dense → add &
/// LayerNorm → dense → GELU (erf form) → dense → add & LayerNorm] → the pooling modes of
/// `1_Pooling/config.json` ([`Pooling`], concatenated in sentence-transformers' order) → L2
/// normalisation when `modules.json` ends with `Normalize`. Each text is encoded alone (batch of
/// one, no padding), so no attention mask is needed and the result equals the padded batch's.
///
/// Each text's forward pass runs on [`default_threads`] threads unless [`Encoder::with_threads`]
/// says otherwise.
/// `Encoder` is `Send + Sync`: load it once and share it (`Arc<Encoder>`); every
/// [`Encoder::encode`] call uses its own scratch buffers.
pub struct Encoder {
    tokenizer: Tokenizer,
    hidden: usize,
    heads: usize,
    intermediate: usize,
    eps: f32,
    max_tokens: usize,
    word: Vec<f32>,       // vocab × hidden
    position: Vec<f32>,   // max_position × hidden
    token_type: Vec<f32>, // type_vocab × hidden
    /// The position of the first token, and the padding token with its own position (RoBERTa:
    /// `pad_token_id + 1`, and `pad_token_id` for the padding token; BERT: 0, none).
    first_position: usize,
    padding: Option<u32>,
    emb_ln_w: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    pooling: Vec<Pooling>,
    normalize: bool,
    prompts: Prompts,
    model_id: String,
    threads: usize,
    /// Ids of the tokenizer's special tokens and of its unknown token: no word of a query
    /// ([`Encoder::encode_query`]).
    not_words: Vec<u32>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("model_id", &self.model_id)
            .field("dim", &self.hidden)
            .field("layers", &self.layers.len())
            .field("kernel", &self.layers.first().map(|l| l.qkv_w.kernel()))
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, SemanticError> {
    let path = dir.join(name);
    fs::read(&path).map_err(|source| SemanticError::ModelFile {
        path,
        reason: source.to_string(),
    })
}

fn parse_json<T: for<'de> Deserialize<'de>>(
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<T, SemanticError> {
    serde_json::from_slice(bytes).map_err(|e| SemanticError::ModelFile {
        path: dir.join(name),
        reason: format!("not the expected JSON: {e}"),
    })
}

fn unsupported(dir: &Path, name: &str, what: String) -> SemanticError {
    SemanticError::Unsupported {
        path: dir.join(name),
        what,
    }
}

impl Encoder {
    /// Loads the sentence-transformers model in `dir`: `config.json` (`model_type` `bert`,
    /// `roberta` or `xlm-roberta`, absolute positions, erf GELU), `model.safetensors` (f32, f16
    /// or bf16 weights, widened to f32; with or without the `bert.` / `roberta.` prefix),
    /// `tokenizer.json` (any tokenizer the `tokenizers` crate loads; its post-processor adds the
    /// special tokens), `modules.json` (whether to normalise), `1_Pooling/config.json` (the
    /// [`Pooling`] modes) and, when present, [`PROMPTS_FILE`] (the prompts). Inputs are truncated
    /// to [`MAX_TOKENS`] tokens.
    ///
    /// # Errors
    /// [`SemanticError::ModelFile`] naming a file that is missing, unreadable or not in its
    /// format; [`SemanticError::Unsupported`] naming the file and field whose setting this
    /// encoder cannot run (another architecture, activation, position type, pooling mode,
    /// module, prompt name or weight type);
    /// [`SemanticError::Weights`] for a missing or mis-shaped tensor.
    pub fn load(dir: &Path) -> Result<Encoder, SemanticError> {
        Encoder::load_with(dir, Kernel::fastest())
    }

    /// [`Encoder::load`] with every matrix product of f32 weights through the `gemm` crate: the
    /// reference the fast kernels are checked against (their embeddings stay within cosine
    /// 0.9999 of it), two to three times slower per query.
    ///
    /// # Errors
    /// As [`Encoder::load`].
    pub fn load_reference(dir: &Path) -> Result<Encoder, SemanticError> {
        Encoder::load_with(dir, Kernel::Gemm)
    }

    fn load_with(dir: &Path, kernel: Kernel) -> Result<Encoder, SemanticError> {
        let bytes: Vec<Vec<u8>> = MODEL_FILES
            .iter()
            .map(|name| read(dir, name))
            .collect::<Result<_, _>>()?;
        let [config, weights, tokenizer_bytes, modules, pooling] =
            [&bytes[0], &bytes[1], &bytes[2], &bytes[3], &bytes[4]];
        let prompts_file = match fs::read(dir.join(PROMPTS_FILE)) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(SemanticError::ModelFile {
                    path: dir.join(PROMPTS_FILE),
                    reason: e.to_string(),
                })
            }
        };

        // Every file read, the optional one as present or not: a change of prompts changes the
        // id, so cached tool vectors embedded under the old ones are not reused.
        let mut hasher = Sha256::new();
        let optional = [(PROMPTS_FILE, prompts_file.as_ref())];
        let read_files = MODEL_FILES.iter().zip(&bytes).map(|(n, b)| (*n, Some(b)));
        for (name, b) in read_files.chain(optional) {
            hasher.update(name.as_bytes());
            match b {
                Some(b) => {
                    hasher.update((b.len() as u64).to_le_bytes());
                    hasher.update(b);
                }
                None => hasher.update(u64::MAX.to_le_bytes()),
            }
        }
        let model_id = format!("{:x}", hasher.finalize());

        let cfg: BertConfig = parse_json(dir, "config.json", config)?;
        // RoBERTa (and XLM-R) number positions from `padding_idx + 1`; the padding token itself
        // sits at `padding_idx` (transformers' `create_position_ids_from_input_ids`).
        let (first_position, padding) = match cfg.model_type.as_str() {
            "bert" => (0, None),
            "roberta" | "xlm-roberta" => {
                let pad = cfg.pad_token_id.unwrap_or(1);
                (pad as usize + 1, Some(pad))
            }
            other => {
                return Err(unsupported(
                    dir,
                    "config.json",
                    format!("`model_type` `{other}` (supported: `bert`, `roberta`, `xlm-roberta`)"),
                ))
            }
        };
        if cfg.hidden_act != "gelu" {
            return Err(unsupported(
                dir,
                "config.json",
                format!(
                    "`hidden_act` `{}` (only `gelu` is supported)",
                    cfg.hidden_act
                ),
            ));
        }
        if cfg.position_embedding_type != "absolute" {
            return Err(unsupported(
                dir,
                "config.json",
                format!(
                    "`position_embedding_type` `{}` (only `absolute` is supported)",
                    cfg.position_embedding_type
                ),
            ));
        }
        if cfg.num_attention_heads == 0
            || cfg.hidden_size == 0
            || !cfg.hidden_size.is_multiple_of(cfg.num_attention_heads)
        {
            return Err(unsupported(
                dir,
                "config.json",
                format!(
                    "`hidden_size` {} with `num_attention_heads` {} (the hidden size must be a \
                     positive multiple of the head count)",
                    cfg.hidden_size, cfg.num_attention_heads
                ),
            ));
        }

        for (key, value) in [
            ("num_hidden_layers", cfg.num_hidden_layers),
            ("intermediate_size", cfg.intermediate_size),
            ("max_position_embeddings", cfg.max_position_embeddings),
        ] {
            if value == 0 {
                return Err(unsupported(
                    dir,
                    "config.json",
                    format!("`{key}` 0 (a BERT model has at least 1)"),
                ));
            }
        }
        if !(cfg.layer_norm_eps.is_finite() && cfg.layer_norm_eps > 0.0) {
            return Err(unsupported(
                dir,
                "config.json",
                format!(
                    "`layer_norm_eps` {:e} (it must be a positive number, 1e-12 for BERT models)",
                    cfg.layer_norm_eps
                ),
            ));
        }

        if cfg.max_position_embeddings <= first_position {
            return Err(unsupported(
                dir,
                "config.json",
                format!(
                    "`max_position_embeddings` {} with `pad_token_id` {} (a {} model's positions \
                     start at `pad_token_id + 1`, so none would be left)",
                    cfg.max_position_embeddings,
                    first_position - 1,
                    cfg.model_type
                ),
            ));
        }
        let pooling = parse_pooling(dir, pooling, cfg.hidden_size)?;
        let normalize = parse_modules(dir, modules)?;
        let prompts = parse_prompts(dir, prompts_file.as_deref())?;

        let mut tokenizer =
            Tokenizer::from_bytes(tokenizer_bytes).map_err(|e| SemanticError::ModelFile {
                path: dir.join("tokenizer.json"),
                reason: format!("not a tokenizer: {e}"),
            })?;
        let max_tokens = MAX_TOKENS.min(cfg.max_position_embeddings - first_position);
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| SemanticError::ModelFile {
                path: dir.join("tokenizer.json"),
                reason: format!("truncation to {max_tokens} tokens refused: {e}"),
            })?;

        let mut w = Weights::open(dir, weights)?;
        let h = cfg.hidden_size;
        let i = cfg.intermediate_size;
        let word = w.take("embeddings.word_embeddings.weight", &[0, h])?;
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > word.len() / h {
            return Err(SemanticError::Weights {
                path: w.path.clone(),
                what: format!(
                    "`embeddings.word_embeddings.weight` has {} rows but tokenizer.json has {vocab} \
                     tokens: the tokenizer is not this model's",
                    word.len() / h
                ),
            });
        }
        let position = w.take(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let token_type = w.take("embeddings.token_type_embeddings.weight", &[0, h])?;
        let emb_ln_w = w.take("embeddings.LayerNorm.weight", &[h])?;
        let emb_ln_b = w.take("embeddings.LayerNorm.bias", &[h])?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}.");
            let q = w.take_t(&format!("{p}attention.self.query.weight"), h, h)?;
            let k = w.take_t(&format!("{p}attention.self.key.weight"), h, h)?;
            let v = w.take_t(&format!("{p}attention.self.value.weight"), h, h)?;
            let mut qkv_w = Vec::with_capacity(h * 3 * h);
            for r in 0..h {
                qkv_w.extend_from_slice(&q[r * h..(r + 1) * h]);
                qkv_w.extend_from_slice(&k[r * h..(r + 1) * h]);
                qkv_w.extend_from_slice(&v[r * h..(r + 1) * h]);
            }
            let mut qkv_b = w.take(&format!("{p}attention.self.query.bias"), &[h])?;
            qkv_b.extend(w.take(&format!("{p}attention.self.key.bias"), &[h])?);
            qkv_b.extend(w.take(&format!("{p}attention.self.value.bias"), &[h])?);
            layers.push(Layer {
                qkv_w: Linear::new(qkv_w, h, 3 * h, kernel),
                qkv_b,
                out_w: Linear::new(
                    w.take_t(&format!("{p}attention.output.dense.weight"), h, h)?,
                    h,
                    h,
                    kernel,
                ),
                out_b: w.take(&format!("{p}attention.output.dense.bias"), &[h])?,
                ln1_w: w.take(&format!("{p}attention.output.LayerNorm.weight"), &[h])?,
                ln1_b: w.take(&format!("{p}attention.output.LayerNorm.bias"), &[h])?,
                inter_w: Linear::new(
                    w.take_t(&format!("{p}intermediate.dense.weight"), i, h)?,
                    h,
                    i,
                    kernel,
                ),
                inter_b: w.take(&format!("{p}intermediate.dense.bias"), &[i])?,
                ffn_w: Linear::new(
                    w.take_t(&format!("{p}output.dense.weight"), h, i)?,
                    i,
                    h,
                    kernel,
                ),
                ffn_b: w.take(&format!("{p}output.dense.bias"), &[h])?,
                ln2_w: w.take(&format!("{p}output.LayerNorm.weight"), &[h])?,
                ln2_b: w.take(&format!("{p}output.LayerNorm.bias"), &[h])?,
            });
        }

        // A tensor of a layer past `num_hidden_layers` means config.json does not describe the
        // weights; reading fewer layers would embed with part of the model, silently.
        if let Some(extra) = w.tensors.keys().find(|k| k.starts_with("encoder.layer.")) {
            return Err(unsupported(
                dir,
                "config.json",
                format!(
                    "`num_hidden_layers` {} while model.safetensors also holds `{extra}`: the \
                     config is not this model's",
                    cfg.num_hidden_layers
                ),
            ));
        }

        let mut not_words: Vec<u32> = tokenizer
            .get_added_tokens_decoder()
            .iter()
            .filter(|(_, t)| t.special)
            .map(|(&id, _)| id)
            .collect();
        let unknown = parse_json::<TokenizerFile>(dir, "tokenizer.json", tokenizer_bytes)?.model;
        not_words.extend(unknown.unk_id);
        not_words.extend(unknown.unk_token.and_then(|t| tokenizer.token_to_id(&t)));
        Ok(Encoder {
            not_words,
            tokenizer,
            first_position,
            padding,
            pooling,
            normalize,
            prompts,
            hidden: h,
            heads: cfg.num_attention_heads,
            intermediate: i,
            eps: cfg.layer_norm_eps as f32,
            max_tokens,
            word,
            position,
            token_type,
            emb_ln_w,
            emb_ln_b,
            layers,
            model_id,
            threads: default_threads(),
        })
    }

    /// The same encoder with each text's forward pass split over `threads` threads: the calling
    /// thread and `threads - 1` helpers started per [`Encoder::encode`] call (1 runs it on the
    /// calling thread alone; 0 counts as 1). The default is [`default_threads`]. A call made from
    /// a rayon pool thread (as [`super::ToolVectors`] spreads a catalog's texts over the pool),
    /// or while another call's helpers run, uses the calling thread alone.
    pub fn with_threads(mut self, threads: usize) -> Encoder {
        self.threads = threads.max(1);
        self
    }

    /// Threads one forward pass uses (see [`Encoder::with_threads`]).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The embedding size: the model's `hidden_size` times the number of [`Encoder::pooling`]
    /// modes (384 for all-MiniLM-L6-v2).
    pub fn dim(&self) -> usize {
        self.hidden * self.pooling.len()
    }

    /// The pooling modes of `1_Pooling/config.json`, in the order their vectors are
    /// concatenated.
    pub fn pooling(&self) -> &[Pooling] {
        &self.pooling
    }

    /// Whether the model's own output is L2-normalised (`modules.json` ends with a
    /// `Normalize` module). [`Encoder::encode_query`] and [`Encoder::encode_documents`]
    /// normalise either way.
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// The text put before a query by [`Encoder::encode_query`]: [`PROMPTS_FILE`]'s
    /// `prompts["query"]`, else the default prompt (`prompts[default_prompt_name]`), else
    /// nothing — as sentence-transformers' `encode_query`.
    pub fn query_prompt(&self) -> &str {
        &self.prompts.query
    }

    /// The text put before a document (a tool's text) by [`Encoder::encode_documents`]: the
    /// first of [`PROMPTS_FILE`]'s `prompts["document"]`, `["passage"]` and `["corpus"]`, else
    /// the default prompt, else nothing — as sentence-transformers' `encode_document`.
    pub fn document_prompt(&self) -> &str {
        &self.prompts.document
    }

    /// The most tokens of a text the encoder reads, prompt and special tokens included (see
    /// [`MAX_TOKENS`]).
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// A stable identity of the model: the SHA-256 (lower-case hex, 64 characters) of the
    /// encoder's files ([`MODEL_FILES`] and [`PROMPTS_FILE`] or its absence: names, lengths and
    /// contents), so any change to the weights, tokenizer, config, pooling, normalisation or
    /// prompts gives another id. Cache keys use it.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The token ids the encoder reads for `text` as given, no prompt put before it: the
    /// tokenizer's own special tokens added by its post-processor (`[CLS]` … `[SEP]` for
    /// BERT's WordPiece, `<s>` … `</s>` for XLM-R's SentencePiece), truncated to
    /// [`Encoder::max_tokens`].
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when the tokenizer fails.
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, SemanticError> {
        Ok(self.encoding(text)?.get_ids().to_vec())
    }

    /// The tokenizer's encoding of `text` (special tokens added, truncated as configured).
    fn encoding(&self, text: &str) -> Result<tokenizers::Encoding, SemanticError> {
        self.tokenizer
            .encode(text, true)
            .map_err(|e| SemanticError::Tokenize(e.to_string()))
    }

    /// Embeds each text as sentence-transformers' `encode` does: the default prompt put before
    /// it, one vector of [`Encoder::dim`] floats per text, in order, L2-normalised when the
    /// model is ([`Encoder::normalizes`]). Search wants [`Encoder::encode_query`] and
    /// [`Encoder::encode_documents`].
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when the tokenizer fails on a text.
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SemanticError> {
        self.encode_with(&self.prompts.default, texts, false)
    }

    /// Embeds one text (see [`Encoder::encode`]).
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when the tokenizer fails.
    pub fn encode_one(&self, text: &str) -> Result<Vec<f32>, SemanticError> {
        let enc = self.encoding(&format!("{}{text}", self.prompts.default))?;
        Ok(self.embed(&enc, false))
    }

    /// Embeds documents (tool texts) for search: [`Encoder::document_prompt`] put before each,
    /// one L2-normalised vector of [`Encoder::dim`] floats per text, in order, whatever
    /// [`Encoder::normalizes`] says (the dot product of two results is their cosine).
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when the tokenizer fails on a text.
    pub fn encode_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SemanticError> {
        self.encode_with(&self.prompts.document, texts, true)
    }

    /// Embeds one document (see [`Encoder::encode_documents`]).
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when the tokenizer fails.
    pub fn encode_document(&self, text: &str) -> Result<Vec<f32>, SemanticError> {
        let enc = self.encoding(&format!("{}{text}", self.prompts.document))?;
        Ok(self.embed(&enc, true))
    }

    /// `texts` with `prompt` before each, on one team of threads; L2-normalised when `unit`.
    fn encode_with(
        &self,
        prompt: &str,
        texts: &[&str],
        unit: bool,
    ) -> Result<Vec<Vec<f32>>, SemanticError> {
        let mut scratch = Scratch::default();
        with_team(self.threads, |team| {
            texts
                .iter()
                .map(|t| {
                    let enc = self.encoding(&format!("{prompt}{t}"))?;
                    Ok(self.finish(self.forward(&enc, &mut scratch, team), unit))
                })
                .collect()
        })
    }

    /// The embedding of one encoding, its forward pass split over the encoder's threads;
    /// L2-normalised when `unit`.
    fn embed(&self, enc: &tokenizers::Encoding, unit: bool) -> Vec<f32> {
        let mut scratch = Scratch::default();
        let v = with_team(self.threads, |team| self.forward(enc, &mut scratch, team));
        self.finish(v, unit)
    }

    /// The model's output `v`, L2-normalised when the model is or when `unit`.
    fn finish(&self, mut v: Vec<f32>, unit: bool) -> Vec<f32> {
        if self.normalize || unit {
            let norm = dot(&v, &v).sqrt().max(1e-12);
            v.iter_mut().for_each(|p| *p /= norm);
        }
        v
    }

    /// Embeds a search query: [`Encoder::query_prompt`] put before it, one L2-normalised
    /// vector of [`Encoder::dim`] floats whatever [`Encoder::normalizes`] says. A query whose
    /// own tokens (the prompt's aside) are all special tokens, the unknown token or
    /// SentencePiece's word-start mark `▁` alone (control characters, zero-width spaces, `[SEP]`
    /// typed as text) is refused, since its embedding
    /// says nothing about it yet would still rank tools.
    ///
    /// # Errors
    /// [`SemanticError::NoWords`] for such a query; [`SemanticError::Tokenize`] when the
    /// tokenizer fails.
    pub fn encode_query(&self, text: &str) -> Result<Vec<f32>, SemanticError> {
        let prompt = &self.prompts.query;
        let enc = self.encoding(&format!("{prompt}{text}"))?;
        // A word: a token of the query (it ends past the prompt; offsets are in bytes of the
        // input), not special, not unknown, and not SentencePiece's word-start mark alone
        // (which comes before an unknown piece).
        let words = enc
            .get_ids()
            .iter()
            .zip(enc.get_tokens())
            .zip(enc.get_special_tokens_mask())
            .zip(enc.get_offsets())
            .any(|(((id, token), &special), &(_, end))| {
                special == 0
                    && end > prompt.len()
                    && !self.not_words.contains(id)
                    && !token.trim_start_matches('\u{2581}').trim().is_empty()
            });
        if !words {
            return Err(SemanticError::NoWords);
        }
        Ok(self.embed(&enc, true))
    }

    /// The forward pass of one encoding (its token ids and token type ids): the pooled
    /// embedding, not normalised. Each step is split over `team` (column chunks of the products,
    /// attention heads, rows of the LayerNorms); the element-wise steps run inside them, on the
    /// part each index owns.
    fn forward(&self, enc: &tokenizers::Encoding, s: &mut Scratch, team: &Team<'_>) -> Vec<f32> {
        let (ids, types) = (enc.get_ids(), enc.get_type_ids());
        let h = self.hidden;
        let n = ids.len().clamp(1, self.max_tokens);
        let heads = self.heads;
        let dh = h / heads;
        let inter = self.intermediate;
        let vocab = self.word.len() / h;
        let type_vocab = self.token_type.len() / h;
        let x = s.x.reset(n * h);
        let mut next_position = self.first_position;
        for (i, &id) in ids.iter().take(n).enumerate() {
            let pos = if Some(id) == self.padding {
                id as usize
            } else {
                next_position += 1;
                next_position - 1
            };
            // An id outside the vocabulary or the token type table cannot come from the model's
            // own tokenizer; row 0 stands in rather than reading out of bounds.
            let id = if (id as usize) < vocab {
                id as usize
            } else {
                0
            };
            let ty = types.get(i).map_or(0, |&t| t as usize);
            let ty = if ty < type_vocab { ty } else { 0 };
            let w = &self.word[id * h..(id + 1) * h];
            let p = &self.position[pos * h..(pos + 1) * h];
            let t = &self.token_type[ty * h..(ty + 1) * h];
            let row = &mut x[i * h..(i + 1) * h];
            for (((o, a), b), c) in row.iter_mut().zip(w).zip(p).zip(t) {
                *o = a + b + c;
            }
        }
        // without ids, the one row stays zero
        for row in s.x.chunks_exact_mut(h) {
            layer_norm(row, &self.emb_ln_w, &self.emb_ln_b, self.eps);
        }

        let scale = 1.0 / (dh as f32).sqrt();
        for (buf, len) in [
            (&mut s.qkv, n * 3 * h),
            (&mut s.ctx, n * h),
            (&mut s.att, n * h),
            (&mut s.inter, n * inter),
            (&mut s.scores, heads * n * n),
        ] {
            buf.reset(len);
        }
        let row_chunks = n.div_ceil(LN_ROWS);
        for ly in &self.layers {
            // q | k | v for every token: n × 3h
            let qkv_b = &ly.qkv_b;
            let init =
                |_: usize, cols: Range<usize>, out: &mut [f32]| out.copy_from_slice(&qkv_b[cols]);
            let qkv = Out::of(&mut s.qkv);
            linear_step(team, &ly.qkv_w, n, &s.x, &mut s.quant, qkv, init, false);
            // per head: scores = q · kᵀ / √dh, softmax per row, ctx = scores · v
            let (qkv, scores, ctx) = (&s.qkv[..], Out::of(&mut s.scores), Out::of(&mut s.ctx));
            assert!(ctx.len >= n * h);
            team.run(heads, |head| {
                let q = View::rows(&qkv[head * dh..], 3 * h);
                let k = View::rows(&qkv[h + head * dh..], 3 * h);
                let v = View::rows(&qkv[2 * h + head * dh..], 3 * h);
                // SAFETY: head `head` alone uses its `n × n` block of `scores`.
                let sc = unsafe { scores.part(head * n * n, n * n) };
                // SAFETY: `sc` is this head's block, borrowed mutably, apart from `qkv`.
                unsafe { MatMul.run_raw((n, n, dh), q, k.t(), sc.as_mut_ptr(), n, false, scale) };
                for row in sc.chunks_exact_mut(n) {
                    softmax_row(row);
                }
                let sc = View::rows(sc, n);
                // SAFETY: head `head` alone writes columns `head·dh .. (head+1)·dh` of the
                // `n × h` matrix `ctx` (assert above): rows start `h` apart.
                unsafe {
                    MatMul.run_raw((n, dh, n), sc, v, ctx.base().add(head * dh), h, false, 1.0)
                };
            });
            // attention output: x + bias + ctx · W_o, then LayerNorm
            let init = residual(&s.x, &ly.out_b, h);
            let att = Out::of(&mut s.att);
            linear_step(team, &ly.out_w, n, &s.ctx, &mut s.quant, att, init, false);
            layer_norm_step(
                team,
                Out::of(&mut s.att),
                n,
                h,
                row_chunks,
                &ly.ln1_w,
                &ly.ln1_b,
                self.eps,
            );
            // feed-forward: GELU(att · W_i + b_i) · W_f + b_f + att, then LayerNorm
            let inter_b = &ly.inter_b;
            let init =
                |_: usize, cols: Range<usize>, out: &mut [f32]| out.copy_from_slice(&inter_b[cols]);
            let inter = Out::of(&mut s.inter);
            linear_step(
                team,
                &ly.inter_w,
                n,
                &s.att,
                &mut s.quant,
                inter,
                init,
                true,
            );
            let init = residual(&s.att, &ly.ffn_b, h);
            let x = Out::of(&mut s.x);
            linear_step(team, &ly.ffn_w, n, &s.inter, &mut s.quant, x, init, false);
            layer_norm_step(
                team,
                Out::of(&mut s.x),
                n,
                h,
                row_chunks,
                &ly.ln2_w,
                &ly.ln2_b,
                self.eps,
            );
        }
        pool(&s.x[..n * h], h, &self.pooling)
    }
}

/// The token vectors `x` (rows of `h` floats) pooled by each mode of `modes` in turn, the
/// results concatenated (sentence-transformers' `Pooling` over one unpadded text).
fn pool(x: &[f32], h: usize, modes: &[Pooling]) -> Vec<f32> {
    let n = (x.len() / h).max(1);
    let mut out = Vec::with_capacity(h * modes.len());
    for mode in modes {
        let start = out.len();
        match mode {
            Pooling::Cls => out.extend_from_slice(&x[..h]),
            Pooling::Max => {
                out.extend_from_slice(&x[..h]);
                for row in x.chunks_exact(h).skip(1) {
                    for (m, v) in out[start..].iter_mut().zip(row) {
                        *m = m.max(*v);
                    }
                }
            }
            Pooling::Mean | Pooling::MeanSqrtLen => {
                out.resize(start + h, 0.0);
                for row in x.chunks_exact(h) {
                    for (p, v) in out[start..].iter_mut().zip(row) {
                        *p += v;
                    }
                }
                let by = if *mode == Pooling::Mean {
                    n as f32
                } else {
                    (n as f32).sqrt()
                };
                out[start..].iter_mut().for_each(|p| *p /= by);
            }
        }
    }
    out
}

/// The `init` of a [`linear_step`] that adds a residual: columns `cols` of row `r` start as
/// `src[r][cols] + bias[cols]` (`src` is row-major with `h` columns).
fn residual<'a>(
    src: &'a [f32],
    bias: &'a [f32],
    h: usize,
) -> impl Fn(usize, Range<usize>, &mut [f32]) + Sync + 'a {
    move |r, cols, out| {
        let (x, b) = (&src[r * h..][cols.clone()], &bias[cols]);
        for ((o, x), b) in out.iter_mut().zip(x).zip(b) {
            *o = x + b;
        }
    }
}

/// Rows per index of a LayerNorm step.
const LN_ROWS: usize = 4;

/// `dst = init + a · W` (then GELU when `gelu`) for the `m` rows of `a` (`m × k`) into `dst`
/// (`m × n`), split over `team` by column chunks: `init(r, cols, out)` first sets `out`, the
/// columns `cols` of row `r`. A [`Kernel::Int16`] layer's input rows are first quantized into
/// `quant`, split over `team` by row block ([`row_blocks`]), and within a block by ranges of
/// input pairs when there are fewer blocks than threads.
#[allow(clippy::too_many_arguments)]
fn linear_step(
    team: &Team<'_>,
    w: &Linear,
    m: usize,
    a: &[f32],
    quant: &mut Quantized,
    dst: Out<f32>,
    init: impl Fn(usize, Range<usize>, &mut [f32]) + Sync,
    gelu: bool,
) {
    let (k, n) = (w.inputs(), w.outputs());
    assert!(dst.len >= m * n && a.len() >= m * k);
    let input = match w.quantized_inputs() {
        Some(kq) => {
            quant.q.reset(m * kq);
            quant.scales.reset(m);
            let (q, scales) = (Out::of(&mut quant.q), Out::of(&mut quant.scales));
            // One index per part of a row block (its integers are contiguous). Each part finds
            // the scales of its block's rows anew, so a block is split only when there are
            // fewer blocks than threads.
            let blocks = row_blocks(m).count();
            let parts = team.threads().div_ceil(blocks.max(1)).max(1);
            team.run(blocks * parts, |i| {
                let (block, part) = (row_blocks(m).nth(i / parts).expect("a block"), i % parts);
                let pairs = part_pairs(kq, parts, part);
                // SAFETY: `q` holds `m × kq` integers and `scales` `m` floats (reset above);
                // index `i` alone writes the pairs `pairs` of the block's rows, and only its
                // part 0 writes their scales.
                unsafe {
                    quantize_block_part(
                        a,
                        k,
                        kq,
                        block,
                        pairs,
                        q.base(),
                        (part == 0).then(|| scales.base()),
                    )
                }
            });
            Input {
                a,
                q: &quant.q,
                scales: &quant.scales,
            }
        }
        None => Input {
            a,
            q: &[],
            scales: &[],
        },
    };
    team.run(w.chunks(), |c| {
        let cols = w.chunk_cols(c);
        for r in 0..m {
            // SAFETY: chunk `c` alone uses these columns of the `m × n` matrix `dst`.
            init(r, cols.clone(), unsafe {
                dst.part(r * n + cols.start, cols.len())
            });
        }
        // SAFETY: `dst` holds `m × n` floats (assert above), apart from the input; chunk `c`
        // alone uses its columns.
        unsafe { w.acc_chunk(c, m, input, dst.base()) };
        if gelu {
            for r in 0..m {
                // SAFETY: as above.
                gelu_erf(unsafe { dst.part(r * n + cols.start, cols.len()) });
            }
        }
    });
}

/// LayerNorm of each `h`-long row of `x` (`m` rows), [`LN_ROWS`] rows per index of `team`.
#[allow(clippy::too_many_arguments)]
fn layer_norm_step(
    team: &Team<'_>,
    x: Out<f32>,
    m: usize,
    h: usize,
    chunks: usize,
    w: &[f32],
    b: &[f32],
    eps: f32,
) {
    team.run(chunks, |i| {
        for r in i * LN_ROWS..((i + 1) * LN_ROWS).min(m) {
            // SAFETY: index `i` alone uses rows `i·LN_ROWS ..`.
            layer_norm(unsafe { x.part(r * h, h) }, w, b, eps);
        }
    });
}

/// A buffer of the forward pass that the threads of a step write in disjoint parts.
struct Out<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for Out<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Out<T> {}

// SAFETY: `Out` is a pointer into a buffer borrowed mutably for one step; the threads of the step
// write disjoint parts of it (see [`Out::part`]), and `T` (f32, i16) is plain data.
unsafe impl<T: Send> Send for Out<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Out<T> {}

impl<T> Out<T> {
    /// The whole of `buf`, for one step.
    fn of(buf: &mut [T]) -> Out<T> {
        Out {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
        }
    }

    /// The first element (a method, so closures capture the whole `Out`, which is `Sync`).
    fn base(&self) -> *mut T {
        self.ptr
    }

    /// Elements `at .. at + len`.
    ///
    /// # Safety
    /// No other thread may access them while the result lives, and the buffer must still be
    /// borrowed for the step.
    ///
    /// # Panics
    /// When they are not all in the buffer.
    #[allow(clippy::mut_from_ref)]
    unsafe fn part(&self, at: usize, len: usize) -> &mut [T] {
        assert!(at + len <= self.len);
        // SAFETY: in bounds (assert above); the caller vouches that nothing else accesses them.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at), len) }
    }
}

/// The input rows of a [`Kernel::Int16`] product, quantized pair-major ([`super::kernels::Input`]).
#[derive(Default)]
struct Quantized {
    q: Buf<i16>,
    scales: Buf<f32>,
}

/// Per-call buffers of the forward pass, reused across the texts of one [`Encoder::encode`].
#[derive(Default)]
struct Scratch {
    x: Buf,
    qkv: Buf,
    ctx: Buf,
    att: Buf,
    inter: Buf,
    /// One `n × n` block per attention head.
    scores: Buf,
    quant: Quantized,
}

/// The alignment of a [`Buf`]: 128 bytes, the pair of cache lines the L2 prefetcher moves
/// together.
const ALIGN_BYTES: usize = 128;

/// A buffer (f32 or i16) whose first element starts on a 128-byte boundary. The threads of a
/// step write disjoint 32-column chunks of each row (or disjoint rows); with rows of a multiple
/// of 128 bytes that start aligned, no two threads write the same pair of cache lines, which
/// would otherwise bounce between the cores at every chunk boundary of every row (measured: 10%
/// of a two-thread query).
#[derive(Default)]
struct Buf<T = f32> {
    v: Vec<T>,
    off: usize,
    len: usize,
}

impl<T: Copy + Default> Buf<T> {
    /// `len` zeros (`T::default()`), aligned; the allocation is kept between calls.
    fn reset(&mut self, len: usize) -> &mut [T] {
        let size = std::mem::size_of::<T>();
        self.v.clear();
        self.v.resize(len + ALIGN_BYTES / size, T::default());
        let addr = self.v.as_ptr() as usize;
        self.off = (addr.next_multiple_of(ALIGN_BYTES) - addr) / size;
        self.len = len;
        &mut self.v[self.off..self.off + len]
    }
}

impl<T> std::ops::Deref for Buf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.v[self.off..self.off + self.len]
    }
}

impl<T> std::ops::DerefMut for Buf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.v[self.off..self.off + self.len]
    }
}

/// The tensors of `model.safetensors`, taken out one by one as f32 vectors (f16 and bf16 ones
/// widened exactly).
struct Weights {
    path: PathBuf,
    tensors: HashMap<String, (Vec<usize>, Vec<f32>)>,
}

impl Weights {
    fn open(dir: &Path, bytes: &[u8]) -> Result<Weights, SemanticError> {
        let path = dir.join("model.safetensors");
        let st =
            safetensors::SafeTensors::deserialize(bytes).map_err(|e| SemanticError::ModelFile {
                path: path.clone(),
                reason: format!("not a safetensors file: {e}"),
            })?;
        let mut tensors = HashMap::new();
        for (name, view) in st.tensors() {
            let name = ["bert.", "roberta."]
                .iter()
                .find_map(|p| name.strip_prefix(p))
                .unwrap_or(&name)
                .to_string();
            if !name.starts_with("embeddings.") && !name.starts_with("encoder.") {
                continue;
            }
            // integer buffers some checkpoints carry beside the weights
            if name.ends_with("position_ids") || name.ends_with("token_type_ids") {
                continue;
            }
            let bytes = view.data();
            let data: Vec<f32> = match view.dtype() {
                Dtype::F32 => bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                Dtype::F16 => bytes
                    .chunks_exact(2)
                    .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
                Dtype::BF16 => bytes
                    .chunks_exact(2)
                    .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
                other => {
                    return Err(SemanticError::Unsupported {
                        path: path.clone(),
                        what: format!(
                            "tensor `{name}` of `dtype` {other:?} (the weights this encoder \
                             reads are F32, F16 or BF16)"
                        ),
                    })
                }
            };
            tensors.insert(name, (view.shape().to_vec(), data));
        }
        Ok(Weights { path, tensors })
    }

    /// The tensor `name` (without `bert.` or `roberta.`), checked against `shape` (0 = any length).
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, SemanticError> {
        let (got, data) = self
            .tensors
            .remove(name)
            .ok_or_else(|| SemanticError::Weights {
                path: self.path.clone(),
                what: format!("no tensor `{name}`"),
            })?;
        let fits = got.len() == shape.len()
            && got.iter().zip(shape).all(|(g, s)| *s == 0 || g == s)
            && !got.contains(&0);
        if !fits {
            return Err(SemanticError::Weights {
                path: self.path.clone(),
                what: format!("tensor `{name}` has shape {got:?}, expected {shape:?}"),
            });
        }
        if let Some(at) = data.iter().position(|v| !v.is_finite()) {
            return Err(SemanticError::Weights {
                path: self.path.clone(),
                what: format!(
                    "tensor `{name}` holds {} at element {at}: the file is damaged",
                    data[at]
                ),
            });
        }
        Ok(data)
    }

    /// A PyTorch `Linear` weight (`out × in`) transposed to `in × out`, row-major.
    fn take_t(&mut self, name: &str, out: usize, inp: usize) -> Result<Vec<f32>, SemanticError> {
        let w = self.take(name, &[out, inp])?;
        let mut t = vec![0.0f32; out * inp];
        for o in 0..out {
            for i in 0..inp {
                t[i * out + o] = w[o * inp + i];
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> &'static Path {
        Path::new("/models/m")
    }

    fn refusal(e: SemanticError) -> String {
        assert!(matches!(e, SemanticError::Unsupported { .. }), "{e:?}");
        e.to_string()
    }

    #[test]
    fn pooling_modes_are_read_in_sentence_transformers_order() {
        let all = br#"{"word_embedding_dimension": 4, "pooling_mode_mean_sqrt_len_tokens": true,
            "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true,
            "pooling_mode_cls_token": true, "pooling_mode_weightedmean_tokens": false,
            "include_prompt": true}"#;
        assert_eq!(
            parse_pooling(dir(), all, 4).unwrap(),
            [
                Pooling::Cls,
                Pooling::Max,
                Pooling::Mean,
                Pooling::MeanSqrtLen
            ]
        );
        let cls = br#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#;
        assert_eq!(parse_pooling(dir(), cls, 4).unwrap(), [Pooling::Cls]);
        assert_eq!(Pooling::Max.flag(), "pooling_mode_max_tokens");
    }

    #[test]
    fn pooling_configs_this_encoder_cannot_run_are_refused_naming_the_field() {
        for (json, want) in [
            (
                r#"{"pooling_mode_lasttoken": true}"#,
                "`pooling_mode_lasttoken` true",
            ),
            (
                r#"{"pooling_mode_mean_tokens": true, "pooling_mode_weightedmean_tokens": true}"#,
                "`pooling_mode_weightedmean_tokens` true",
            ),
            (r#"{"pooling_mode_mean_tokens": false}"#, "no pooling mode"),
            (
                r#"{"pooling_mode_mean_tokens": 1}"#,
                "`pooling_mode_mean_tokens` 1",
            ),
            (
                r#"{"pooling_mode_mean_tokens": true, "include_prompt": false}"#,
                "`include_prompt` false",
            ),
            (
                r#"{"pooling_mode_mean_tokens": true, "word_embedding_dimension": 768}"#,
                "`word_embedding_dimension` 768",
            ),
        ] {
            let msg = refusal(parse_pooling(dir(), json.as_bytes(), 384).unwrap_err());
            assert!(
                msg.contains("1_Pooling/config.json`") && msg.contains(want),
                "{json}: {msg}"
            );
        }
        let e = parse_pooling(dir(), b"[1]", 384).unwrap_err();
        assert!(matches!(e, SemanticError::ModelFile { .. }), "{e:?}");
    }

    #[test]
    fn modules_say_whether_the_model_normalises_and_others_are_refused() {
        let base = r#"{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}"#;
        let norm = r#"{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}"#;
        assert!(!parse_modules(dir(), format!("[{base}]").as_bytes()).unwrap());
        assert!(parse_modules(dir(), format!("[{base}, {norm}]").as_bytes()).unwrap());
        let dense = r#"{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}"#;
        for json in [
            format!("[{base}, {dense}, {norm}]"),
            format!("[{base}, {dense}]"),
            r#"[{"path": "", "type": "sentence_transformers.models.Transformer"}]"#.to_string(),
            format!("[{norm}, {base}]"),
        ] {
            let msg = refusal(parse_modules(dir(), json.as_bytes()).unwrap_err());
            assert!(
                msg.contains("modules.json`") && msg.contains("then optionally `Normalize`"),
                "{msg}"
            );
        }
        let msg =
            refusal(parse_modules(dir(), format!("[{base}, {dense}]").as_bytes()).unwrap_err());
        assert!(
            msg.contains("`sentence_transformers.models.Dense` at `2_Dense`"),
            "{msg}"
        );
    }

    #[test]
    fn prompts_follow_sentence_transformers_encode_query_and_document() {
        assert_eq!(parse_prompts(dir(), None).unwrap(), Prompts::default());
        let none = br#"{"__version__": {"sentence_transformers": "2.0.0"}}"#;
        assert_eq!(
            parse_prompts(dir(), Some(none)).unwrap(),
            Prompts::default()
        );
        let e5 = br#"{"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null}"#;
        let p = parse_prompts(dir(), Some(e5)).unwrap();
        assert_eq!(
            (p.query.as_str(), p.document.as_str()),
            ("query: ", "passage: ")
        );
        assert_eq!(p.default, "");
        // the document prompt is the first of document, passage, corpus; the default fills in
        let both = br#"{"prompts": {"corpus": "c: ", "document": "d: ", "s": "s: "},
            "default_prompt_name": "s"}"#;
        let p = parse_prompts(dir(), Some(both)).unwrap();
        assert_eq!(
            (p.query.as_str(), p.document.as_str(), p.default.as_str()),
            ("s: ", "d: ", "s: ")
        );
        let bad = br#"{"prompts": {"query": "q: "}, "default_prompt_name": "classification"}"#;
        let msg = refusal(parse_prompts(dir(), Some(bad)).unwrap_err());
        assert!(
            msg.contains("config_sentence_transformers.json`")
                && msg.contains("`default_prompt_name` `classification`"),
            "{msg}"
        );
    }

    #[test]
    fn pooling_modes_concatenate_cls_max_mean_and_mean_sqrt_len() {
        // three tokens of two dimensions
        let x = [1.0f32, -2.0, 3.0, 0.0, -1.0, 5.0];
        assert_eq!(pool(&x, 2, &[Pooling::Cls]), [1.0, -2.0]);
        assert_eq!(pool(&x, 2, &[Pooling::Max]), [3.0, 5.0]);
        assert_eq!(pool(&x, 2, &[Pooling::Mean]), [1.0, 1.0]);
        let s = 3.0f32.sqrt();
        assert_eq!(
            pool(&x, 2, &[Pooling::Cls, Pooling::Mean, Pooling::MeanSqrtLen]),
            [1.0, -2.0, 1.0, 1.0, 3.0 / s, 3.0 / s]
        );
    }
}
