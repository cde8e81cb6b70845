//! Per-output-pixel tap tables for separable 1-D filters.
//!
//! Output pixel `i` of a resample from `n_in` to `n_out` samples is centred
//! on input coordinate `(i + 0.5) * n_in / n_out`. On a downscale the
//! filter is stretched by the ratio (its support grows with it), so every
//! input pixel contributes and a shrink by 2.5 or 7 is antialiased, as in
//! Pillow and libvips. Taps that fall outside the image are dropped and the
//! remaining weights renormalised to sum to one, so edges keep their level.

/// One table: output `i` reads inputs `start[i] .. start[i] + len[i]` with
/// weights `weights[i * width .. i * width + len[i]]` (rows padded to `width`).
#[derive(Debug, Clone, PartialEq)]
pub struct Taps {
    pub n_in: usize,
    pub start: Vec<usize>,
    pub len: Vec<usize>,
    /// Row stride of `weights`: the longest tap run.
    pub width: usize,
    pub weights: Vec<f32>,
}

impl Taps {
    pub fn n_out(&self) -> usize {
        self.start.len()
    }

    /// Weights of output `i` (exactly `len[i]` of them).
    pub fn row(&self, i: usize) -> &[f32] {
        &self.weights[i * self.width..i * self.width + self.len[i]]
    }

    /// True when every output is a copy of one input with weight 1 (then
    /// a resample is a gather).
    pub fn is_identity_gather(&self) -> bool {
        self.len.iter().all(|&l| l == 1)
    }

    /// Builds a table from a kernel `f` with half-width `support` (in
    /// input pixels at scale 1). `scale_support` stretches the kernel by the
    /// downscale ratio (resize); blur keeps it at 1.
    fn build(
        n_in: usize,
        n_out: usize,
        support: f64,
        scale_support: bool,
        f: impl Fn(f64) -> f64,
    ) -> Taps {
        let scale = n_in as f64 / n_out as f64;
        let fscale = if scale_support { scale.max(1.0) } else { 1.0 };
        let support = support * fscale;
        let mut rows: Vec<(usize, Vec<f64>)> = Vec::with_capacity(n_out);
        for i in 0..n_out {
            let center = (i as f64 + 0.5) * scale;
            // The input pixels whose centres (x + 0.5) lie within the support.
            let lo = ((center - support + 0.5).floor().max(0.0)) as usize;
            let hi = ((center + support + 0.5).floor() as usize).min(n_in);
            let lo = lo.min(n_in.saturating_sub(1));
            let mut w: Vec<f64> = (lo..hi.max(lo + 1))
                .map(|x| f((x as f64 + 0.5 - center) / fscale))
                .collect();
            let sum: f64 = w.iter().sum();
            if sum.abs() < 1e-12 {
                // A kernel that is zero on every in-range tap (a narrow
                // kernel between pixels): take the nearest pixel.
                let nearest = (center.floor() as usize).min(n_in - 1);
                rows.push((nearest, vec![1.0]));
                continue;
            }
            w.iter_mut().for_each(|v| *v /= sum);
            // Trim zero-weight taps at both ends (Lanczos roots, triangle ends).
            let first = w.iter().position(|v| *v != 0.0).unwrap_or(0);
            let last = w.iter().rposition(|v| *v != 0.0).unwrap_or(0);
            rows.push((lo + first, w[first..=last].to_vec()));
        }
        Taps::from_rows(n_in, rows)
    }

    fn from_rows(n_in: usize, rows: Vec<(usize, Vec<f64>)>) -> Taps {
        let width = rows.iter().map(|r| r.1.len()).max().unwrap_or(1);
        let mut t = Taps {
            n_in,
            start: Vec::with_capacity(rows.len()),
            len: Vec::with_capacity(rows.len()),
            width,
            weights: vec![0.0; rows.len() * width],
        };
        for (i, (s, w)) in rows.into_iter().enumerate() {
            t.start.push(s);
            t.len.push(w.len());
            for (k, v) in w.iter().enumerate() {
                t.weights[i * width + k] = *v as f32;
            }
        }
        t
    }

    /// Nearest neighbour: output `i` copies input `floor((i + 0.5) * n_in / n_out)`.
    pub fn nearest(n_in: usize, n_out: usize) -> Taps {
        // Integer arithmetic: a centre that lands exactly on a pixel edge
        // must pick the same pixel on every platform.
        let rows = (0..n_out)
            .map(|i| {
                let x = ((2 * i as u64 + 1) * n_in as u64 / (2 * n_out as u64)) as usize;
                (x.min(n_in - 1), vec![1.0])
            })
            .collect();
        Taps::from_rows(n_in, rows)
    }

    /// Bilinear (triangle kernel, support 1), stretched on downscale.
    pub fn bilinear(n_in: usize, n_out: usize) -> Taps {
        Taps::build(n_in, n_out, 1.0, true, triangle)
    }

    /// Lanczos3 (`sinc(x) sinc(x/3)`, support 3), stretched on downscale.
    pub fn lanczos3(n_in: usize, n_out: usize) -> Taps {
        Taps::build(n_in, n_out, 3.0, true, lanczos3)
    }

    /// Gaussian of standard deviation `sigma` pixels, truncated at
    /// `ceil(3 sigma)`, one output per input.
    pub fn gaussian(n: usize, sigma: f64) -> Taps {
        let radius = (3.0 * sigma).ceil().max(1.0);
        Taps::build(n, n, radius + 0.5, false, move |x| {
            if x.abs() > radius {
                0.0
            } else {
                (-x * x / (2.0 * sigma * sigma)).exp()
            }
        })
    }
}

/// The triangle ("tent") kernel.
pub fn triangle(x: f64) -> f64 {
    (1.0 - x.abs()).max(0.0)
}

/// `sin(pi x) / (pi x)`, 1 at 0.
pub fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let px = std::f64::consts::PI * x;
        px.sin() / px
    }
}

/// The Lanczos kernel with three lobes.
pub fn lanczos3(x: f64) -> f64 {
    if x.abs() >= 3.0 {
        0.0
    } else {
        sinc(x) * sinc(x / 3.0)
    }
}
