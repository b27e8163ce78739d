//! The numeric kernels of the forward pass: the linear layers' products ([`Linear`]: an own
//! AVX2 integer kernel on x86-64, else the `gemm` crate, which picks AVX2 / AVX-512 / NEON code
//! at run time), attention's small products (`gemm`), and the element-wise steps, written as
//! straight loops over slices the compiler vectorises (no branches, no calls to `libm` in the
//! inner loops).

/// Matrix products of one forward pass that are not a [`Linear`] layer's (attention's small
/// products), on the calling thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatMul;

/// A matrix view for `MatMul::run` (tests): element `(r, c)` is `data[r * rs + c * cs]`.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub data: &'a [f32],
    pub rs: usize,
    pub cs: usize,
}

impl<'a> View<'a> {
    /// A row-major matrix with `cols` columns.
    pub fn rows(data: &'a [f32], cols: usize) -> View<'a> {
        View {
            data,
            rs: cols,
            cs: 1,
        }
    }

    /// The transposed view.
    pub fn t(self) -> View<'a> {
        View {
            data: self.data,
            rs: self.cs,
            cs: self.rs,
        }
    }

    /// Whether a `rows × cols` matrix fits in `data`.
    fn holds(&self, rows: usize, cols: usize) -> bool {
        rows == 0 || cols == 0 || (rows - 1) * self.rs + (cols - 1) * self.cs < self.data.len()
    }
}

impl MatMul {
    /// `dst += a · b`, all row-major: `a` is `m × k`, `b` is `k × n`, `dst` is `m × n`.
    #[cfg(test)]
    pub fn acc(&self, m: usize, n: usize, k: usize, a: &[f32], b: &[f32], dst: &mut [f32]) {
        assert!(m == 0 || n == 0 || (m - 1) * n + n <= dst.len());
        // SAFETY: `dst` holds `m × n` floats (assert above) and is borrowed mutably.
        unsafe {
            self.run_raw(
                (m, n, k),
                View::rows(a, k),
                View::rows(b, n),
                dst.as_mut_ptr(),
                n,
                true,
                1.0,
            )
        }
    }

    /// `dst = (dst if accumulate) + scale · a · b` for an `m × k` view `a`, a `k × n` view `b`
    /// and a row-major `dst` whose rows start `dst_rs` apart.
    ///
    /// # Panics
    /// When a view or `dst` is too short for its shape (a bug of the caller: shapes come from
    /// the model).
    #[cfg(test)]
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        (m, n, k): (usize, usize, usize),
        a: View<'_>,
        b: View<'_>,
        dst: &mut [f32],
        dst_rs: usize,
        accumulate: bool,
        scale: f32,
    ) {
        assert!(m == 0 || n == 0 || (m - 1) * dst_rs + n <= dst.len());
        // SAFETY: the assert above keeps every element of `dst` reached inside it, and it is
        // borrowed mutably.
        unsafe { self.run_raw((m, n, k), a, b, dst.as_mut_ptr(), dst_rs, accumulate, scale) }
    }

    /// `MatMul::run` (tests) into the `m × n` matrix at `dst` whose rows start `dst_rs` apart.
    ///
    /// # Safety
    /// `dst + r * dst_rs + c` for `r < m`, `c < n` must be valid for reads and writes, and no
    /// other thread may access those elements during the call; they must not overlap `a` or `b`.
    ///
    /// # Panics
    /// When a view is too short for its shape.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn run_raw(
        &self,
        (m, n, k): (usize, usize, usize),
        a: View<'_>,
        b: View<'_>,
        dst: *mut f32,
        dst_rs: usize,
        accumulate: bool,
        scale: f32,
    ) {
        assert!(a.holds(m, k) && b.holds(k, n));
        if m == 0 || n == 0 {
            return;
        }
        // SAFETY: the assert above keeps every input element the strides reach (row r < m,
        // column c < n, inner i < k) inside `a` and `b`; the caller vouches for `dst`. With
        // k = 0 gemm reads no input element.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst,
                1,
                dst_rs as isize,
                accumulate,
                a.data.as_ptr(),
                a.cs as isize,
                a.rs as isize,
                b.data.as_ptr(),
                b.cs as isize,
                b.rs as isize,
                1.0,
                scale,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    }
}

/// The kernel a [`Linear`] layer's products run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Row-major f32 weights, products by `gemm` (the reference: debug builds, machines without
    /// AVX2, and [`super::Encoder::load_reference`]).
    Gemm,
    /// Weights as integers of at most [`W_MAX`] with one f32 scale per output column, in
    /// 16-column panels of interleaved input pairs; each product quantizes its input rows to
    /// integers of at most [`A_MAX`] with one scale per row ([`row_scale`]) and multiplies
    /// with `vpmaddwd` (16 multiply-adds per instruction against 8 for an f32 FMA), summing in
    /// i32 over [`K_CHUNK`] inputs at a time and in f32 across them (AVX2).
    Int16,
    /// [`Kernel::Int16`]'s layout and arithmetic on AVX-512: one 512-bit register holds a whole
    /// 16-column panel's input pair, and `vpdpwssd` (AVX512-VNNI) multiplies and adds into the
    /// i32 sums in one instruction (32 multiply-adds), over blocks of up to 16 rows. The i32
    /// partial sums are exact and converted and added in the same order, so its results are
    /// bit for bit those of [`Kernel::Int16`].
    Int16Wide,
    /// [`Kernel::Int16`] with AVX-VNNI (Intel cores since Alder Lake, including those without
    /// AVX-512): the VEX-encoded 256-bit `vpdpwssd` multiplies and adds in one instruction where
    /// AVX2 needs `vpmaddwd` and `vpaddd`; bit for bit the results of [`Kernel::Int16`].
    Int16Vnni,
}

impl Kernel {
    /// The fastest kernel this build runs on this machine, in an optimised build on x86-64:
    /// [`Kernel::Int16Wide`] with AVX-512 (F, BW, VNNI), else [`Kernel::Int16Vnni`] with
    /// AVX-VNNI, else [`Kernel::Int16`] with AVX2 and FMA; [`Kernel::Gemm`] elsewhere. Debug
    /// builds take `gemm` (kept optimised by the workspace's dev profile) because the kernels'
    /// intrinsics are slow unoptimised; unit tests check every kernel against it.
    pub fn fastest() -> Kernel {
        if cfg!(debug_assertions) {
            return Kernel::Gemm;
        }
        [Kernel::Int16Wide, Kernel::Int16Vnni, Kernel::Int16]
            .into_iter()
            .find(|k| k.available())
            .unwrap_or(Kernel::Gemm)
    }

