//! Encoding what is delivered and sent: the PNG master and its size bound, the models' PNGs,
//! the JPEG rendition and the list thumbnail.

use image::{ImageEncoder, RgbaImage};

use super::error::ImagingError;
use super::resize::{fit_within, resize_exact};

/// Bytes of a PNG's fixed parts: the signature, IHDR and IEND; plus room for ancillary chunks.
const PNG_FIXED_BYTES: u64 = 8 + (12 + 13) + 12 + 64 * 1024;

/// The largest PNG [`encode_png`] writes for an RGBA image of `width`×`height`, whatever the
/// pixels: the raw scanlines (a filter byte per row and 4 bytes per pixel) in stored deflate
/// blocks (5 bytes per 65,535, plus zlib's 6), because the encoder falls back to stored
/// blocks when compressing would be larger; 12 bytes per IDAT chunk counted as if chunks were
/// 8 KiB (what other encoders write); and the fixed chunks. 4032×3024: 48.8 MB (the upload
/// limit is 20 MiB).
pub fn delivered_png_max_bytes(width: u32, height: u32) -> u64 {
    let raw = u64::from(height) * (1 + 4 * u64::from(width));
    let zlib = raw + 5 * raw.div_ceil(65_535).max(1) + 6;
    zlib + 12 * zlib.div_ceil(8 * 1024) + PNG_FIXED_BYTES
}

/// Encodes as PNG (fast compression: results are written once and read a few times).
pub fn encode_png(image: &RgbaImage) -> Result<Vec<u8>, ImagingError> {
    encode_png_with(image, image::codecs::png::FilterType::Adaptive)
}

/// Encodes as PNG for a model's request, sent once and never stored: `png`'s fastest setting
/// (the same compressor as [`encode_png`], every row filtered "Up" instead of trying five
/// filters per row), about half the time for a PNG a little larger.
pub fn encode_png_for_model(image: &RgbaImage) -> Result<Vec<u8>, ImagingError> {
    encode_png_with(image, image::codecs::png::FilterType::Up)
}

fn encode_png_with(
    image: &RgbaImage,
    filter: image::codecs::png::FilterType,
) -> Result<Vec<u8>, ImagingError> {
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut out,
        image::codecs::png::CompressionType::Fast,
        filter,
    )
    .write_image(
        image.as_raw(),
        image.width(),
        image.height(),
        image::ExtendedColorType::Rgba8,
    )
    .map_err(|source| ImagingError::Encode { source })?;
    Ok(out)
}

/// Quality (1-100) of the JPEG rendition delivered for download. At 85 a photo's pixels stay
/// within a few levels of the lossless master (the figures: docs/design.md, "Results sized for
/// phones"), well inside [`LEAKAGE_TOLERANCE`], at a tenth of the PNG's size or less.
///
/// [`LEAKAGE_TOLERANCE`]: super::leakage::LEAKAGE_TOLERANCE
pub const JPEG_QUALITY: u8 = 85;

/// Encodes the download rendition as a baseline JPEG at `quality` (JPEG has no alpha: it is
/// ignored; the PNG master keeps it). Never used for what is measured or repaired: the master is.
/// `jpeg-encoder` (SIMD, reads RGBA in place: no RGB copy of a 12 MP image) is about twice as
/// fast as `image`'s encoder at the same quality (docs/benchmarks.md).
pub fn encode_jpeg(image: &RgbaImage, quality: u8) -> Result<Vec<u8>, ImagingError> {
    let (width, height) = image.dimensions();
    let too_large = || ImagingError::TooLarge {
        width,
        height,
        max_side: u32::from(u16::MAX),
        max_pixels: u64::from(u16::MAX) * u64::from(u16::MAX),
    };
    let w = u16::try_from(width).map_err(|_| too_large())?;
    let h = u16::try_from(height).map_err(|_| too_large())?;
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, quality)
        .encode(image.as_raw(), w, h, jpeg_encoder::ColorType::Rgba)
        .map_err(|source| ImagingError::EncodeJpeg { source })?;
    Ok(out)
}

/// The long side of the small JPEG shown in lists (History): a few KB, never the photo itself.
pub const THUMBNAIL_MAX_SIDE: u32 = 256;

