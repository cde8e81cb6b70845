//! Image ops against f64 references written here from the formulas (they
//! do not call the library's tap tables or kernels). Results must match
//! within ±1 on u8, on the sample photos and on random images of odd sizes.

use fusegraph_core::image::{
    self, resample::resample_graph, taps::Taps, Adjust, DecodeLimits, Filter, FlipAxis,
};
use fusegraph_core::{DType, Device, Result, Tensor};
use fusegraph_tests::kernels;

/// An image as f64 values, `[h][w][c]` flattened.
#[derive(Clone, Debug)]
struct Img {
    h: usize,
    w: usize,
    c: usize,
    v: Vec<f64>,
}

impl Img {
    fn of(t: &Tensor) -> Img {
        let s = t.shape();
        let v: Vec<u8> = t.contiguous().unwrap().to_vec().unwrap();
        Img {
            h: s[0],
            w: s[1],
            c: s[2],
            v: v.into_iter().map(f64::from).collect(),
        }
    }
    fn at(&self, y: usize, x: usize, c: usize) -> f64 {
        self.v[(y * self.w + x) * self.c + c]
    }
    fn tensor(&self) -> Tensor {
        let v: Vec<u8> = self.v.iter().map(|&x| x as u8).collect();
        Tensor::from_vec(v, vec![self.h, self.w, self.c], &Device::Cpu).unwrap()
    }
}

fn random_image(h: usize, w: usize, c: usize, seed: u64) -> Img {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let v = (0..h * w * c)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 256) as f64
        })
        .collect();
    Img { h, w, c, v }
}

fn photo(name: &str) -> Tensor {
    let path = format!("{}/../www/images/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    image::decode(&bytes, &DecodeLimits::default(), &Device::Cpu).unwrap()
}

// ---- reference filters, from the definitions ----

#[derive(Clone, Copy)]
enum RefKernel {
    Triangle,
    Lanczos3,
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x)
    }
}

/// Weights of every input sample for every output sample: kernel
/// stretched by the downscale ratio, samples outside dropped, renormalised.
fn ref_resize_weights(n_in: usize, n_out: usize, k: RefKernel) -> Vec<Vec<(usize, f64)>> {
    let scale = n_in as f64 / n_out as f64;
    let stretch = scale.max(1.0);
    (0..n_out)
        .map(|i| {
            let center = (i as f64 + 0.5) * scale;
            let mut row: Vec<(usize, f64)> = (0..n_in)
                .map(|x| {
                    let d = (x as f64 + 0.5 - center) / stretch;
                    let w = match k {
                        RefKernel::Triangle => (1.0 - d.abs()).max(0.0),
                        RefKernel::Lanczos3 if d.abs() < 3.0 => sinc(d) * sinc(d / 3.0),
                        RefKernel::Lanczos3 => 0.0,
                    };
                    (x, w)
                })
                .filter(|p| p.1 != 0.0)
                .collect();
            let sum: f64 = row.iter().map(|p| p.1).sum();
            row.iter_mut().for_each(|p| p.1 /= sum);
            row
        })
        .collect()
}

fn ref_nearest(n_in: usize, n_out: usize) -> Vec<Vec<(usize, f64)>> {
    (0..n_out)
        .map(|i| {
            let x = ((i as f64 + 0.5) * n_in as f64 / n_out as f64).floor() as usize;
            vec![(x.min(n_in - 1), 1.0)]
        })
        .collect()
}

fn ref_gauss(n: usize, sigma: f64) -> Vec<Vec<(usize, f64)>> {
    let r = (3.0 * sigma).ceil().max(1.0) as i64;
    (0..n as i64)
        .map(|i| {
            let mut row: Vec<(usize, f64)> = (i - r..=i + r)
                .filter(|&x| x >= 0 && x < n as i64)
                .map(|x| {
                    (
                        x as usize,
                        (-((x - i) as f64).powi(2) / (2.0 * sigma * sigma)).exp(),
                    )
                })
                .collect();
            let s: f64 = row.iter().map(|p| p.1).sum();
            row.iter_mut().for_each(|p| p.1 /= s);
            row
        })
        .collect()
}

/// Separable 2-D filter in f64, unrounded.
fn ref_apply(img: &Img, rows: &[Vec<(usize, f64)>], cols: &[Vec<(usize, f64)>]) -> Img {
    let (ho, wo, c) = (rows.len(), cols.len(), img.c);
    let mut v = vec![0.0; ho * wo * c];
    for (y, ry) in rows.iter().enumerate() {
        for (x, cx) in cols.iter().enumerate() {
            for ch in 0..c {
                let mut acc = 0.0;
                for &(sy, wy) in ry {
                    for &(sx, wx) in cx {
                        acc += wy * wx * img.at(sy, sx, ch);
                    }
                }
                v[(y * wo + x) * c + ch] = acc;
            }
        }
    }
    Img { h: ho, w: wo, c, v }
}