    /// Whether this machine runs the kernel.
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                Kernel::Gemm => true,
                Kernel::Int16 => has!("avx2") && has!("fma"),
                Kernel::Int16Vnni => has!("avx2") && has!("fma") && has!("avxvnni"),
                Kernel::Int16Wide => {
                    has!("avx2")
                        && has!("fma")
                        && has!("avx512f")
                        && has!("avx512bw")
                        && has!("avx512vnni")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Kernel::Gemm
        }
    }
}

/// The largest magnitude of a weight quantized for [`Kernel::Int16`] (13 bits and a sign).
pub(crate) const W_MAX: i32 = 4095;
/// The largest magnitude of a quantized input ([`row_scale`]) (13 bits and a sign).
pub(crate) const A_MAX: i32 = 8191;
/// Inputs per i32 partial sum of [`Kernel::Int16`]. A product of a quantized input and weight is
/// at most `A_MAX · W_MAX = 33_542_145` in magnitude; `vpmaddwd` adds two of them (at most
/// 67_084_290, so the instruction itself never wraps); a lane sums `K_CHUNK / 2` such pairs,
/// at most `64 · 33_542_145 = 2_146_697_280 ≤ i32::MAX = 2_147_483_647`, so no partial sum
/// overflows (checked at compile time below). Each partial sum is then converted to f32
/// (relative rounding 2^-24) and added in f32.
pub(crate) const K_CHUNK: usize = 64;
const _: () = assert!(
    K_CHUNK.is_multiple_of(2) && K_CHUNK as i64 * A_MAX as i64 * W_MAX as i64 <= i32::MAX as i64
);

/// The scale of one input row for [`Kernel::Int16`], `s = max |row| / A_MAX`, and its inverse,
/// both 0 for a row of zeros (or holding a non-finite value); [`quantize_values`] then sets
/// `q[i] = round(row[i] / s)`, so `|q[i]| ≤ A_MAX`.
fn row_scale(row: &[f32]) -> (f32, f32) {
    #[cfg(target_arch = "x86_64")]
    let max = if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available.
        unsafe { x86::max_abs(row) }
    } else {
        row.iter().fold(0.0f32, |m, v| m.max(v.abs()))
    };
    #[cfg(not(target_arch = "x86_64"))]
    let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if max > 0.0 && max.is_finite() {
        (max / A_MAX as f32, A_MAX as f32 / max)
    } else {
        (0.0, 0.0)
    }
}

/// `q[i] = round(row[i] · inv)` clamped to `±A_MAX`, ties to even; the rest of `q` set to 0.
///
/// # Panics
/// When `q` is shorter than `row`.
fn quantize_values(row: &[f32], inv: f32, q: &mut [i16]) {
    assert!(q.len() >= row.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available; `q` is at least as long as `row` (assert above).
        return unsafe { x86::quantize_values(row, inv, q) };
    }
    let limit = A_MAX as f32;
    for (q, v) in q.iter_mut().zip(row) {
        *q = (v * inv).round_ties_even().clamp(-limit, limit) as i16;
    }
    q[row.len()..].fill(0);
}

/// Rows per block of a quantized input ([`Input::q`]): the AVX-512 kernel keeps one i32 sum
/// register per row of a block (16 of its 32 registers).
pub(crate) const BLOCK_ROWS: usize = 16;

/// The row blocks of an `m`-row quantized input, in order, as `(first row, rows)`: at most
/// [`BLOCK_ROWS`] rows each and of equal size (±1), so no block is much shorter than the rest (a
/// short block leaves the multiply units waiting on `vpdpwssd`'s latency).
pub(crate) fn row_blocks(m: usize) -> impl Iterator<Item = (usize, usize)> {
    let blocks = m.div_ceil(BLOCK_ROWS);
    (0..blocks).scan(0, move |r0, b| {
        let rows = (m - *r0).div_ceil(blocks - b);
        let block = (*r0, rows);
        *r0 += rows;
        Some(block)
    })
}

/// Part `part` of `parts` of the input pairs `0..kq / 2` of a row block: equal ranges in order
/// (the last may be shorter, or empty when there are more parts than pairs), covering them all.
pub(crate) fn part_pairs(kq: usize, parts: usize, part: usize) -> std::ops::Range<usize> {
    let per_part = (kq / 2).div_ceil(parts.max(1));
    (part * per_part).min(kq / 2)..((part + 1) * per_part).min(kq / 2)
}

/// Input pairs [`quantize_block_part`] converts at a time (a buffer on the stack).
const CHUNK_PAIRS: usize = 128;

/// Quantizes the input pairs `pairs` (`(2i, 2i + 1)` for `i` in it, within `0..kq / 2`) of the
/// rows of one block (`block` = `(first row, rows)` of [`row_blocks`]) of `a` (`m × k` f32,
/// row-major) into the layout of [`Input::q`] ([`row_scale`] and [`quantize_values`], each
/// row's scale from the whole row); when `scales` is given, also writes the rows' scales there
/// (`scales[r]` for row `r`). The integers written are contiguous (`block.1 · pairs.len()`
/// pairs), so threads quantizing other parts share cache lines only at the edges.
///
/// # Safety
/// `q` must be valid for writes of `m × kq` integers, and `scales` (when given) of `m` floats;
/// the block one of [`row_blocks`]`(m)`; no other thread may access these integers or scales
/// during the call.
///
/// # Panics
/// When `kq` is odd or below `k`, `pairs` reaches past `kq / 2`, or `a` holds fewer than the
/// block's rows.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn quantize_block_part(
    a: &[f32],
    k: usize,
    kq: usize,
    block: (usize, usize),
    pairs: std::ops::Range<usize>,
    q: *mut i16,
    scales: Option<*mut f32>,
) {
    let (r0, rows) = block;
    assert!(
        kq >= k && kq.is_multiple_of(2) && pairs.end <= kq / 2 && (r0 + rows) * k <= a.len(),
        "quantize_block_part: {kq} integers per row for {k} inputs, pairs {pairs:?}, rows \
         {r0}..{} of {} inputs",
        r0 + rows,
        a.len(),
    );
    let mut tmp = [0i16; 2 * CHUNK_PAIRS];
    for r in r0..r0 + rows {
        let row = &a[r * k..(r + 1) * k];
        let (scale, inv) = row_scale(row);
        if let Some(scales) = scales {
            // SAFETY: `r < m`; the caller vouches for the scales.
            unsafe { scales.add(r).write(scale) };
        }
        for pair0 in pairs.clone().step_by(CHUNK_PAIRS) {
            let pair1 = (pair0 + CHUNK_PAIRS).min(pairs.end);
            // the inputs of these pairs that exist (an odd `k` pads its last pair with 0)
            let values = &row[(2 * pair0).min(k)..(2 * pair1).min(k)];
            let part = &mut tmp[..2 * (pair1 - pair0)];
            quantize_values(values, inv, part);
            for (i, pair) in (pair0..pair1).zip(part.chunks_exact(2)) {
                // SAFETY: `r0 · kq + 2 · (i · rows + r - r0) + 1 < (r0 + rows) · kq ≤ m · kq`.
                unsafe {
                    let at = q.add(r0 * kq + 2 * (i * rows + r - r0));
                    at.write(pair[0]);
                    at.add(1).write(pair[1]);
                }
            }
        }
    }
}

