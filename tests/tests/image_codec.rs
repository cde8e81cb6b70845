//! Decode/encode of JPEG, PNG and WebP: the sample photos, round trips,
//! corrupt and truncated files, and decompression-bomb headers.

use fusegraph_core::image::{self, DecodeLimits, Filter, Format, TransformOptions};
use fusegraph_core::{Device, Error, Tensor};

fn read(name: &str) -> Vec<u8> {
    let path = format!("{}/../www/images/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn decode(bytes: &[u8]) -> Result<Tensor, Error> {
    image::decode(bytes, &DecodeLimits::default(), &Device::Cpu)
}

fn pixels(t: &Tensor) -> Vec<u8> {
    t.contiguous().unwrap().to_vec().unwrap()
}

fn psnr(a: &[u8], b: &[u8]) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
        .sum::<f64>()
        / a.len() as f64;
    10.0 * (255.0f64 * 255.0 / mse.max(1e-12)).log10()
}

#[test]
fn photos_probe_and_decode_to_their_sizes() {
    for (name, w, h, f) in [
        ("astronaut.jpg", 512, 512, Format::Jpeg),
        ("astronaut-1mp.jpg", 1024, 1024, Format::Jpeg),
        ("coffee.jpg", 600, 400, Format::Jpeg),
        ("rocket.jpg", 640, 427, Format::Jpeg),
        ("retina.jpg", 1411, 1411, Format::Jpeg),
        ("chelsea.png", 451, 300, Format::Png),
        ("chelsea.webp", 451, 300, Format::WebP),
    ] {
        let bytes = read(name);
        let info = image::probe(&bytes).unwrap();
        assert_eq!((info.width, info.height, info.format), (w, h, f), "{name}");
        let t = decode(&bytes).unwrap();
        assert_eq!(t.shape(), &[h as usize, w as usize, 3], "{name}");
    }
}

#[test]
fn lossy_webp_decodes_close_to_its_png_source() {
    let png = pixels(&decode(&read("chelsea.png")).unwrap());
    let webp = pixels(&decode(&read("chelsea.webp")).unwrap());
    let p = psnr(&png, &webp);
    assert!(p > 30.0, "webp vs png PSNR {p:.1} dB");
}

#[test]
fn png_and_webp_round_trip_exactly_jpeg_closely() {
    let t = decode(&read("coffee.jpg")).unwrap();
    let src = pixels(&t);
    for f in [Format::Png, Format::WebP] {
        let bytes = image::encode(&t, f, 80).unwrap();
        assert_eq!(image::probe(&bytes).unwrap().format, f);
        assert_eq!(pixels(&decode(&bytes).unwrap()), src, "{f:?} is lossless");
    }
    let q90 = pixels(&decode(&image::encode(&t, Format::Jpeg, 90).unwrap()).unwrap());
    let q30 = image::encode(&t, Format::Jpeg, 30).unwrap();
    assert!(
        psnr(&src, &q90) > 33.0,
        "jpeg q90 PSNR {}",
        psnr(&src, &q90)
    );
    assert!(q30.len() < image::encode(&t, Format::Jpeg, 90).unwrap().len());
    // q80 takes the 4:2:0 chroma path; it still reads back close to the
    // source, and smaller than q90's 4:4:4.
    let q80 = image::encode(&t, Format::Jpeg, 80).unwrap();
    let p80 = psnr(&src, &pixels(&decode(&q80).unwrap()));
    assert!(p80 > 30.0, "jpeg q80 (4:2:0) PSNR {p80}");
    assert!(q80.len() < image::encode(&t, Format::Jpeg, 90).unwrap().len());
    // RGBA and grey encode too (JPEG drops alpha).
    let rgba = Tensor::from_vec(vec![200u8; 4 * 6 * 4], vec![4, 6, 4], &Device::Cpu).unwrap();
    assert_eq!(
        pixels(&decode(&image::encode(&rgba, Format::Png, 80).unwrap()).unwrap()),
        vec![200u8; 96]
    );
    assert_eq!(
        decode(&image::encode(&rgba, Format::Jpeg, 80).unwrap())
            .unwrap()
            .shape(),
        &[4, 6, 3]
    );
    // Grey with alpha is written as grey.
    let ga: Vec<u8> = (0..8 * 16).flat_map(|i| [(i * 2) as u8, 255]).collect();
    let ga = Tensor::from_vec(ga, vec![8, 16, 2], &Device::Cpu).unwrap();
    let back = decode(&image::encode(&ga, Format::Jpeg, 95).unwrap()).unwrap();
    assert_eq!(back.shape(), &[8, 16, 1]);
    let want: Vec<u8> = (0..8 * 16).map(|i| (i * 2) as u8).collect();
    assert!(psnr(&pixels(&back), &want) > 35.0, "grey+alpha JPEG");
    let grey = image::grayscale(&t).unwrap();
    assert_eq!(
        decode(&image::encode(&grey, Format::Png, 80).unwrap())
            .unwrap()
            .shape(),
        &[400, 600, 1]
    );
    // WebP has no grey mode: grey comes back as RGB with three equal
    // channels, pixel for pixel (found by the image fuzz target).
    let back = decode(&image::encode(&grey, Format::WebP, 80).unwrap()).unwrap();
    assert_eq!(back.shape(), &[400, 600, 3]);
    let want: Vec<u8> = pixels(&grey).iter().flat_map(|&g| [g, g, g]).collect();
    assert!(pixels(&back) == want, "grey WebP round trip");
    assert!(image::encode(&t, Format::Jpeg, 0).is_err());
}