/// A list thumbnail: the image scaled to fit within [`THUMBNAIL_MAX_SIDE`], as a JPEG (the
/// SIMD resize of [`resize_exact`]: a 12 MP result costs a few milliseconds).
pub fn encode_thumbnail(image: &RgbaImage) -> Result<Vec<u8>, ImagingError> {
    let (w, h) = fit_within(image.dimensions(), THUMBNAIL_MAX_SIDE);
    encode_jpeg(&resize_exact(image, w, h), JPEG_QUALITY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::imaging::decode::DecodeLimits;
    use crate::domain::imaging::leakage::leakage;
    use crate::domain::imaging::mask::Mask;
    use crate::domain::imaging::test_images::png_of;
    use image::{DynamicImage, GrayImage, ImageFormat, Rgba};

    /// A photo-like 4032×3024 picture: gradients, a hard-edged disc and a fine texture (the
    /// worst case for shrinking twice).
    fn photo_like() -> RgbaImage {
        RgbaImage::from_fn(4032, 3024, |x, y| {
            let grain = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 27;
            let (dx, dy) = (i64::from(x) - 2000, i64::from(y) - 1500);
            let disc = if dx * dx + dy * dy < 900 * 900 { 90 } else { 0 };
            Rgba([
                ((x / 16) as u8).wrapping_add(grain as u8),
                ((y / 12) as u8).saturating_add(disc),
                (((x + y) / 28) as u8).wrapping_sub(grain as u8),
                255,
            ])
        })
    }

    /// The consumer makes the list thumbnail from the review's 1024 px copy instead of the
    /// 12 MP result (issue 50): its pixels stay within a few levels of the direct shrink's.
    #[test]
    fn a_thumbnail_made_from_the_reviews_picture_matches_the_direct_one_within_a_few_levels() {
        let full = photo_like();
        let (w, h) = fit_within(full.dimensions(), THUMBNAIL_MAX_SIDE);
        let direct = resize_exact(&full, w, h);
        let seen =
            crate::domain::imaging::downscale(&full, crate::domain::imaging::VISION_MAX_SIDE);
        let twice = resize_exact(&seen, w, h);
        let diffs: Vec<u8> = direct
            .as_raw()
            .iter()
            .zip(twice.as_raw())
            .map(|(a, b)| a.abs_diff(*b))
            .collect();
        let max = diffs.iter().copied().max().unwrap_or(0);
        let mean = diffs.iter().map(|&d| f64::from(d)).sum::<f64>() / diffs.len() as f64;
        println!("thumbnail twice vs direct: max {max}, mean {mean:.3}");
        // Measured: max 6, mean 0.187 with the box filter shrinking (2026-12-07; max 2, mean
        // 0.100 with the triangle before it): a 256 px picture, for a list.
        assert!(max <= 8 && mean <= 0.25, "max {max}, mean {mean:.3}");
    }

    #[test]
    fn a_thumbnail_is_a_jpeg_256_px_on_the_long_side_and_never_upscaled() {
        let big = RgbaImage::from_pixel(1024, 768, Rgba([200, 100, 50, 255]));
        let small = RgbaImage::from_pixel(100, 40, Rgba([200, 100, 50, 255]));
        for (image, want) in [(big, (256, 192)), (small, (100, 40))] {
            let bytes = encode_thumbnail(&image).unwrap_or_default();
            let read = image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg)
                .map(|i| (i.width(), i.height()))
                .ok();
            assert_eq!(read, Some(want));
        }
    }

    /// Pixels no compressor can shrink (xorshift noise in every channel, alpha included).
    fn noise(w: u32, h: u32) -> RgbaImage {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        RgbaImage::from_fn(w, h, |_, _| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            Rgba((state as u32).to_le_bytes())
        })
    }

    #[test]
    fn the_largest_png_we_write_fits_the_delivered_limit_and_decodes() {
        for (w, h) in [(1, 1), (97, 31), (640, 480), (1000, 70)] {
            let image = noise(w, h);
            let png = png_of(&image);
            let limits = DecodeLimits::for_delivered((w, h));
            assert!(
                png.len() as u64 <= limits.max_bytes,
                "{w}x{h}: {} bytes > {}",
                png.len(),
                limits.max_bytes
            );
            let decoded = limits.decode(&png).map(|d| d.to_rgba8());
            assert!(decoded.is_ok_and(|d| d == image), "{w}x{h} round-trips");
        }
    }

    #[test]
    fn an_rgba_image_encodes_as_a_jpeg_of_its_size_close_to_it() {
        let img = RgbaImage::from_fn(64, 48, |x, y| {
            Rgba([(x * 4) as u8, (y * 5) as u8, 128, 255])
        });
        let jpeg = encode_jpeg(&img, JPEG_QUALITY).unwrap_or_default();
        assert_eq!(image::guess_format(&jpeg).ok(), Some(ImageFormat::Jpeg));
        let decoded = DecodeLimits::PHOTO
            .decode(&jpeg)
            .map(DynamicImage::into_rgba8)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(decoded.dimensions(), img.dimensions());
        let changed = leakage(&img, &decoded, &Mask::from_weights(GrayImage::new(64, 48)))
            .map(|l| l.changed_outside)
            .ok();
        assert_eq!(
            changed,
            Some(0),
            "a smooth gradient stays within the leakage tolerance"
        );
    }
}