/// The input rows of one product, as the layer's kernel reads them: `a` (`m × k` f32,
/// row-major), and for [`Kernel::Int16`] the same rows quantized ([`row_scale`]) in `q` and
/// one scale per row in `scales`. `q` holds `m × kq` integers (`kq` =
/// [`Linear::quantized_inputs`]) by row blocks ([`row_blocks`]), one after the other; within the
/// block of `rows` rows from row `r0`, pair-major: the input pair `(2i, 2i + 1)` of row `r` is
/// at `q[r0 · kq + 2 · (i · rows + r - r0)..][..2]`, so the kernels find the pairs of a block's
/// rows side by side ([`quantize_block_part`] writes it).
#[derive(Clone, Copy)]
pub(crate) struct Input<'a> {
    pub a: &'a [f32],
    pub q: &'a [i16],
    pub scales: &'a [f32],
}

/// The weight of a linear layer, `k` inputs × `n` outputs, stored for its [`Kernel`]: row-major
/// f32 (`k × n`) for [`Kernel::Gemm`]; for [`Kernel::Int16`] in panels of 16 output columns,
/// each contiguous: `k` rounded up to even, input pairs `(2i, 2i + 1)` interleaved per column
/// (32 integers per pair), plus one f32 scale per column.
pub(crate) struct Linear {
    k: usize,
    n: usize,
    kernel: Kernel,
    /// [`Kernel::Gemm`]: the weights, `k × n` row-major.
    w: Vec<f32>,
    /// [`Kernel::Int16`]: the panels as integers, and the column scales (`16 · panels`, 0 past
    /// `n`).
    int: Vec<i16>,
    scales: Vec<f32>,
}

impl Linear {
    /// The kernel the layer's products run.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// A layer from its row-major `k × n` weight (`x · W`) for `kernel`.
    ///
    /// # Panics
    /// When `w` does not hold `k × n` floats, or this machine does not run `kernel`
    /// ([`Kernel::available`]).
    pub fn new(w: Vec<f32>, k: usize, n: usize, kernel: Kernel) -> Linear {
        assert_eq!(w.len(), k * n);
        assert!(kernel.available(), "{kernel:?} does not run here");
        let mut layer = Linear {
            k,
            n,
            kernel,
            w: Vec::new(),
            int: Vec::new(),
            scales: Vec::new(),
        };
        let panels = n.div_ceil(16);
        match kernel {
            Kernel::Gemm => layer.w = w,
            Kernel::Int16 | Kernel::Int16Wide | Kernel::Int16Vnni => {
                let kq = k.next_multiple_of(2);
                layer.scales = vec![0.0f32; panels * 16];
                for (j, s) in layer.scales.iter_mut().enumerate().take(n) {
                    let max = (0..k).fold(0.0f32, |m, i| m.max(w[i * n + j].abs()));
                    *s = if max > 0.0 { max / W_MAX as f32 } else { 0.0 };
                }
                layer.int = vec![0i16; panels * kq * 16];
                let limit = W_MAX as f32;
                for i in 0..k {
                    for j in 0..n {
                        let s = layer.scales[j];
                        let q = if s > 0.0 { w[i * n + j] / s } else { 0.0 };
                        layer.int[(j / 16) * kq * 16 + (i / 2) * 32 + (j % 16) * 2 + i % 2] =
                            q.round_ties_even().clamp(-limit, limit) as i16;
                    }
                }
            }
        }
        layer
    }

    /// Inputs (`k`).
    pub fn inputs(&self) -> usize {
        self.k
    }

    /// Outputs (`n`).
    pub fn outputs(&self) -> usize {
        self.n
    }

    /// The length of a quantized input row ([`Input::q`]) for a [`Kernel::Int16`] layer (its
    /// inputs rounded up to even); `None` when the kernel reads f32 inputs alone.
    pub fn quantized_inputs(&self) -> Option<usize> {
        (self.kernel != Kernel::Gemm).then(|| self.k.next_multiple_of(2))
    }

    /// How many column chunks [`Linear::acc_chunk`] splits the outputs into.
    pub fn chunks(&self) -> usize {
        self.n.div_ceil(CHUNK_COLS)
    }

    /// The output columns of chunk `c` (`c < chunks()`).
    pub fn chunk_cols(&self, c: usize) -> std::ops::Range<usize> {
        c * CHUNK_COLS..((c + 1) * CHUNK_COLS).min(self.n)
    }

    /// `dst += a · W` for `m` rows: `a` is `m × k`, `dst` is `m × n`, both row-major.
    #[cfg(test)]
    pub fn acc(&self, m: usize, a: &[f32], dst: &mut [f32]) {
        assert!(dst.len() >= m * self.n);
        let (mut q, mut scales) = (Vec::new(), Vec::new());
        if let Some(kq) = self.quantized_inputs() {
            q = vec![0i16; m * kq];
            scales = vec![0.0f32; m];
            for block in row_blocks(m) {
                // SAFETY: `q` holds `m × kq` integers and `scales` `m` floats; one thread.
                unsafe {
                    quantize_block_part(
                        a,
                        self.k,
                        kq,
                        block,
                        0..kq / 2,
                        q.as_mut_ptr(),
                        Some(scales.as_mut_ptr()),
                    )
                };
            }
        }
        let input = Input {
            a,
            q: &q,
            scales: &scales,
        };
        for c in 0..self.chunks() {
            // SAFETY: `dst` holds `m × n` floats (assert above) and is borrowed mutably.
            unsafe { self.acc_chunk(c, m, input, dst.as_mut_ptr()) }
        }
    }