fn round_u8(v: f64) -> f64 {
    (v.clamp(0.0, 255.0) + 0.5).floor().min(255.0)
}

fn assert_close(what: &str, got: &Tensor, want: &Img, tol: f64) {
    let g = Img::of(got);
    assert_eq!((g.h, g.w, g.c), (want.h, want.w, want.c), "{what}: shape");
    let mut worst = (0.0, 0);
    for (i, (a, b)) in g.v.iter().zip(&want.v).enumerate() {
        let d = (a - round_u8(*b)).abs();
        if d > worst.0 {
            worst = (d, i);
        }
    }
    assert!(
        worst.0 <= tol,
        "{what}: |got - want| = {} at flat index {} (got {}, want {:.3})",
        worst.0,
        worst.1,
        g.v[worst.1],
        want.v[worst.1]
    );
}

fn ref_resize(img: &Img, w: usize, h: usize, f: Filter) -> Img {
    let (rows, cols) = match f {
        Filter::Nearest => (ref_nearest(img.h, h), ref_nearest(img.w, w)),
        Filter::Bilinear => (
            ref_resize_weights(img.h, h, RefKernel::Triangle),
            ref_resize_weights(img.w, w, RefKernel::Triangle),
        ),
        Filter::Lanczos3 => (
            ref_resize_weights(img.h, h, RefKernel::Lanczos3),
            ref_resize_weights(img.w, w, RefKernel::Lanczos3),
        ),
    };
    ref_apply(img, &rows, &cols)
}

// ---- resize ----

#[test]
fn resize_random_sizes_and_ratios_match_reference() -> Result<()> {
    // (h, w, c, out_h, out_w): odd sizes, 1xN, downscale by 2.5 and 7, upscale.
    let cases = [
        (37, 53, 3, 15, 21), // ~2.5x down
        (70, 91, 3, 10, 13), // 7x down
        (1, 64, 3, 1, 9),    // a single row
        (64, 1, 4, 9, 1),    // a single column, RGBA
        (13, 17, 1, 40, 51), // ~3x up, grey
        (20, 30, 3, 33, 11), // up one axis, down the other
        (9, 9, 4, 9, 9),     // same size
        (5, 7, 3, 2, 3),
    ];
    for (seed, &(h, w, c, oh, ow)) in cases.iter().enumerate() {
        let img = random_image(h, w, c, seed as u64);
        let t = img.tensor();
        for f in [Filter::Nearest, Filter::Bilinear, Filter::Lanczos3] {
            let got = image::resize(&t, ow, oh, f)?;
            let tol = if f == Filter::Nearest { 0.0 } else { 1.0 };
            assert_close(
                &format!("resize {h}x{w}x{c} -> {oh}x{ow} {f:?}"),
                &got,
                &ref_resize(&img, ow, oh, f),
                tol,
            );
        }
    }
    Ok(())
}

#[test]
fn resize_photos_match_reference() -> Result<()> {
    for (name, ow) in [
        ("coffee.jpg", 240usize),
        ("chelsea.png", 451 * 3 / 2),
        ("astronaut.jpg", 73),
    ] {
        let t = photo(name);
        let img = Img::of(&t);
        let oh = (img.h * ow + img.w / 2) / img.w;
        let got = image::resize(&t, ow, oh, Filter::Lanczos3)?;
        assert_close(
            &format!("{name} lanczos3 to {ow}"),
            &got,
            &ref_resize(&img, ow, oh, Filter::Lanczos3),
            1.0,
        );
    }
    Ok(())
}

#[test]
fn device_generic_graph_path_matches_reference() -> Result<()> {
    // The gather + weighted-sum form the GPU backends run, computed here on the CPU.
    let img = random_image(23, 41, 3, 99);
    let (oh, ow) = (9, 16);
    for f in [Filter::Bilinear, Filter::Lanczos3] {
        let y = resample_graph(&img.tensor(), &f.taps(23, oh), &f.taps(41, ow))?;
        let got = image::to_u8(&y)?;
        assert_close(
            &format!("graph resample {f:?}"),
            &got,
            &ref_resize(&img, ow, oh, f),
            1.0,
        );
    }
    let g = resample_graph(
        &img.tensor(),
        &Taps::gaussian(23, 1.5),
        &Taps::gaussian(41, 1.5),
    )?;
    assert_close(
        "graph blur",
        &image::to_u8(&g)?,
        &ref_apply(&img, &ref_gauss(23, 1.5), &ref_gauss(41, 1.5)),
        1.0,
    );
    Ok(())
}

