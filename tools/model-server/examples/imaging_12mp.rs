//! Peak memory and time of the consumer's image work on a 12-megapixel phone photo.
//!
//! `cargo run --release -p atelier-model-server --example imaging_12mp -- prepare DIR` writes a
//! 4032×3024 JPEG and a full-size brushed mask (one grey channel, as the web app exports it); `… -- measure DIR` then runs what the consumer
//! does with them (limited decode, mask, downscale for the model, the edit call's and the
//! vision calls' PNGs, the stand-in's restyle as the model's answer at 1536 px, composite back
//! at full size with its leakage, PNG master and JPEG rendition encode, list thumbnail, the
//! review's picture of the result) and prints the process's peak resident memory (VmHWM)
//! after each step and `path N ms`, the sum of the consumer's own steps (all but the stand-in's
//! restyle, which is the model's work). Two runs, so generating the inputs does not count.
//!
//! `… -- warm DIR` runs `measure` three times in one process (a warm consumer).
//!
//! `… -- floor DIR` times the unavoidable part alone, in its own process: decode the photo with
//! `zune-jpeg` straight to RGBA, encode `measure`'s composite (left in DIR) as PNG with `png`'s
//! fdeflate-based `Compression::Fast` and as a JPEG at the same quality with `jpeg-encoder`,
//! and prints `floor N ms`. `cargo xtask bench` runs both, interleaved, and prints the path's ratio to
//! the floor (docs/benchmarks.md).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use atelier_model_server::restyle::restyle;
use atelier_shared::domain::StyleId;
use atelier_shared::domain::imaging::{
    DecodeLimits, JPEG_QUALITY, Mask, VISION_MAX_SIDE, composite_into, downscale, encode_jpeg,
    encode_png, encode_png_for_model, encode_thumbnail, fit_within, mask_from_png,
};
use image::{GrayImage, ImageEncoder, Luma, Rgb, RgbImage, RgbaImage};

const W: u32 = 4032;
const H: u32 = 3024;
/// `measure`'s composite as raw RGBA, so `floor` encodes the very image the path delivers.
const RESULT: &str = "result_12mp.rgba";

fn peak_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// Prints a step's time and the peak so far; returns its time.
fn step(name: &str, started: Instant) -> Duration {
    let took = started.elapsed();
    println!(
        "{name:<28} {:>6} ms   peak {:>5} MiB",
        took.as_millis(),
        peak_mib()
    );
    took
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mode, dir) = match args.as_slice() {
        [_, mode, dir] => (mode.as_str(), PathBuf::from(dir)),
        _ => {
            eprintln!("usage: imaging_12mp prepare|measure|warm|floor DIR");
            std::process::exit(2);
        }
    };
    let photo = dir.join("photo_12mp.jpg");
    let mask_path = dir.join("mask_12mp.png");
    match mode {
        "prepare" => prepare(&dir, &photo, &mask_path),
        "floor" => floor(&photo, &dir.join(RESULT)),
        // A warm consumer: the same job three times in one process.
        "warm" => (0..3).for_each(|_| measure(&photo, &mask_path, &dir.join(RESULT))),
        _ => measure(&photo, &mask_path, &dir.join(RESULT)),
    }
}