    /// `dst[r][j] += (a · W)[r][j]` for the `m` rows `r` of `input` and the columns `j` of
    /// chunk `c` ([`Linear::chunk_cols`]); `dst` points at an `m × n` row-major matrix. Chunks
    /// are disjoint column ranges, so threads may run different chunks of one product at once.
    ///
    /// # Safety
    /// `dst` must be valid for reads and writes of `m × n` floats, none of them in `input`, and
    /// no other thread may access the elements of chunk `c`'s columns during the call.
    ///
    /// # Panics
    /// When `input` holds fewer than `m` rows (of `k` floats, or for [`Kernel::Int16`] a scale
    /// each), when its quantized rows are not exactly `m` × [`Linear::quantized_inputs`]
    /// integers (their layout depends on `m`: [`Input::q`]), or when `c` is not a chunk.
    pub unsafe fn acc_chunk(&self, c: usize, m: usize, input: Input<'_>, dst: *mut f32) {
        let (k, n) = (self.k, self.n);
        assert!(c < self.chunks());
        let cols = self.chunk_cols(c);
        let panels = (cols.start / 16, cols.end.div_ceil(16));
        match self.kernel {
            Kernel::Gemm => {
                assert!(input.a.len() >= m * k);
                let w = View::rows(&self.w[cols.start..], n);
                // SAFETY: the caller vouches for `dst`'s `m × n` floats; the columns written
                // are chunk `c`'s, `cols.len()` of them from `cols.start`.
                unsafe {
                    MatMul.run_raw(
                        (m, cols.len(), k),
                        View::rows(input.a, k),
                        w,
                        dst.add(cols.start),
                        n,
                        true,
                        1.0,
                    )
                }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Int16 | Kernel::Int16Wide | Kernel::Int16Vnni => {
                let kq = k.next_multiple_of(2);
                assert!(input.q.len() == m * kq && input.scales.len() >= m);
                let run = match self.kernel {
                    Kernel::Int16Wide => x86::int_acc_wide,
                    Kernel::Int16Vnni => x86::int_acc_vnni,
                    _ => x86::int_acc,
                };
                // SAFETY: `new` checked the kernel's instruction sets (`available`); `q` holds
                // the `m × kq` integers of `m` rows laid out as `Input::q` says and `scales` `m`
                // floats (assert above), the panels `ceil(n / 16) × kq × 16` integers and `16 · ceil(n / 16)` scales, the caller
                // vouches for `dst`, and the panels `panels.0..panels.1` are chunk `c`'s columns.
                unsafe {
                    run(
                        m,
                        n,
                        kq,
                        input.q.as_ptr(),
                        input.scales.as_ptr(),
                        self.int.as_ptr(),
                        self.scales.as_ptr(),
                        dst,
                        panels.0,
                        panels.1,
                    )
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("`new` builds only the `gemm` layout off x86-64"),
        }
    }
}

/// Output columns per chunk of [`Linear::acc_chunk`]: two 16-column panels, a few µs of work
/// for a 30-token query against a 384-input layer, so the claims of a step cost little beside
/// it.
const CHUNK_COLS: usize = 32;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{BLOCK_ROWS, K_CHUNK};

    /// The largest magnitude in `row`, 8 lanes at a time.
    ///
    /// # Safety
    /// AVX2 must be available.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn max_abs(row: &[f32]) -> f32 {
        let len = row.len();
        let abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
        let mut maxv = _mm256_setzero_ps();
        let mut i = 0;
        while i + 8 <= len {
            maxv = _mm256_max_ps(
                maxv,
                _mm256_and_ps(_mm256_loadu_ps(row.as_ptr().add(i)), abs),
            );
            i += 8;
        }
        let mut lanes = [0.0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), maxv);
        lanes
            .iter()
            .chain(&row[i..])
            .fold(0.0f32, |m, v| m.max(v.abs()))
    }