#[test]
fn resize_rejects_zero_and_non_images() {
    let t = random_image(4, 4, 3, 1).tensor();
    assert!(image::resize(&t, 0, 4, Filter::Bilinear).is_err());
    let flat = Tensor::zeros(vec![4, 4], DType::U8, &Device::Cpu).unwrap();
    assert!(image::resize(&flat, 2, 2, Filter::Bilinear).is_err());
    let f = Tensor::zeros(vec![4, 4, 3], DType::F32, &Device::Cpu).unwrap();
    assert!(image::resize(&f, 2, 2, Filter::Bilinear).is_err());
}

// ---- blur and sharpen ----

#[test]
fn blur_matches_reference() -> Result<()> {
    for (seed, &(h, w, c, sigma)) in [
        (31usize, 45usize, 3usize, 1.0f64),
        (1, 50, 3, 2.0),
        (17, 3, 4, 0.7),
        (40, 40, 1, 4.5),
    ]
    .iter()
    .enumerate()
    {
        let img = random_image(h, w, c, 10 + seed as u64);
        let got = image::blur(&img.tensor(), sigma)?;
        assert_close(
            &format!("blur {h}x{w}x{c} sigma {sigma}"),
            &got,
            &ref_apply(&img, &ref_gauss(h, sigma), &ref_gauss(w, sigma)),
            1.0,
        );
    }
    let t = photo("rocket.jpg");
    let img = Img::of(&t);
    assert_close(
        "rocket blur 2",
        &image::blur(&t, 2.0)?,
        &ref_apply(&img, &ref_gauss(img.h, 2.0), &ref_gauss(img.w, 2.0)),
        1.0,
    );
    Ok(())
}

fn ref_sharpen(img: &Img, amount: f64, sigma: f64) -> Img {
    let b = ref_apply(img, &ref_gauss(img.h, sigma), &ref_gauss(img.w, sigma));
    let v = img
        .v
        .iter()
        .zip(&b.v)
        .map(|(x, bl)| x + amount * (x - bl))
        .collect();
    Img { v, ..img.clone() }
}

#[test]
fn sharpen_matches_reference_and_its_tail_is_one_kernel() -> Result<()> {
    let img = random_image(29, 34, 3, 5);
    let got = image::sharpen(&img.tensor(), 0.5, 1.0)?;
    assert_close("sharpen 0.5", &got, &ref_sharpen(&img, 0.5, 1.0), 1.0);
    // The device-generic form: after the blur, one fused kernel, and the
    // same pixels as the CPU's in-pass mask (the same f32 operations).
    let t = img.tensor();
    let blurred = image::filters::blur_f32(&t, 1.0)?;
    blurred.realize()?;
    let tail = image::filters::unsharp_tail(&t, &blurred, 0.5)?;
    assert_eq!(kernels(&tail)?, 1, "x + a*(x - blur) with clamp and cast");
    assert_eq!(tail.to_vec::<u8>()?, got.to_vec::<u8>()?);
    let t = photo("coffee.jpg");
    let p = Img::of(&t);
    assert_close(
        "coffee sharpen 1.5 sigma 2",
        &image::sharpen(&t, 1.5, 2.0)?,
        &ref_sharpen(&p, 1.5, 2.0),
        1.0,
    );
    assert!(image::sharpen(&t, f64::NAN, 1.0).is_err());
    assert!(image::blur(&t, -1.0).is_err());
    Ok(())
}

// ---- colour ----

fn ref_adjust(img: &Img, a: &Adjust) -> Img {
    let mut out = img.clone();
    let k = if img.c >= 3 { 3 } else { 1 };
    for p in 0..img.h * img.w {
        let px = &img.v[p * img.c..p * img.c + k];
        let luma = if k == 3 {
            0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2]
        } else {
            px[0]
        };
        for (ch, &v) in px.iter().enumerate() {
            let s = luma + a.saturation * (v - luma);
            let b = s * a.brightness;
            let c = (b - 128.0) * a.contrast + 128.0;
            let g = 255.0 * (c.clamp(0.0, 255.0) / 255.0).powf(1.0 / a.gamma);
            out.v[p * img.c + ch] = g;
        }
    }
    out
}