/// Writes a noisy 12 MP JPEG and a round mask.
fn prepare(dir: &std::path::Path, photo: &std::path::Path, mask_path: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let img = RgbImage::from_fn(W, H, |x, y| {
        let n = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 27;
        Rgb([
            (x / 16) as u8 ^ n as u8,
            (y / 12) as u8,
            ((x + y) / 28) as u8,
        ])
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .write_image(img.as_raw(), W, H, image::ExtendedColorType::Rgb8)
        .unwrap();
    std::fs::write(photo, jpeg).unwrap();
    // As the web app's brush exports it (`web/src/Brush.tsx`): one grey channel, white where
    // painted, rows unfiltered, zlib at its default level.
    let canvas = GrayImage::from_fn(W, H, |x, y| {
        let (dx, dy) = (i64::from(x) - 2000, i64::from(y) - 1500);
        Luma([if dx * dx + dy * dy < 900 * 900 {
            255
        } else {
            0
        }])
    });
    let mut mask = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut mask,
        image::codecs::png::CompressionType::Default,
        image::codecs::png::FilterType::NoFilter,
    )
    .write_image(canvas.as_raw(), W, H, image::ExtendedColorType::L8)
    .unwrap();
    std::fs::write(mask_path, mask).unwrap();
    println!("wrote {} and {}", photo.display(), mask_path.display());
}

/// Times each step of the 12 MP path and prints the peak memory after each.
fn measure(photo: &std::path::Path, mask_path: &std::path::Path, result: &std::path::Path) {
    println!("{:<28} {:>6}      peak {:>5} MiB", "start", "", peak_mib());
    let bytes = std::fs::read(photo).unwrap();
    let mask_bytes = std::fs::read(mask_path).unwrap();
    println!(
        "inputs: photo {} KiB, mask {} KiB",
        bytes.len() / 1024,
        mask_bytes.len() / 1024
    );

    let mut path = Duration::ZERO;
    let t = Instant::now();
    let original = DecodeLimits::PHOTO.decode(&bytes).unwrap().into_rgba8();
    drop(bytes);
    path += step("decode 12 MP JPEG -> RGBA", t);

    let t = Instant::now();
    let mask = mask_from_png(&mask_bytes, original.dimensions()).unwrap();
    drop(mask_bytes);
    path += step("read mask", t);

    let (small, took) = model_inputs(&original, &mask);
    path += took;

    let t = Instant::now();
    let small_mask = mask.resized(small.width(), small.height());
    let mut edited = small;
    restyle(&mut edited, &small_mask, StyleId::Embroidery);
    step("stand-in restyle (1536 px)", t);

    let t = Instant::now();
    let (delivered, l) = composite_into(original, &edited, &mask, 4).unwrap();
    drop(edited);
    path += step("composite + leakage at 12 MP", t);
    assert_eq!(l.changed_outside, 0);

    // Left for `floor` before the outputs take the image (untimed).
    std::fs::write(result, delivered.as_raw()).unwrap();
    path += outputs(delivered);
    println!("leakage {l:?}");
    println!("path {} ms", path.as_millis());
}

/// What the consumer makes of the inputs before the model's calls: the photo once at the
/// edit call's size, the edit call's photo and mask PNGs, and the vision calls' pictures of
/// the photo and the mask (both from the edit call's size).
fn model_inputs(original: &RgbaImage, mask: &Mask) -> (RgbaImage, Duration) {
    let mut took = Duration::ZERO;
    let t = Instant::now();
    let small = downscale(original, 1536);
    took += step("downscale for model", t);
    let t = Instant::now();
    let photo_png = encode_png_for_model(&small).unwrap();
    let small_mask = mask.resized(small.width(), small.height());
    let mask_png = small_mask.to_alpha_png().unwrap();
    took += step("edit call's photo + mask PNGs", t);
    let t = Instant::now();
    let vision_photo = encode_png_for_model(&downscale(&small, VISION_MAX_SIDE)).unwrap();
    let (vw, vh) = fit_within(mask.dimensions(), VISION_MAX_SIDE);
    let vision_mask = encode_png_for_model(&small_mask.resized(vw, vh).to_visual()).unwrap();
    took += step("vision photo + mask PNGs", t);
    drop((photo_png, mask_png, vision_photo, vision_mask));
    (small, took)
}

/// The delivered files (PNG master, JPEG rendition, list thumbnail) and the review's picture
/// of the result, in the consumer's order: the result shrunk once to the vision size, the
/// thumbnail made from that copy, the result dropped once encoded (`Run::store_image`).
fn outputs(delivered: RgbaImage) -> Duration {
    let mut took = Duration::ZERO;
    let t = Instant::now();
    let seen = downscale(&delivered, VISION_MAX_SIDE);
    took += step("result shrunk to the vision size", t);
    let t = Instant::now();
    let png = encode_png(&delivered).unwrap();
    took += step("encode result PNG", t);
    let t = Instant::now();
    let jpeg = encode_jpeg(&delivered, JPEG_QUALITY).unwrap();
    took += step("encode result JPEG", t);
    // As the consumer does: the 12 MP result is dropped once encoded, before the signing.
    drop(delivered);
    let t = Instant::now();
    let thumb = encode_thumbnail(&seen).unwrap();
    took += step("encode list thumbnail", t);
    let t = Instant::now();
    let review = encode_png_for_model(&seen).unwrap();
    took += step("review's PNG of the result", t);
    credentials(&png, &jpeg);
    println!(
        "sizes: png {} jpeg {} thumbnail {} review {}",
        png.len(),
        jpeg.len(),
        thumb.len(),
        review.len()
    );
    took
}

/// The content credentials (issue 46), timed apart from the path: the photo's hash (the
/// consumer hashes the 12 MP upload's bytes; here the PNG's, larger), the check for a manifest
/// in the provider's output, and the manifest signed into the PNG master and the JPEG.
/// Prints `credentials N ms`. The key is made before the clock starts (a cold start's work).
fn credentials(png: &[u8], jpeg: &[u8]) {
    use atelier_shared::adapters::credentials::{Claim, Parent, Signing, test_ca};
    use sha2::Digest;
    let ca = test_ca::generate("Atelier (bench)").unwrap();
    let signing = Signing::from_json(&ca.secret_json).unwrap();
    let output = encode_png(&RgbaImage::new(64, 64)).unwrap();
    let t = Instant::now();
    let sha256: [u8; 32] = sha2::Sha256::digest(png).into();
    let facts = atelier_shared::domain::ContentCredentials {
        model: "gpt-image-2.5-sunburst".into(),
        provider: "openai".into(),
        medium: "origami".into(),
        target: atelier_shared::domain::Target::Brush,
        signed_at: "2026-12-07T00:00:00Z".into(),
        issuer: signing.issuer().into(),
        provider_manifest: false,
        repair: false,
    };
    let claim = Claim {
        credentials: &facts,
        region: None,
        parent: Parent::Photo { sha256 },
        provider_output: &output,
    };
    let signed = signing.sign_both(&claim, png, jpeg).unwrap();
    let (signed_png, signed_jpeg) = (signed.png, signed.jpeg);
    let took = step("content credentials (hash, sign PNG + JPEG)", t);
    let (png_added, jpeg_added) = (signed_png.len() - png.len(), signed_jpeg.len() - jpeg.len());
    println!(
        "credentials {} ms (png +{png_added} B, jpeg +{jpeg_added} B)",
        took.as_millis()
    );
}

/// The codec floor: the photo decoded and the two outputs encoded by the fastest maintained
/// codecs, nothing else (no limits, mask, composite or checks).
fn floor(photo: &std::path::Path, result: &std::path::Path) {
    let bytes = std::fs::read(photo).unwrap();
    let t = Instant::now();
    let options = zune_jpeg::zune_core::options::DecoderOptions::default()
        .jpeg_set_out_colorspace(zune_jpeg::zune_core::colorspace::ColorSpace::RGBA);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
        zune_jpeg::zune_core::bytestream::ZCursor::new(&bytes[..]),
        options,
    );
    let rgba = decoder.decode().unwrap();
    let (w, h) = decoder.dimensions().unwrap();
    let decode = t.elapsed();
    // The outputs are the delivered composite when `measure` left it (else the photo itself).
    let (rgba, encoded) = match std::fs::read(result) {
        Ok(raw) if raw.len() == rgba.len() => (raw, "the path's composite"),
        _ => (rgba, "the decoded photo"),
    };

    let t = Instant::now();
    let mut png_out = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_out, w as u32, h as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(&rgba).unwrap();
    writer.finish().unwrap();
    let png_time = t.elapsed();

    let t = Instant::now();
    let mut jpeg_out = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg_out, JPEG_QUALITY)
        .encode(&rgba, w as u16, h as u16, jpeg_encoder::ColorType::Rgba)
        .unwrap();
    let jpeg_time = t.elapsed();
    println!(
        "floor {} ms (zune-jpeg decode {} ms, png Fast {} ms, jpeg-encoder {} ms, encoding {encoded}: png {} jpeg {} bytes)",
        (decode + png_time + jpeg_time).as_millis(),
        decode.as_millis(),
        png_time.as_millis(),
        jpeg_time.as_millis(),
        png_out.len(),
        jpeg_out.len()
    );
}