    /// [`super::quantize_values`], 8 lanes at a time (`vcvtps2dq` rounds to nearest even, as
    /// `round_ties_even` does).
    ///
    /// # Safety
    /// AVX2 must be available; `q` must be at least as long as `row`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quantize_values(row: &[f32], inv: f32, q: &mut [i16]) {
        let len = row.len();
        let (invv, lim) = (_mm256_set1_ps(inv), _mm256_set1_ps(super::A_MAX as f32));
        let mut i = 0;
        while i + 8 <= len {
            let v = _mm256_mul_ps(_mm256_loadu_ps(row.as_ptr().add(i)), invv);
            let v = _mm256_max_ps(
                _mm256_min_ps(v, lim),
                _mm256_sub_ps(_mm256_setzero_ps(), lim),
            );
            let d = _mm256_cvtps_epi32(v);
            // i32 lanes to i16 (saturating; |d| ≤ A_MAX so nothing saturates): `packs` works per
            // 128-bit half, the permute puts the 8 results in order
            let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packs_epi32(d, d));
            _mm_storeu_si128(
                q.as_mut_ptr().add(i) as *mut __m128i,
                _mm256_castsi256_si128(packed),
            );
            i += 8;
        }
        let limit = super::A_MAX as f32;
        for j in i..len {
            q[j] = (row[j] * inv).round_ties_even().clamp(-limit, limit) as i16;
        }
        q[len..].fill(0);
    }

    /// Adds the `R × 16` block `acc` (times `scale[r]` per row when given) to `dst`, whose rows
    /// start `ldd` apart, keeping only the first `cols` columns.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn store_block<const R: usize>(
        acc: &[[__m256; 2]; R],
        dst: *mut f32,
        ldd: usize,
        cols: usize,
    ) {
        for (r, acc) in acc.iter().enumerate() {
            let d = dst.add(r * ldd);
            if cols == 16 {
                _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), acc[0]));
                _mm256_storeu_ps(d.add(8), _mm256_add_ps(_mm256_loadu_ps(d.add(8)), acc[1]));
            } else {
                let mut tmp = [0.0f32; 16];
                _mm256_storeu_ps(tmp.as_mut_ptr(), acc[0]);
                _mm256_storeu_ps(tmp.as_mut_ptr().add(8), acc[1]);
                for (c, t) in tmp.iter().enumerate().take(cols) {
                    *d.add(c) += t;
                }
            }
        }
    }

    /// Defines an AVX2-width integer kernel `$acc_fn` (with its row-group function `$block_fn`)
    /// for the target features `$features`, whose multiply-add step `$madd` adds the products of
    /// the input pair `$x` (broadcast) and the panel's two halves `$w0`, `$w1` into the two i32
    /// registers `$acc` of a row: [`int_acc`] and [`int_acc_vnni`] differ only there.
    macro_rules! int_kernel {
        ($(#[$doc:meta])* $acc_fn:ident, $block_fn:ident, $features:literal,
         |$acc:ident, $x:ident, $w0:ident, $w1:ident| $madd:block) => {
            $(#[$doc])*
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            pub(super) unsafe fn $acc_fn(
                m: usize,
                n: usize,
                kq: usize,
                q: *const i16,
                q_scale: *const f32,
                w: *const i16,
                w_scale: *const f32,
                dst: *mut f32,
                from: usize,
                to: usize,
            ) {
                for p in from..to {
                    let (wp, ws) = (w.add(p * kq * 16), w_scale.add(p * 16));
                    let cols = (n - p * 16).min(16);
                    for (b0, b_rows) in super::row_blocks(m) {
                        // rows of the block in groups of up to 6 (12 of the 16 registers for sums)
                        let mut r0 = 0;
                        while r0 < b_rows {
                            let rows = (b_rows - r0).min(6);
                            let qr = q.add(b0 * kq + 2 * r0);
                            let (sr, dr) = (q_scale.add(b0 + r0), dst.add((b0 + r0) * n + p * 16));
                            match rows {
                                6 => $block_fn::<6>(b_rows, kq, qr, sr, wp, ws, dr, n, cols),
                                5 => $block_fn::<5>(b_rows, kq, qr, sr, wp, ws, dr, n, cols),
                                4 => $block_fn::<4>(b_rows, kq, qr, sr, wp, ws, dr, n, cols),
                                3 => $block_fn::<3>(b_rows, kq, qr, sr, wp, ws, dr, n, cols),
                                2 => $block_fn::<2>(b_rows, kq, qr, sr, wp, ws, dr, n, cols),
                                _ => $block_fn::<1>(b_rows, kq, qr, sr, wp, ws, dr, n, cols),
                            }
                            r0 += rows;
                        }
                    }
                }
            }

            #[target_feature(enable = $features)]
            #[inline]
            #[allow(clippy::too_many_arguments)]
            unsafe fn $block_fn<const R: usize>(
                stride: usize,
                kq: usize,
                q: *const i16,
                q_scale: *const f32,
                wp: *const i16,
                w_scale: *const f32,
                dst: *mut f32,
                ldd: usize,
                cols: usize,
            ) {
                let mut sum = [[_mm256_setzero_ps(); 2]; R];
                let mut k0 = 0;
                while k0 < kq {
                    let k1 = (k0 + K_CHUNK).min(kq);
                    let mut acc = [[_mm256_setzero_si256(); 2]; R];
                    let mut kk = k0;
                    while kk < k1 {
                        let wv = wp.add(kk * 16);
                        let $w0 = _mm256_loadu_si256(wv as *const __m256i);
                        let $w1 = _mm256_loadu_si256(wv.add(16) as *const __m256i);
                        // the input pairs (kk, kk + 1) of the block's rows, side by side
                        let pairs = q.add(kk * stride) as *const i32;
                        for (r, $acc) in acc.iter_mut().enumerate() {
                            // the input pair (kk, kk + 1) of row r in every 32-bit lane
                            let $x = _mm256_set1_epi32(pairs.add(r).read_unaligned());
                            $madd
                        }
                        kk += 2;
                    }
                    for (sum, acc) in sum.iter_mut().zip(&acc) {
                        sum[0] = _mm256_add_ps(sum[0], _mm256_cvtepi32_ps(acc[0]));
                        sum[1] = _mm256_add_ps(sum[1], _mm256_cvtepi32_ps(acc[1]));
                    }
                    k0 = k1;
                }
                let (s0, s1) = (_mm256_loadu_ps(w_scale), _mm256_loadu_ps(w_scale.add(8)));
                for (r, sum) in sum.iter_mut().enumerate() {
                    let sr = _mm256_set1_ps(*q_scale.add(r));
                    sum[0] = _mm256_mul_ps(sum[0], _mm256_mul_ps(sr, s0));
                    sum[1] = _mm256_mul_ps(sum[1], _mm256_mul_ps(sr, s1));
                }
                store_block::<R>(&sum, dst, ldd, cols);
            }
        };
    }

    int_kernel!(
        /// `dst += (q · W) · scales` over the panels `from..to` of `W`, integers packed in 16-column
        /// panels of interleaved input pairs (see [`super::Linear`]): per panel and row block
        /// ([`super::row_blocks`]), groups of up to 6 of the block's rows (read with the block's row
        /// count as the stride between pairs) sum `vpmaddwd` products in 12 i32 registers over
        /// [`K_CHUNK`] inputs, add them to f32 sums, and finally add the sums times the row scale
        /// times the column scale to `dst`.
        ///
        /// # Safety
        /// AVX2 and FMA must be available; `kq` is even; `q` holds `m × kq` integers of magnitude at
        /// most [`super::A_MAX`], laid out for `m` rows as [`super::Input::q`] says, and `q_scale`
        /// `m` floats; `w` holds `ceil(n / 16) × kq × 16`
        /// integers of magnitude at most [`super::W_MAX`] and `w_scale` `16 · ceil(n / 16)` floats;
        /// `dst` holds `m × n` floats; `to` is at most `ceil(n / 16)`; threads running at once get
        /// disjoint panel ranges.
        int_acc,
        int_block,
        "avx2,fma",
        |acc, x, w0, w1| {
            acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(x, w0));
            acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(x, w1));
        }
    );

    int_kernel!(
        /// [`int_acc`] with AVX-VNNI (the VEX-encoded 256-bit `vpdpwssd` of Intel cores since
        /// Alder Lake, also on those without AVX-512): one instruction multiplies and adds into
        /// the i32 sums where AVX2 needs `vpmaddwd` and `vpaddd`. The i32 sums are exact, so the
        /// results are bit for bit [`int_acc`]'s.
        ///
        /// # Safety
        /// As [`int_acc`], with AVX-VNNI available.
        int_acc_vnni,
        vnni_block,
        "avx2,fma,avxvnni",
        |acc, x, w0, w1| {
            // As inline assembly: LLVM's generic tuning splits the intrinsic into
            // `vpmaddwd` + `vpaddd`.
            std::arch::asm!(
                "{{vex}} vpdpwssd {a}, {x}, {w}",
                a = inout(ymm_reg) acc[0],
                x = in(ymm_reg) x,
                w = in(ymm_reg) w0,
                options(pure, nomem, nostack, preserves_flags),
            );
            std::arch::asm!(
                "{{vex}} vpdpwssd {a}, {x}, {w}",
                a = inout(ymm_reg) acc[1],
                x = in(ymm_reg) x,
                w = in(ymm_reg) w1,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
    );

    /// [`int_acc`] on AVX-512: the same panels, rows in the blocks of [`super::row_blocks`], `vpdpwssd` for the
    /// multiply-adds. Results are bit for bit [`int_acc`]'s: the i32 partial sums over each
    /// [`K_CHUNK`] inputs are exact (see there), then converted, summed, scaled and added to
    /// `dst` in the same order.
    ///
    /// # Safety
    /// As [`int_acc`], with AVX-512 F, BW and VNNI available.
    #[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn int_acc_wide(
        m: usize,
        n: usize,
        kq: usize,
        q: *const i16,
        q_scale: *const f32,
        w: *const i16,
        w_scale: *const f32,
        dst: *mut f32,
        from: usize,
        to: usize,
    ) {
        for p in from..to {
            let (wp, ws) = (w.add(p * kq * 16), w_scale.add(p * 16));
            let cols = (n - p * 16).min(16);
            // each row block streams the panel's weights once
            for (r0, rows) in super::row_blocks(m) {
                let (qr, sr, dr) = (q.add(r0 * kq), q_scale.add(r0), dst.add(r0 * n + p * 16));
                macro_rules! dispatch {
                    ($($r:literal)*) => {
                        match rows {
                            $($r => wide_block::<$r>(kq, qr, sr, wp, ws, dr, n, cols),)*
                            _ => unreachable!("a block has 1 to BLOCK_ROWS rows"),
                        }
                    };
                }
                dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
            }
        }
    }

    #[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vnni")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn wide_block<const R: usize>(
        kq: usize,
        q: *const i16,
        q_scale: *const f32,
        wp: *const i16,
        w_scale: *const f32,
        dst: *mut f32,
        ldd: usize,
        cols: usize,
    ) {
        let mut sum = [_mm512_setzero_ps(); R];
        let mut k0 = 0;
        while k0 < kq {
            let k1 = (k0 + K_CHUNK).min(kq);
            // BLOCK_ROWS accumulators; only the first R are used (the guards are constants)
            let mut acc = [_mm512_setzero_si512(); BLOCK_ROWS];
            let mut kk = k0;
            while kk < k1 {
                // the panel's 16 columns × the input pair (kk, kk + 1)
                let wv = _mm512_loadu_si512(wp.add(kk * 16) as *const __m512i);
                // the input pairs (kk, kk + 1) of the block's rows, side by side
                let pairs = q.add(kk * R);
                // `vpdpwssd` with the row's pair broadcast from memory at a constant offset:
                // one micro-op per 32 multiply-adds. (The intrinsic is not used: LLVM's generic
                // tuning splits it into `vpmaddwd` + `vpaddd`, and the broadcast into its own
                // load, which made this loop ~1.6× slower.)
                macro_rules! rows {
                    ($($r:literal)*) => {$(
                        if $r < R {
                            std::arch::asm!(
                                "vpdpwssd {acc}, {w}, dword ptr [{x} + {off}]{{1to16}}",
                                acc = inout(zmm_reg) acc[$r],
                                w = in(zmm_reg) wv,
                                x = in(reg) pairs,
                                off = const 4 * $r,
                                options(pure, readonly, nostack, preserves_flags),
                            );
                        }
                    )*};
                }
                rows!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
                kk += 2;
            }
            for (sum, acc) in sum.iter_mut().zip(&acc[..R]) {
                *sum = _mm512_add_ps(*sum, _mm512_cvtepi32_ps(*acc));
            }
            k0 = k1;
        }
        let s = _mm512_loadu_ps(w_scale);
        // all 16 lanes when the panel is full, else the first `cols`
        let mask: __mmask16 = if cols >= 16 { !0 } else { (1u16 << cols) - 1 };
        for (r, sum) in sum.iter().enumerate() {
            let sr = _mm512_set1_ps(*q_scale.add(r));
            let v = _mm512_mul_ps(*sum, _mm512_mul_ps(sr, s));
            let d = dst.add(r * ldd);
            let old = _mm512_maskz_loadu_ps(mask, d);
            _mm512_mask_storeu_ps(d, mask, _mm512_add_ps(old, v));
        }
    }
}