#[test]
fn colour_adjust_matches_reference_and_is_one_kernel() -> Result<()> {
    let a = Adjust {
        brightness: 1.1,
        contrast: 1.3,
        saturation: 0.6,
        gamma: 1.8,
    };
    for (name, t) in [
        ("chelsea", photo("chelsea.png")),
        ("random rgba", random_image(7, 13, 4, 3).tensor()),
        ("random grey", random_image(5, 9, 1, 4).tensor()),
    ] {
        t.realize()?;
        let got = image::adjust(&t, &a)?;
        assert_eq!(
            kernels(&got)?,
            1,
            "{name}: colour matrix, gamma, clamp and cast fuse into one kernel"
        );
        assert_close(
            &format!("adjust {name}"),
            &got,
            &ref_adjust(&Img::of(&t), &a),
            1.0,
        );
    }
    for bad in [
        Adjust {
            gamma: 0.0,
            ..Adjust::default()
        },
        Adjust {
            brightness: f64::INFINITY,
            ..Adjust::default()
        },
        Adjust {
            saturation: -1.0,
            ..Adjust::default()
        },
    ] {
        assert!(image::adjust(&photo("coffee.jpg"), &bad).is_err());
    }
    Ok(())
}

#[test]
fn grayscale_and_colour_matrix_match_reference() -> Result<()> {
    let img = random_image(11, 19, 3, 8);
    let t = img.tensor();
    let g = image::grayscale(&t)?;
    assert_eq!(kernels(&g)?, 1);
    let mut want = Img {
        c: 1,
        v: vec![],
        ..img.clone()
    };
    for p in 0..img.h * img.w {
        let px = &img.v[p * 3..p * 3 + 3];
        want.v.push(0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2]);
    }
    assert_close("grayscale", &g, &want, 1.0);

    // A sepia matrix with an offset, on RGBA: alpha passes through.
    let m = [
        0.393, 0.769, 0.189, 0.349, 0.686, 0.168, 0.272, 0.534, 0.131,
    ];
    let off = [10.0, -5.0, 3.0];
    let rgba = random_image(6, 10, 4, 9);
    let got = image::colour_matrix(&rgba.tensor(), &m, &off)?;
    assert_eq!(kernels(&got)?, 1);
    let mut want = rgba.clone();
    for p in 0..rgba.h * rgba.w {
        for o in 0..3 {
            want.v[p * 4 + o] = (0..3)
                .map(|i| m[o * 3 + i] * rgba.v[p * 4 + i])
                .sum::<f64>()
                + off[o];
        }
    }
    assert_close("colour matrix rgba", &got, &want, 1.0);
    assert!(image::colour_matrix(&t, &m[..4], &off).is_err());
    Ok(())
}

// ---- geometry ----

#[test]
fn crop_flip_rotate_are_exact() -> Result<()> {
    let img = random_image(5, 7, 3, 12);
    let t = img.tensor();
    let c = Img::of(&image::crop(&t, 2, 1, 4, 3)?);
    assert_eq!((c.h, c.w), (3, 4));
    assert_eq!(c.at(0, 0, 1), img.at(1, 2, 1));
    assert_eq!(c.at(2, 3, 2), img.at(3, 5, 2));
    assert!(image::crop(&t, 5, 0, 3, 1).is_err());
    assert!(image::crop(&t, 0, 0, 0, 1).is_err());

    let fh = Img::of(&image::flip(&t, FlipAxis::Horizontal)?);
    let fv = Img::of(&image::flip(&t, FlipAxis::Vertical)?);
    let r1 = Img::of(&image::rotate90(&t, 1)?);
    let r2 = Img::of(&image::rotate90(&t, 2)?);
    let r3 = Img::of(&image::rotate90(&t, -1)?);
    assert_eq!((r1.h, r1.w), (7, 5));
    for y in 0..5 {
        for x in 0..7 {
            for ch in 0..3 {
                let v = img.at(y, x, ch);
                assert_eq!(fh.at(y, 6 - x, ch), v);
                assert_eq!(fv.at(4 - y, x, ch), v);
                // Clockwise: the top-left pixel goes to the top-right.
                assert_eq!(r1.at(x, 4 - y, ch), v);
                assert_eq!(r2.at(4 - y, 6 - x, ch), v);
                assert_eq!(r3.at(6 - x, y, ch), v);
            }
        }
    }
    assert_eq!(Img::of(&image::rotate90(&t, 4)?).v, img.v);
    Ok(())
}
