//! The numeric kernels of the forward pass: matrix products (the `gemm` crate, which picks AVX2 /
//! AVX-512 / NEON code at run time) and the element-wise steps, written as straight loops over
//! slices the compiler vectorises (no branches, no calls to `libm` in the inner loops).

/// Matrix products of one forward pass.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatMul {
    /// 1: the calling thread; more: that many threads of the rayon global pool.
    pub threads: usize,
}

/// A matrix view for [`MatMul::run`]: element `(r, c)` is `data[r * rs + c * cs]`.
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
    pub fn acc(&self, m: usize, n: usize, k: usize, a: &[f32], b: &[f32], dst: &mut [f32]) {
        self.run(
            (m, n, k),
            View::rows(a, k),
            View::rows(b, n),
            dst,
            n,
            true,
            1.0,
        );
    }

    /// `dst = (dst if accumulate) + scale · a · b` for an `m × k` view `a`, a `k × n` view `b`
    /// and a row-major `dst` whose rows start `dst_rs` apart.
    ///
    /// # Panics
    /// When a view or `dst` is too short for its shape (a bug of the caller: shapes come from
    /// the model).
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
        assert!(a.holds(m, k) && b.holds(k, n));
        assert!(m == 0 || n == 0 || (m - 1) * dst_rs + n <= dst.len());
        if m == 0 || n == 0 {
            return;
        }
        let parallelism = if self.threads > 1 {
            gemm::Parallelism::Rayon(self.threads)
        } else {
            gemm::Parallelism::None
        };
        // SAFETY: the asserts above keep every element the strides reach (row r < m, column
        // c < n, inner i < k) inside the three slices, and `dst` is borrowed mutably so it
        // aliases neither input. With k = 0 gemm reads no input element.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
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
                parallelism,
            );
        }
    }
}

/// The weight of a linear layer, `k` inputs × `n` outputs, stored for the fastest product this
/// machine runs: on x86-64 with AVX2, FMA and F16C in an optimised build, packed in panels of
/// 16 output columns (each panel `k × 16`, contiguous, as IEEE half floats) for
/// [`Linear::acc`]'s own kernel, which converts them to f32 as it reads them and keeps a 6 × 16
/// block of the result in f32 registers; otherwise row-major f32 (`k × n`) for `gemm`.
/// Debug builds take the `gemm` path (kept optimised by the workspace's dev profile) because the
/// kernel's intrinsics are slow unoptimised; a unit test checks both give the same products.
pub(crate) struct Linear {
    k: usize,
    n: usize,
    packed: bool,
    w: Vec<f32>,
    /// The packed panels as IEEE half floats (F16C), when the machine converts them.
    half: Vec<u16>,
}

impl Linear {
    /// A layer from its row-major `k × n` weight (`x · W`).
    pub fn new(w: Vec<f32>, k: usize, n: usize) -> Linear {
        if packed_kernel_available() && !cfg!(debug_assertions) {
            Linear::packed(&w, k, n)
        } else {
            Linear {
                k,
                n,
                packed: false,
                w,
                half: Vec::new(),
            }
        }
    }