/// The dot product of two equally long slices (eight running sums, so it vectorises).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]) + tail
}

/// LayerNorm of one row in place: `(x - mean) / sqrt(var + eps) · w + b` (biased variance).
pub(crate) fn layer_norm(x: &mut [f32], w: &[f32], b: &[f32], eps: f32) {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, w), b) in x.iter_mut().zip(w).zip(b) {
        *v = (*v - mean) * inv * w + b;
    }
}

/// Softmax of one row in place.
pub(crate) fn softmax_row(x: &mut [f32]) {
    let max = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let mut sum = 0.0f32;
    for v in x.iter_mut() {
        *v = exp(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    x.iter_mut().for_each(|v| *v *= inv);
}

/// GELU in its erf form, `0.5 · x · (1 + erf(x / √2))` (the BERT `gelu`), in place; 16 lanes
/// at a time where AVX-512 is available, 8 with AVX2 (the same operations per element, so the
/// same results).
pub(crate) fn gelu_erf(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512 F is available.
            return unsafe { gelu_erf_avx512(x) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available.
            return unsafe { gelu_erf_avx2(x) };
        }
    }
    gelu_erf_body(x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f")]
unsafe fn gelu_erf_avx512(x: &mut [f32]) {
    gelu_erf_body(x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gelu_erf_avx2(x: &mut [f32]) {
    gelu_erf_body(x)
}

#[inline(always)]
fn gelu_erf_body(x: &mut [f32]) {
    for v in x.iter_mut() {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// `e^x` for f32, relative error below 2e-7 on [-87, 88] (inputs outside are clamped to it):
/// `x = n·ln 2 + f` with `|f| ≤ ln 2 / 2`, `e^f` by its degree-6 Taylor polynomial, `2^n` by
/// building the exponent bits. Branch-free, so loops over it vectorise.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 · 2^23: adding it rounds to an integer held in the low mantissa bits.
    const MAGIC: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let r = x * std::f32::consts::LOG2_E + MAGIC;
    let n = r.to_bits().wrapping_sub(MAGIC.to_bits()) as i32;
    let nf = r - MAGIC;
    let f = x - nf * LN2_HI - nf * LN2_LO;
    let p = 1.0
        + f * (1.0
            + f * (0.5
                + f * (1.0 / 6.0 + f * (1.0 / 24.0 + f * (1.0 / 120.0 + f * (1.0 / 720.0))))));
    p * f32::from_bits(((n + 127) as u32) << 23)
}

/// `erf(x)` by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7, the approximation the
/// reference encoder uses).
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = ((((1.061_405_4 * t - 1.453_152_1) * t + 1.421_413_8) * t - 0.284_496_74) * t
        + 0.254_829_6)
        * t;
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_std_across_the_softmax_and_gelu_range() {
        let mut worst = 0.0f32;
        let mut x = -80.0f32;
        while x < 80.0 {
            let rel = ((exp(x) - x.exp()) / x.exp()).abs();
            worst = worst.max(rel);
            x += 0.013;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert!(exp(-1000.0) >= 0.0 && exp(-1000.0) < 1e-37);
    }

    #[test]
    fn erf_matches_known_values() {
        // erf(0.5), erf(1), erf(2), rounded to f32
        for (x, want) in [
            (0.5f32, 0.520_499_9_f32),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {}", erf(x));
            assert!((erf(-x) + want).abs() < 3e-7);
        }
        assert!(erf(0.0).abs() < 3e-7);
    }

    #[test]
    fn matmul_accumulates_a_times_b() {
        // [1 2; 3 4] · [5 6 7; 8 9 10] + 1
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        let mut dst = [1.0f32; 6];
        MatMul.acc(2, 3, 2, &a, &b, &mut dst);
        assert_eq!(dst, [22.0, 25.0, 28.0, 48.0, 55.0, 62.0]);
    }

    #[test]
    fn strided_views_multiply_transposed_slices() {
        // a = rows 0..2 of a 2 × 3 matrix read as its first two columns; b = a^T
        let m = [1.0, 2.0, 9.0, 3.0, 4.0, 9.0];
        let a = View {
            data: &m,
            rs: 3,
            cs: 1,
        };
        let mut dst = [0.0f32; 4];
        MatMul.run((2, 2, 2), a, a.t(), &mut dst, 2, false, 0.5);
        assert_eq!(dst, [2.5, 5.5, 5.5, 12.5]);
    }

    /// Quantizing a block in parts (as the encoder's threads do) writes what quantizing it
    /// whole writes; every pair sits where [`Input::q`] says, an odd input count's last pair
    /// padded with 0; and the row blocks cover the rows in order, 1 to 16 rows each, of equal
    /// size (±1).
    #[test]
    fn quantized_blocks_are_laid_out_pair_major_and_split_into_parts_alike() {
        for m in [1, 15, 16, 17, 33, 128] {
            let blocks: Vec<(usize, usize)> = row_blocks(m).collect();
            assert_eq!(blocks.iter().map(|b| b.1).sum::<usize>(), m);
            assert!(blocks.windows(2).all(|w| w[1].0 == w[0].0 + w[0].1));
            let (lo, hi) = (
                blocks.iter().map(|b| b.1).min(),
                blocks.iter().map(|b| b.1).max(),
            );
            assert!(
                hi.unwrap() <= BLOCK_ROWS && hi.unwrap() - lo.unwrap() <= 1,
                "{m}: {blocks:?}"
            );
        }
        let mut next = random(5);
        for (m, k) in [(3, 7), (18, 384), (37, 1535)] {
            let kq = k + k % 2;
            let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let (mut whole, mut split) = (vec![7i16; m * kq], vec![7i16; m * kq]);
            let (mut s_whole, mut s_split) = (vec![0.0f32; m], vec![0.0f32; m]);
            for block in row_blocks(m) {
                // SAFETY: the buffers hold `m × kq` integers and `m` scales; one thread.
                unsafe {
                    quantize_block_part(
                        a.as_slice(),
                        k,
                        kq,
                        block,
                        0..kq / 2,
                        whole.as_mut_ptr(),
                        Some(s_whole.as_mut_ptr()),
                    );
                    // as the encoder splits a block: 3 parts, and for 7 inputs 5 parts (4 pairs:
                    // the last part empty)
                    let parts = if k < 8 { 5 } else { 3 };
                    for part in 0..parts {
                        let scales = (part == 0).then_some(s_split.as_mut_ptr());
                        let pairs = part_pairs(kq, parts, part);
                        quantize_block_part(
                            a.as_slice(),
                            k,
                            kq,
                            block,
                            pairs,
                            split.as_mut_ptr(),
                            scales,
                        );
                    }
                }
            }
            assert_eq!(whole, split, "{m}x{k}");
            assert_eq!(s_whole, s_split, "{m}x{k}");
            for (r0, rows) in row_blocks(m) {
                for r in r0..r0 + rows {
                    let mut row = vec![0i16; kq];
                    assert_eq!(quantize_row(&a[r * k..(r + 1) * k], &mut row), s_whole[r]);
                    for i in 0..kq / 2 {
                        let at = r0 * kq + 2 * (i * rows + r - r0);
                        assert_eq!(
                            &whole[at..at + 2],
                            &row[2 * i..2 * i + 2],
                            "{m}x{k} row {r} pair {i}"
                        );
                    }
                    if k % 2 == 1 {
                        assert_eq!(whole[r0 * kq + 2 * ((kq / 2 - 1) * rows + r - r0) + 1], 0);
                    }
                }
            }
        }
    }

    /// One row quantized whole: its scale ([`row_scale`]) and integers ([`quantize_values`]).
    fn quantize_row(row: &[f32], q: &mut [i16]) -> f32 {
        let (scale, inv) = row_scale(row);
        quantize_values(row, inv, q);
        scale
    }

    fn random(seed: u32) -> impl FnMut() -> f32 {
        let mut seed = seed;
        move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        }
    }

    const SHAPES: [(usize, usize, usize); 6] = [
        (1, 5, 3),
        (7, 37, 40),
        (13, 64, 48),
        (24, 384, 16),
        (6, 130, 70),
        (31, 1536, 33),
    ];

    /// `init + a · w` by `gemm` on the calling thread.
    fn reference(m: usize, k: usize, n: usize, a: &[f32], w: &[f32], init: &[f32]) -> Vec<f32> {
        let mut want = init.to_vec();
        MatMul.acc(m, n, k, a, w, &mut want);
        want
    }

    #[test]
    fn gemm_layers_multiply_chunk_by_chunk() {
        let mut next = random(3);
        for (m, k, n) in SHAPES {
            let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let init: Vec<f32> = (0..m * n).map(|_| next()).collect();
            let want = reference(m, k, n, &a, &w, &init);
            let mut got = init.clone();
            Linear::new(w, k, n, Kernel::Gemm).acc(m, &a, &mut got);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "{m}x{k}x{n}: {g} vs {w}");
            }
        }
    }

    /// The integer kernel's error is the quantization's: each product `a·w` is off by at most
    /// `|a|·(w step / 2) + |w|·(a step / 2) + steps / 4`, so for `k` inputs of magnitude ≤ 0.5 the
    /// bound is `k · 0.5 · (1 / (2·W_MAX) + 1 / (2·A_MAX))` (steps relative to each row's and
    /// column's largest magnitude) plus f32 rounding; the test also checks the typical error
    /// is far below that worst case.
    /// A line on the test's stderr that shows whether the test passes or not (libtest captures
    /// `eprintln!`, not direct writes): which kernels a run checked and which it could not.
    fn report(line: &str) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "kernels: {line}");
    }

    #[test]
    fn int_kernel_matches_gemm_within_the_quantization_bound() {
        if !Kernel::Int16.available() {
            report("NOT RUN: Int16 against gemm (this machine lacks AVX2 or FMA); 0 of 1 checked");
            return;
        }
        let mut next = random(11);
        for (m, k, n) in SHAPES {
            let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let init: Vec<f32> = (0..m * n).map(|_| next()).collect();
            let want = reference(m, k, n, &a, &w, &init);
            let mut got = init.clone();
            Linear::new(w, k, n, Kernel::Int16).acc(m, &a, &mut got);
            let bound = k as f32 * 0.5 * (0.5 / W_MAX as f32 + 0.5 / A_MAX as f32) + 1e-5;
            let mut sq = 0.0f64;
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= bound,
                    "{m}x{k}x{n}: {g} vs {w} (bound {bound})"
                );
                sq += ((g - w) as f64).powi(2);
            }
            let rms = (sq / got.len() as f64).sqrt();
            assert!(rms < bound as f64 / 4.0, "{m}x{k}x{n}: rms error {rms}");
        }
        report(&format!(
            "Int16 (AVX2) against gemm within the quantization bound on {} shapes; 1 of 1 checked",
            SHAPES.len()
        ));
    }

    /// The AVX-512 and AVX-VNNI kernels give exactly the AVX2 kernel's results (same integers,
    /// same order of the f32 steps), on shapes with row blocks of many sizes up to 16 and
    /// partial panels.
    #[test]
    fn vnni_int_kernels_equal_the_avx2_one_bit_for_bit() {
        let mut checked = 0;
        for kernel in [Kernel::Int16Wide, Kernel::Int16Vnni] {
            if !kernel.available() {
                report(&format!(
                    "NOT RUN: {kernel:?} against Int16 (this machine lacks its instructions)"
                ));
                continue;
            }
            checked += 1;
            let mut next = random(23);
            for (m, k, n) in SHAPES.into_iter().chain([(25, 384, 1536), (12, 1536, 384)]) {
                let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
                let w: Vec<f32> = (0..k * n).map(|_| next()).collect();
                let init: Vec<f32> = (0..m * n).map(|_| next()).collect();
                let (mut narrow, mut vnni) = (init.clone(), init);
                Linear::new(w.clone(), k, n, Kernel::Int16).acc(m, &a, &mut narrow);
                Linear::new(w, k, n, kernel).acc(m, &a, &mut vnni);
                let differ = narrow
                    .iter()
                    .zip(&vnni)
                    .filter(|(x, y)| x.to_bits() != y.to_bits())
                    .count();
                assert_eq!(differ, 0, "{kernel:?} {m}x{k}x{n}: {differ} outputs differ");
            }
        }
        report(&format!(
            "{checked} of 2 VNNI kernels checked bit for bit against Int16"
        ));
    }

    #[test]
    fn quantized_rows_keep_their_largest_value_and_zero_their_tail() {
        let row = [0.5f32, -2.0, 1.0, 0.0, 1e-6];
        let mut q = [7i16; 6];
        let s = quantize_row(&row, &mut q);
        assert_eq!(s, 2.0 / A_MAX as f32);
        assert_eq!(q[1], -A_MAX as i16);
        assert_eq!(q[5], 0);
        for (v, q) in row.iter().zip(q) {
            assert!((v - q as f32 * s).abs() <= s / 2.0, "{v} vs {q}");
        }
        // long enough for the 8-lane path, with a tail
        let mut next = random(5);
        let row: Vec<f32> = (0..37).map(|_| next() * 6.0).collect();
        let mut q = vec![9i16; 40];
        let s = quantize_row(&row, &mut q);
        let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert_eq!(s, max / A_MAX as f32);
        assert!(q.iter().any(|&q| q.unsigned_abs() == A_MAX as u16));
        assert!(q[37..].iter().all(|&q| q == 0));
        for (v, q) in row.iter().zip(&q) {
            assert!((v - *q as f32 * s).abs() <= s * 0.5001, "{v} vs {q}");
        }
        let mut z = [3i16; 2];
        assert_eq!(quantize_row(&[0.0, 0.0], &mut z), 0.0);
        assert_eq!(z, [0, 0]);
    }

    #[test]
    fn dot_and_layer_norm() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        assert_eq!(dot(&a, &a), (0..19).map(|i| (i * i) as f32).sum::<f32>());
        let mut x = [1.0f32, 2.0, 3.0, 4.0];
        layer_norm(&mut x, &[1.0; 4], &[0.0; 4], 0.0);
        let mean: f32 = x.iter().sum::<f32>() / 4.0;
        let var: f32 = x.iter().map(|v| v * v).sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-5, "{x:?}");
    }
}
