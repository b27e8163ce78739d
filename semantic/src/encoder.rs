//! The sentence encoder: a BERT forward pass over a sentence-transformers model directory.

use std::collections::HashMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use super::kernels::{
    dot, gelu_erf, layer_norm, part_pairs, quantize_block_part, row_blocks, softmax_row, Input,
    Kernel, Linear, MatMul, View,
};
use super::team::{with_team, Team};
use super::SemanticError;

/// The longest input the encoder reads, in tokens including `[CLS]` and `[SEP]` (longer texts
/// are truncated), unless the model's `max_position_embeddings` is smaller: the limit of the
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

/// The files of a model directory the encoder reads, relative to it.
pub const MODEL_FILES: [&str; 4] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "1_Pooling/config.json",
];

/// `config.json`: the BERT hyper-parameters the forward pass needs.
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

/// `1_Pooling/config.json`: the pooling modes of a sentence-transformers model.
#[derive(Debug, Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
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

/// A sentence-transformers BERT model loaded for encoding: texts in, L2-normalised mean-pooled
/// embeddings out.
///
/// The forward pass is the reference encoder's (`bench/peer_dense.py`): word + absolute position +
/// token type 0 embeddings → LayerNorm → per layer [multi-head self-attention → dense → add &
/// LayerNorm → dense → GELU (erf form) → dense → add & LayerNorm] → mean pooling over the tokens →
/// L2 normalisation. Each text is encoded alone (batch of one, no padding), so no attention mask
/// is needed and the result equals the padded batch's.
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
    word: Vec<f32>,     // vocab × hidden
    position: Vec<f32>, // max_position × hidden
    token_type0: Vec<f32>,
    emb_ln_w: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    model_id: String,
    threads: usize,
    /// Ids of the tokenizer's special tokens and of `[UNK]`: no word of a query
    /// ([`Encoder::encode_query`]).
    not_words: Vec<u32>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("model_id", &self.model_id)
            .field("dim", &self.hidden)
            .field("layers", &self.layers.len())
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
    /// Loads the sentence-transformers model in `dir`: `config.json` (a BERT model with absolute
    /// positions and erf GELU), `model.safetensors` (f32 weights, with or without the `bert.`
    /// prefix), `tokenizer.json` and `1_Pooling/config.json` (mean pooling only). Inputs are
    /// truncated to [`MAX_TOKENS`] tokens.
    ///
    /// # Errors
    /// [`SemanticError::ModelFile`] naming a file that is missing or unreadable;
    /// [`SemanticError::Unsupported`] naming the file whose settings this encoder cannot run
    /// (another architecture, activation, pooling mode or weight type);
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
        let [config, weights, tokenizer, pooling] = [&bytes[0], &bytes[1], &bytes[2], &bytes[3]];

        let mut hasher = Sha256::new();
        for (name, b) in MODEL_FILES.iter().zip(&bytes) {
            hasher.update(name.as_bytes());
            hasher.update((b.len() as u64).to_le_bytes());
            hasher.update(b);
        }
        let model_id = format!("{:x}", hasher.finalize());

        let cfg: BertConfig = parse_json(dir, "config.json", config)?;
        if cfg.model_type != "bert" {
            return Err(unsupported(
                dir,
                "config.json",
                format!(
                    "`model_type` `{}` (only `bert` is supported)",
                    cfg.model_type
                ),
            ));
        }
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

        let pool: PoolingConfig = parse_json(dir, "1_Pooling/config.json", pooling)?;
        if !pool.pooling_mode_mean_tokens
            || pool.pooling_mode_cls_token
            || pool.pooling_mode_max_tokens
            || pool.pooling_mode_mean_sqrt_len_tokens
        {
            return Err(unsupported(
                dir,
                "1_Pooling/config.json",
                "a pooling mode other than mean pooling alone (set `pooling_mode_mean_tokens` \
                 to true and the other modes to false, or use a mean-pooling model)"
                    .to_string(),
            ));
        }

        let mut tokenizer =
            Tokenizer::from_bytes(tokenizer).map_err(|e| SemanticError::ModelFile {
                path: dir.join("tokenizer.json"),
                reason: format!("not a tokenizer: {e}"),
            })?;
        let max_tokens = MAX_TOKENS.min(cfg.max_position_embeddings);
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
        let token_type0 = token_type[..h].to_vec();
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
        not_words.extend(tokenizer.token_to_id("[UNK]"));
        Ok(Encoder {
            not_words,
            tokenizer,
            hidden: h,
            heads: cfg.num_attention_heads,
            intermediate: i,
            eps: cfg.layer_norm_eps as f32,
            max_tokens,
            word,
            position,
            token_type0,
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

    /// The embedding size (the model's `hidden_size`; 384 for all-MiniLM-L6-v2).
    pub fn dim(&self) -> usize {
        self.hidden
    }

    /// The most tokens of a text the encoder reads (see [`MAX_TOKENS`]).
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// A stable identity of the model: the SHA-256 (lower-case hex, 64 characters) of the
    /// encoder's files ([`MODEL_FILES`]: names, lengths and contents), so any change to the
    /// weights, tokenizer, config or pooling gives another id. Cache keys use it.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The token ids the encoder reads for `text` (`[CLS]` … `[SEP]`, truncated to
    /// [`Encoder::max_tokens`]).
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

    /// Embeds each text: one L2-normalised vector of [`Encoder::dim`] floats per text, in order.
    /// Cosine similarity of two results is their dot product.
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when the tokenizer fails on a text.
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SemanticError> {
        let mut scratch = Scratch::default();
        with_team(self.threads, |team| {
            texts
                .iter()
                .map(|t| {
                    let ids = self.token_ids(t)?;
                    Ok(self.forward(&ids, &mut scratch, team))
                })
                .collect()
        })
    }

    /// Embeds one text (see [`Encoder::encode`]).
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when the tokenizer fails.
    pub fn encode_one(&self, text: &str) -> Result<Vec<f32>, SemanticError> {
        Ok(self.embed_ids(&self.token_ids(text)?))
    }

    /// The embedding of one text's token ids, its forward pass split over the encoder's threads.
    fn embed_ids(&self, ids: &[u32]) -> Vec<f32> {
        let mut scratch = Scratch::default();
        with_team(self.threads, |team| self.forward(ids, &mut scratch, team))
    }

    /// [`Encoder::encode_one`] for a search query: a query whose tokens are all special tokens
    /// or the unknown token (control characters, zero-width spaces, `[SEP]` typed as text) is
    /// refused, since its embedding says nothing about it yet would still rank tools.
    ///
    /// # Errors
    /// [`SemanticError::NoWords`] for such a query; [`SemanticError::Tokenize`] when the
    /// tokenizer fails.
    pub fn encode_query(&self, text: &str) -> Result<Vec<f32>, SemanticError> {
        let enc = self.encoding(text)?;
        let words = enc
            .get_ids()
            .iter()
            .zip(enc.get_special_tokens_mask())
            .any(|(id, &special)| special == 0 && !self.not_words.contains(id));
        if !words {
            return Err(SemanticError::NoWords);
        }
        Ok(self.embed_ids(enc.get_ids()))
    }

    /// The forward pass of one sequence of token ids: the pooled, L2-normalised embedding.
    /// Each step is split over `team` (column chunks of the products, attention heads, rows of
    /// the LayerNorms); the element-wise steps run inside them, on the part each index owns.
    fn forward(&self, ids: &[u32], s: &mut Scratch, team: &Team<'_>) -> Vec<f32> {
        let h = self.hidden;
        let n = ids.len().clamp(1, self.max_tokens);
        let heads = self.heads;
        let dh = h / heads;
        let inter = self.intermediate;
        let vocab = self.word.len() / h;
        let x = s.x.reset(n * h);
        for (pos, &id) in ids.iter().take(n).enumerate() {
            // An id outside the vocabulary cannot come from the model's own tokenizer; `[PAD]`
            // (row 0) stands in rather than reading out of bounds.
            let id = if (id as usize) < vocab {
                id as usize
            } else {
                0
            };
            let w = &self.word[id * h..(id + 1) * h];
            let p = &self.position[pos * h..(pos + 1) * h];
            let row = &mut x[pos * h..(pos + 1) * h];
            for (((o, a), b), c) in row.iter_mut().zip(w).zip(p).zip(&self.token_type0) {
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
        let mut pooled = vec![0.0f32; h];
        for row in s.x.chunks_exact(h) {
            for (p, v) in pooled.iter_mut().zip(row) {
                *p += v;
            }
        }
        let inv = 1.0 / n as f32;
        pooled.iter_mut().for_each(|p| *p *= inv);
        let norm = dot(&pooled, &pooled).sqrt().max(1e-12);
        pooled.iter_mut().for_each(|p| *p /= norm);
        pooled
    }
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

/// The tensors of `model.safetensors`, taken out one by one as f32 vectors.
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
            let name = name.strip_prefix("bert.").unwrap_or(&name).to_string();
            if !name.starts_with("embeddings.") && !name.starts_with("encoder.") {
                continue;
            }
            if name.ends_with("position_ids") {
                continue;
            }
            if view.dtype() != safetensors::Dtype::F32 {
                return Err(SemanticError::Unsupported {
                    path: path.clone(),
                    what: format!(
                        "tensor `{name}` of type {:?} (only f32 weights are supported)",
                        view.dtype()
                    ),
                });
            }
            let data = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            tensors.insert(name, (view.shape().to_vec(), data));
        }
        Ok(Weights { path, tensors })
    }

    /// The tensor `name` (without `bert.`), checked against `shape` (0 = any length).
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