    /// The packed form (see the type docs), whatever the build.
    fn packed(w: &[f32], k: usize, n: usize) -> Linear {
        let panels = n.div_ceil(16);
        let mut p = vec![0.0f32; panels * k * 16];
        for (i, row) in w.chunks_exact(n).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                p[(j / 16) * k * 16 + i * 16 + j % 16] = v;
            }
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("f16c") {
            // SAFETY: F16C is available.
            let half = unsafe { x86::to_half(&p) };
            return Linear {
                k,
                n,
                packed: true,
                w: Vec::new(),
                half,
            };
        }
        Linear {
            k,
            n,
            packed: true,
            w: p,
            half: Vec::new(),
        }
    }

    /// `dst += a · W` for `m` rows: `a` is `m × k`, `dst` is `m × n`, both row-major, on `mm`'s
    /// threads (the packed kernel splits the panels between them).
    pub fn acc(&self, mm: &MatMul, m: usize, a: &[f32], dst: &mut [f32]) {
        let (k, n) = (self.k, self.n);
        if !self.packed {
            return mm.acc(m, n, k, a, &self.w, dst);
        }
        assert!(a.len() >= m * k && dst.len() >= m * n);
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `packed` is only set when `packed_kernel_available` saw AVX2, FMA and F16C (or by
            // the unit test, which checks the same first); the assert above and the panel
            // layout keep every access in bounds.
            let panels = n.div_ceil(16);
            let half = !self.half.is_empty();
            let w = if half {
                self.half.as_ptr() as usize
            } else {
                self.w.as_ptr() as usize
            };
            let (a, d) = (a.as_ptr() as usize, dst.as_mut_ptr() as usize);
            let run = move |from: usize, to: usize| {
                let (a, w, d) = (a as *const f32, w as *const u8, d as *mut f32);
                unsafe {
                    if half {
                        x86::packed_acc::<true>(m, n, k, a, w, d, from, to)
                    } else {
                        x86::packed_acc::<false>(m, n, k, a, w, d, from, to)
                    }
                }
            };
            if mm.threads > 1 && panels > 1 {
                // Each thread owns a range of panels: disjoint columns of `dst`.
                let per = panels.div_ceil(mm.threads);
                rayon::scope(|s| {
                    for from in (per..panels).step_by(per) {
                        s.spawn(move |_| run(from, (from + per).min(panels)));
                    }
                    run(0, per.min(panels));
                });
            } else {
                run(0, panels);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("the packed layout is only built on x86-64");
    }
}

/// Whether this machine runs the packed kernel of [`Linear`] (x86-64 with AVX2, FMA and F16C).
pub(crate) fn packed_kernel_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// `dst += a · W` over the panels `from..to` of `W`, packed in 16-column panels (see
    /// [`super::Linear`]): per panel, blocks of up to 6 rows accumulate in 12 registers over the
    /// whole `k`, then add to `dst`.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; `a` holds `m × k`, `w` `ceil(n / 16) × k × 16` and `dst`
    /// `m × n` floats; `to` is at most `ceil(n / 16)`; threads running at once get disjoint
    /// panel ranges.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn packed_acc<const HALF: bool>(
        m: usize,
        n: usize,
        k: usize,
        a: *const f32,
        w: *const u8,
        dst: *mut f32,
        from: usize,
        to: usize,
    ) {
        for p in from..to {
            let wp = w.add(p * k * 16 * if HALF { 2 } else { 4 });
            let cols = (n - p * 16).min(16);
            let mut r0 = 0;
            while r0 < m {
                let rows = (m - r0).min(6);
                let (ar, dr) = (a.add(r0 * k), dst.add(r0 * n + p * 16));
                match rows {
                    6 => block::<6, HALF>(k, ar, wp, dr, n, cols),
                    5 => block::<5, HALF>(k, ar, wp, dr, n, cols),
                    4 => block::<4, HALF>(k, ar, wp, dr, n, cols),
                    3 => block::<3, HALF>(k, ar, wp, dr, n, cols),
                    2 => block::<2, HALF>(k, ar, wp, dr, n, cols),
                    _ => block::<1, HALF>(k, ar, wp, dr, n, cols),
                }
                r0 += rows;
            }
        }
    }

    /// `f32` values as IEEE half floats, rounded to nearest.
    ///
    /// # Safety
    /// F16C must be available.
    #[target_feature(enable = "f16c")]
    pub(super) unsafe fn to_half(v: &[f32]) -> Vec<u16> {
        let mut out = vec![0u16; v.len()];
        let mut i = 0;
        while i + 8 <= v.len() {
            let h =
                _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(v.as_ptr().add(i)));
            _mm_storeu_si128(out.as_mut_ptr().add(i) as *mut __m128i, h);
            i += 8;
        }
        for j in i..v.len() {
            let h = _mm_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm_set1_ps(v[j]));
            out[j] = _mm_extract_epi16::<0>(h) as u16;
        }
        out
    }

    /// Half floats back to `f32` (exact).
    ///
    /// # Safety
    /// F16C must be available.
    #[cfg(test)]
    #[target_feature(enable = "f16c")]
    pub(super) unsafe fn from_half(v: &[u16]) -> Vec<f32> {
        v.iter()
            .map(|&h| _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16(h as i16))))
            .collect()
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn block<const R: usize, const HALF: bool>(
        k: usize,
        a: *const f32,
        wp: *const u8,
        dst: *mut f32,
        ldd: usize,
        cols: usize,
    ) {
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        for kk in 0..k {
            let (w0, w1) = if HALF {
                let h = (wp as *const u16).add(kk * 16);
                (
                    _mm256_cvtph_ps(_mm_loadu_si128(h as *const __m128i)),
                    _mm256_cvtph_ps(_mm_loadu_si128(h.add(8) as *const __m128i)),
                )
            } else {
                let f = (wp as *const f32).add(kk * 16);
                (_mm256_loadu_ps(f), _mm256_loadu_ps(f.add(8)))
            };
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_set1_ps(*a.add(r * k + kk));
                acc[0] = _mm256_fmadd_ps(x, w0, acc[0]);
                acc[1] = _mm256_fmadd_ps(x, w1, acc[1]);
            }
        }
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
}

/// Sets every `bias.len()`-long row of `dst` to `bias`.
pub(crate) fn fill_rows(dst: &mut [f32], bias: &[f32]) {
    for row in dst.chunks_exact_mut(bias.len()) {
        row.copy_from_slice(bias);
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

/// GELU in its erf form, `0.5 · x · (1 + erf(x / √2))` (the BERT `gelu`), in place; 8 lanes
/// at a time where AVX2 is available.
pub(crate) fn gelu_erf(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available.
        return unsafe { gelu_erf_avx2(x) };
    }
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
        MatMul { threads: 1 }.acc(2, 3, 2, &a, &b, &mut dst);
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
        MatMul { threads: 1 }.run((2, 2, 2), a, a.t(), &mut dst, 2, false, 0.5);
        assert_eq!(dst, [2.5, 5.5, 5.5, 12.5]);
    }

    #[test]
    fn packed_kernel_matches_gemm() {
        if !packed_kernel_available() {
            return;
        }
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        for (m, k, n) in [(1, 5, 3), (7, 37, 40), (13, 64, 48), (24, 384, 16)] {
            let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * n).map(|_| next()).collect();
            // the packed panels hold half floats: compare with gemm on the same rounded weights
            // SAFETY: `packed_kernel_available` saw F16C.
            #[cfg(target_arch = "x86_64")]
            let w = unsafe { x86::from_half(&x86::to_half(&w)) };
            let init: Vec<f32> = (0..m * n).map(|_| next()).collect();
            let mut want = init.clone();
            MatMul { threads: 1 }.acc(m, n, k, &a, &w, &mut want);
            let mut got = init.clone();
            Linear::packed(&w, k, n).acc(&MatMul { threads: 1 }, m, &a, &mut got);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-4, "{m}x{k}x{n}: {g} vs {w}");
            }
        }
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