fn is_decode_error(r: Result<Tensor, Error>) -> bool {
    matches!(r, Err(Error::ImageDecode { .. }))
}

#[test]
fn corrupt_and_truncated_files_give_decode_errors() {
    assert!(is_decode_error(decode(b"")));
    assert!(is_decode_error(decode(
        b"hello, this is not an image at all"
    )));
    for name in ["coffee.jpg", "chelsea.png", "chelsea.webp"] {
        let bytes = read(name);
        for cut in [20, bytes.len() / 3, bytes.len() - 10] {
            let r = decode(&bytes[..cut]);
            assert!(is_decode_error(r.clone()), "{name} cut at {cut}: {r:?}");
        }
    }
    // A GIF is recognised but not read.
    assert!(is_decode_error(decode(
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
    )));
    // Garbage after a valid JPEG header.
    let mut bad = read("coffee.jpg");
    let n = bad.len();
    for b in &mut bad[n / 2..n - 2] {
        *b = 0xFF;
    }
    assert!(
        is_decode_error(decode(&bad)) || decode(&bad).is_ok(),
        "never a panic"
    );
}

fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// A PNG whose header claims `w`x`h` followed by a tiny (wrong) IDAT.
fn png_header(w: u32, h: u32) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        out.extend((data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend(data);
        out.extend(&body);
        out.extend(crc32(&body).to_be_bytes());
    };
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]); // 8-bit RGB
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &[0x78, 0x9c, 0x63, 0, 0, 0, 1, 0, 1]);
    chunk(b"IEND", &[]);
    out
}

#[test]
fn bomb_headers_are_refused_before_decoding() {
    let info = image::probe(&png_header(60_000, 60_000)).unwrap();
    assert_eq!((info.width, info.height), (60_000, 60_000));
    for (w, h) in [(60_000, 60_000), (9000, 10), (5000, 5001)] {
        match decode(&png_header(w, h)) {
            Err(Error::ImageTooLarge { width, height, .. }) => {
                assert_eq!((width, height), (w as u64, h as u64))
            }
            other => panic!("{w}x{h}: expected ImageTooLarge, got {other:?}"),
        }
    }
    // Tighter caller limits apply to real files too.
    let tight = DecodeLimits {
        max_pixels: 100_000,
        max_side: 8192,
    };
    let r = image::decode(&read("coffee.jpg"), &tight, &Device::Cpu);
    assert!(matches!(r, Err(Error::ImageTooLarge { .. })), "{r:?}");
    // Within limits the lying header is a decode error, not a crash.
    assert!(is_decode_error(decode(&png_header(300, 200))));
}

#[test]
fn transform_resizes_sharpens_and_encodes() {
    let o = TransformOptions {
        width: Some(400),
        sharpen: 0.5,
        format: Some(Format::Jpeg),
        ..Default::default()
    };
    let r = image::transform(&read("astronaut-1mp.jpg"), &o, &|| 0.0).unwrap();
    assert_eq!((r.width, r.height, r.format), (400, 400, Format::Jpeg));
    let back = decode(&r.bytes).unwrap();
    assert_eq!(back.shape(), &[400, 400, 3]);
    // Same pipeline by the separate ops, encoded losslessly, is close to it.
    let src = decode(&read("astronaut-1mp.jpg")).unwrap();
    let want = image::sharpen(
        &image::resize(&src, 400, 400, Filter::Lanczos3).unwrap(),
        0.5,
        1.0,
    )
    .unwrap();
    let p = psnr(&pixels(&want), &pixels(&back));
    assert!(p > 30.0, "transform vs ops PSNR {p:.1} dB");
    let bad = TransformOptions {
        width: Some(0),
        ..Default::default()
    };
    assert!(image::transform(&read("coffee.jpg"), &bad, &|| 0.0).is_err());
}

#[test]
fn shrink_on_load_decodes_at_a_dct_scale_close_to_a_full_decode() {
    use fusegraph_core::image::jpeg;
    let decode_jpeg_at_least = |bytes: &[u8], w, h, limits: &DecodeLimits, dev: &Device| {
        jpeg::decode(bytes, Some((w, h)), limits, dev)
    };
    let bytes = read("astronaut-1mp.jpg");
    let small =
        decode_jpeg_at_least(&bytes, 400, 400, &DecodeLimits::default(), &Device::Cpu).unwrap();
    assert_eq!(
        small.shape(),
        &[512, 512, 3],
        "1/2 scale is the smallest >= 400"
    );
    let tiny =
        decode_jpeg_at_least(&bytes, 100, 100, &DecodeLimits::default(), &Device::Cpu).unwrap();
    assert_eq!(tiny.shape(), &[128, 128, 3], "1/8 scale");
    let full = decode(&bytes).unwrap();
    let want = image::resize(&full, 512, 512, Filter::Lanczos3).unwrap();
    let p = psnr(&pixels(&want), &pixels(&small));
    assert!(
        p > 30.0,
        "half-scale decode vs full decode + resize: {p:.1} dB"
    );
    // Truncated files fail here too.
    assert!(decode_jpeg_at_least(
        &bytes[..bytes.len() / 2],
        400,
        400,
        &DecodeLimits::default(),
        &Device::Cpu
    )
    .is_err());
    // The transform with and without it agree closely.
    let o = TransformOptions {
        width: Some(400),
        format: Some(Format::Png),
        ..Default::default()
    };
    let with = image::transform(&bytes, &o, &|| 0.0).unwrap();
    let without = image::transform(
        &bytes,
        &TransformOptions {
            shrink_on_load: false,
            ..o
        },
        &|| 0.0,
    )
    .unwrap();
    let p = psnr(
        &pixels(&decode(&with.bytes).unwrap()),
        &pixels(&decode(&without.bytes).unwrap()),
    );
    assert!(
        p > 35.0,
        "transform with vs without shrink-on-load: {p:.1} dB"
    );
}

#[test]
fn cmyk_and_grey_jpegs_decode_to_rgb_and_grey() {
    // 16x16 blocks of white, cyan, magenta-plus-yellow (red) and black ink.
    let inks: [[u8; 4]; 4] = [
        [0, 0, 0, 0],
        [255, 0, 0, 0],
        [0, 255, 255, 0],
        [0, 0, 0, 255],
    ];
    let want: [[u8; 3]; 4] = [[255, 255, 255], [0, 255, 255], [255, 0, 0], [0, 0, 0]];
    let (w, h) = (64usize, 16usize);
    let block = |x: usize| x / 16;
    let cmyk: Vec<u8> = (0..h * w).flat_map(|i| inks[block(i % w)]).collect();
    let mut bytes = Vec::new();
    let enc = jpeg_encoder::Encoder::new(&mut bytes, 100);
    enc.encode(&cmyk, w as u16, h as u16, jpeg_encoder::ColorType::Cmyk)
        .unwrap();
    let rgb = decode(&bytes).unwrap();
    assert_eq!(rgb.shape(), &[h, w, 3]);
    let got = pixels(&rgb);
    // Block centres (JPEG rings a little at the block edges).
    for (b, want) in want.iter().enumerate() {
        let i = 8 * w + b * 16 + 8;
        for ch in 0..3 {
            let g = got[3 * i + ch] as i32;
            assert!(
                (g - want[ch] as i32).abs() <= 6,
                "CMYK block {b} channel {ch}: {g}, want {}",
                want[ch]
            );
        }
    }
    // Grey stays one channel, at full and at half scale.
    let grey: Vec<u8> = (0..64 * 64).map(|i| (i % 64 * 4) as u8).collect();
    let mut bytes = Vec::new();
    jpeg_encoder::Encoder::new(&mut bytes, 95)
        .encode(&grey, 64, 64, jpeg_encoder::ColorType::Luma)
        .unwrap();
    let full = decode(&bytes).unwrap();
    assert_eq!(full.shape(), &[64, 64, 1]);
    assert!(psnr(&pixels(&full), &grey) > 35.0);
    let half = fusegraph_core::image::jpeg::decode(
        &bytes,
        Some((32, 32)),
        &DecodeLimits::default(),
        &Device::Cpu,
    )
    .unwrap();
    assert_eq!(half.shape(), &[32, 32, 1]);
}
