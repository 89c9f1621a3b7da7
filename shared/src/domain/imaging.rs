//! Image work for the consumer: decoding untrusted uploads safely, reading masks, putting the
//! model's output back over the original, and measuring what changed where it must not.
//!
//! Invariants:
//! - Nothing is decoded before its byte length and its declared dimensions are checked, so a
//!   decompression bomb (a few kilobytes declaring 50000×50000) is refused without allocating
//!   its pixels; the decoder's own allocation limit is a second guard.
//! - [`composite`] returns the original's exact pixel wherever the mask's weight is 0: the soft
//!   edge is feathered only inward, so "outside the selection" means "untouched", pixel for pixel.
//! - Figures that are stored ([`Leakage`]) are integers (parts per million), never floats.
//!
//! Everything here is pure and synchronous; the consumer runs it on a blocking thread.

use std::io::Cursor;

use image::imageops::FilterType;
use image::{
    DynamicImage, GrayImage, ImageDecoder, ImageEncoder, ImageFormat, ImageReader, Luma, Rgba,
    RgbaImage,
};
use serde::{Deserialize, Serialize};

use crate::domain::edit::AssetKind;

/// Long side, in pixels, of images sent to the vision model. Vision models downscale larger
/// inputs themselves (and bill by tiles), so sending more only costs bandwidth and tokens.
pub const VISION_MAX_SIDE: u32 = 1024;

/// Per-channel difference (0..=255) at or below which a pixel counts as unchanged in
/// [`leakage`]. Lossless results differ by exactly 0; 10 absorbs JPEG/WebP re-encoding noise
/// (typically 1–6 per channel at normal quality) while any visible restyle (a tint, a texture,
/// a posterised tone) differs by far more.
pub const LEAKAGE_TOLERANCE: u8 = 10;

/// Largest inward feather accepted by [`composite`]; wider feathers are clamped.
pub const MAX_FEATHER_PX: u32 = 64;

/// Why an image was refused or could not be processed.
#[derive(Debug, thiserror::Error)]
pub enum ImagingError {
    #[error("image is {bytes} bytes; the limit is {max}")]
    TooManyBytes { bytes: u64, max: u64 },
    #[error("not an image: PNG, JPEG or WebP expected")]
    NotAnImage,
    #[error("image format {format:?} is not accepted: PNG, JPEG or WebP expected")]
    UnsupportedFormat { format: ImageFormat },
    #[error(
        "image is {width}x{height}; the limit is {max_side} pixels a side and {max_pixels} pixels"
    )]
    TooLarge {
        width: u32,
        height: u32,
        max_side: u32,
        max_pixels: u64,
    },
    #[error("image would need more memory to decode than allowed")]
    LimitExceeded {
        #[source]
        source: image::ImageError,
    },
    #[error("image header could not be read")]
    Header {
        #[source]
        source: image::ImageError,
    },
    #[error("image data is corrupt or truncated")]
    Corrupt {
        #[source]
        source: image::ImageError,
    },
    #[error("JPEG data is corrupt or truncated")]
    CorruptJpeg {
        #[source]
        source: zune_jpeg::errors::DecodeErrors,
    },
    #[error("{what} is {width}x{height}; it must be {expected_width}x{expected_height}")]
    SizeMismatch {
        what: &'static str,
        width: u32,
        height: u32,
        expected_width: u32,
        expected_height: u32,
    },
    #[error("encoding an image failed")]
    Encode {
        #[source]
        source: image::ImageError,
    },
    #[error("encoding the JPEG rendition failed")]
    EncodeJpeg {
        #[source]
        source: jpeg_encoder::EncodingError,
    },
}

impl ImagingError {
    /// A stable machine code for a job's failure reason.
    pub fn code(&self) -> &'static str {
        match self {
            ImagingError::TooManyBytes { .. } => "image_too_many_bytes",
            ImagingError::NotAnImage => "not_an_image",
            ImagingError::UnsupportedFormat { .. } => "unsupported_image_format",
            ImagingError::TooLarge { .. } | ImagingError::LimitExceeded { .. } => "image_too_large",
            ImagingError::Header { .. }
            | ImagingError::Corrupt { .. }
            | ImagingError::CorruptJpeg { .. } => "image_corrupt",
            ImagingError::SizeMismatch { .. } => "image_size_mismatch",
            ImagingError::Encode { .. } | ImagingError::EncodeJpeg { .. } => "image_encode_failed",
        }
    }
}

/// Hard limits checked before decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest encoded size in bytes.
    pub max_bytes: u64,
    /// Largest width × height.
    pub max_pixels: u64,
    /// Largest width or height.
    pub max_side: u32,
}

impl DecodeLimits {
    /// A phone photo: 12 MP (4032×3024) and 24 MP fit with room; 40 MP is the ceiling, which
    /// bounds a decoded RGBA image at 160 MB (a 48 MP capture must be downsized by the client).
    /// 8192 a side admits panoramas up to 8192×4880. Bytes as the upload limit.
    pub const PHOTO: DecodeLimits = DecodeLimits {
        max_bytes: 20 * 1024 * 1024,
        max_pixels: 40_000_000,
        max_side: 8192,
    };
    /// A mask: the original's dimensions, as a (lossless, highly compressible) PNG.
    pub const MASK: DecodeLimits = DecodeLimits {
        max_bytes: 8 * 1024 * 1024,
        ..DecodeLimits::PHOTO
    };
    /// A style reference: only its medium matters, so a smaller ceiling.
    pub const STYLE_REFERENCE: DecodeLimits = DecodeLimits {
        max_bytes: 10 * 1024 * 1024,
        max_pixels: 25_000_000,
        max_side: 8192,
    };
    /// What an image model returns (1–4 MP in practice).
    pub const MODEL_OUTPUT: DecodeLimits = DecodeLimits {
        max_bytes: 64 * 1024 * 1024,
        max_pixels: 16_777_216,
        max_side: 4096,
    };

    /// The limits for an uploaded asset of this kind.
    pub fn for_asset(kind: AssetKind) -> DecodeLimits {
        let limits = match kind {
            AssetKind::Original => DecodeLimits::PHOTO,
            AssetKind::Mask => DecodeLimits::MASK,
            AssetKind::StyleReference => DecodeLimits::STYLE_REFERENCE,
        };
        DecodeLimits {
            max_bytes: limits.max_bytes.min(kind.max_bytes()),
            ..limits
        }
    }

    /// An image this system delivered at the photo's `width`×`height` (a result or a repair's
    /// candidate, read back as the base of a repair): exactly those dimensions, and at most
    /// the largest PNG [`encode_png`] can write for them ([`delivered_png_max_bytes`]), not the
    /// upload limit, so a heavily textured result (larger than any upload) can still be read.
    pub fn for_delivered((width, height): (u32, u32)) -> DecodeLimits {
        DecodeLimits {
            max_bytes: delivered_png_max_bytes(width, height),
            max_pixels: u64::from(width) * u64::from(height),
            max_side: width.max(height),
        }
    }

    /// Bytes the decoder may allocate: the pixels at 16 bits per channel RGBA (the widest
    /// PNG), which also covers its working buffers for 8-bit images.
    fn max_alloc(self) -> u64 {
        self.max_pixels.saturating_mul(8)
    }

    /// Decodes `bytes` within these limits (see [`decode_limited`]).
    pub fn decode(self, bytes: &[u8]) -> Result<DynamicImage, ImagingError> {
        decode_limited(bytes, self.max_bytes, self.max_pixels, self.max_side)
    }
}

fn from_image_error(
    source: image::ImageError,
    wrap: fn(image::ImageError) -> ImagingError,
) -> ImagingError {
    match source {
        image::ImageError::Limits(_) => ImagingError::LimitExceeded { source },
        other => wrap(other),
    }
}

/// Decodes an untrusted PNG, JPEG or WebP, refusing it before decoding when it is too many
/// bytes, not an image, or declares dimensions over the limits. EXIF orientation is applied,
/// so the pixels are as the user saw them (and as a mask brushed over them is laid out).
pub fn decode_limited(
    bytes: &[u8],
    max_bytes: u64,
    max_pixels: u64,
    max_side: u32,
) -> Result<DynamicImage, ImagingError> {
    let limits = DecodeLimits {
        max_bytes,
        max_pixels,
        max_side,
    };
    let len = bytes.len() as u64;
    if len > max_bytes {
        return Err(ImagingError::TooManyBytes {
            bytes: len,
            max: max_bytes,
        });
    }

    // The header alone: a decoder reads IHDR/SOF/VP8 headers here and allocates no pixels.
    // Without the side limits, so an oversized image is reported with its dimensions.
    let reader = guessed_reader(bytes, limits, false)?;
    let format = reader.format();
    let (width, height) = reader
        .into_dimensions()
        .map_err(|e| from_image_error(e, |source| ImagingError::Header { source }))?;
    let pixels = u64::from(width) * u64::from(height);
    if width == 0 || height == 0 || width > max_side || height > max_side || pixels > max_pixels {
        return Err(ImagingError::TooLarge {
            width,
            height,
            max_side,
            max_pixels,
        });
    }

    if format == Some(ImageFormat::Jpeg) {
        return decode_jpeg_rgba(bytes, limits);
    }
    let mut decoder = guessed_reader(bytes, limits, true)?
        .into_decoder()
        .map_err(|e| from_image_error(e, |source| ImagingError::Header { source }))?;
    if decoder.total_bytes() > limits.max_alloc() {
        return Err(ImagingError::TooLarge {
            width,
            height,
            max_side,
            max_pixels,
        });
    }
    // A broken EXIF block is not worth refusing a photo over: show it as stored.
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut image = DynamicImage::from_decoder(decoder)
        .map_err(|e| from_image_error(e, |source| ImagingError::Corrupt { source }))?;
    image.apply_orientation(orientation);
    Ok(image)
}

/// A JPEG (its header already checked against `limits`) decoded by `zune-jpeg` straight to
/// RGBA, the layout every caller works in: `image`'s decoder asks the same library for RGB and
/// then copies it into RGBA (for a 12 MP photo 36 MB more and ≈ 40–60 ms of its ≈ 170).
/// Any colour space comes out as RGBA, as `image` would convert it; EXIF orientation applied.
fn decode_jpeg_rgba(bytes: &[u8], limits: DecodeLimits) -> Result<DynamicImage, ImagingError> {
    use zune_jpeg::zune_core::{
        bytestream::ZCursor, colorspace::ColorSpace, options::DecoderOptions,
    };
    let side = limits.max_side as usize;
    let options = DecoderOptions::default()
        .set_strict_mode(false)
        .set_max_width(side)
        .set_max_height(side)
        .jpeg_set_out_colorspace(ColorSpace::RGBA);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(bytes), options);
    let corrupt = |source| ImagingError::CorruptJpeg { source };
    decoder.decode_headers().map_err(corrupt)?;
    // A broken EXIF block is not worth refusing a photo over: show it as stored.
    let orientation = decoder
        .exif()
        .and_then(|exif| image::metadata::Orientation::from_exif_chunk(exif))
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let pixels = decoder.decode().map_err(corrupt)?;
    let rgba = decoder
        .dimensions()
        .and_then(|(w, h)| {
            RgbaImage::from_raw(u32::try_from(w).ok()?, u32::try_from(h).ok()?, pixels)
        })
        .ok_or(ImagingError::CorruptJpeg {
            source: zune_jpeg::errors::DecodeErrors::Format(
                "decoded pixels do not match the declared dimensions".into(),
            ),
        })?;
    let mut image = DynamicImage::ImageRgba8(rgba);
    image.apply_orientation(orientation);
    Ok(image)
}

fn guessed_reader(
    bytes: &[u8],
    limits: DecodeLimits,
    limit_sides: bool,
) -> Result<ImageReader<Cursor<&[u8]>>, ImagingError> {
    // Guessing reads 16 bytes from memory; the only error is an I/O one, which a cursor over a
    // slice cannot produce. Treat it as "not an image" all the same.
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|_| ImagingError::NotAnImage)?;
    match reader.format() {
        None => return Err(ImagingError::NotAnImage),
        Some(ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::WebP) => {}
        Some(format) => return Err(ImagingError::UnsupportedFormat { format }),
    }
    let mut decoder_limits = image::Limits::default();
    if limit_sides {
        decoder_limits.max_image_width = Some(limits.max_side);
        decoder_limits.max_image_height = Some(limits.max_side);
    }
    decoder_limits.max_alloc = Some(limits.max_alloc());
    reader.limits(decoder_limits);
    Ok(reader)
}

/// Where an edit may change pixels: one weight per pixel, 0 = keep the original exactly,
/// 255 = fully editable, values between = a soft edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mask {
    weights: GrayImage,
}

impl Mask {
    /// A mask from weights (255 = editable).
    pub fn from_weights(weights: GrayImage) -> Mask {
        Mask { weights }
    }

    /// Everything editable (e.g. a target the model selects itself).
    pub fn full(width: u32, height: u32) -> Mask {
        Mask::from_weights(GrayImage::from_pixel(width, height, Luma([255])))
    }

    /// A rectangle as a mask (x0, y0 inclusive; x1, y1 exclusive), grown by `margin` pixels
    /// and clipped to the image: the selection when all that is known is a box around the
    /// target (e.g. the readiness check's `target_box`), for measuring leakage outside it.
    pub fn from_rect(width: u32, height: u32, rect: (u32, u32, u32, u32), margin: u32) -> Mask {
        let (x0, y0, x1, y1) = rect;
        let (x0, y0) = (x0.saturating_sub(margin), y0.saturating_sub(margin));
        let (x1, y1) = (
            x1.saturating_add(margin).min(width),
            y1.saturating_add(margin).min(height),
        );
        Mask::from_weights(GrayImage::from_fn(width, height, |x, y| {
            let inside = x >= x0 && x < x1 && y >= y0 && y < y1;
            Luma([if inside { 255 } else { 0 }])
        }))
    }

    pub fn dimensions(&self) -> (u32, u32) {
        self.weights.dimensions()
    }

    pub fn weights(&self) -> &GrayImage {
        &self.weights
    }

    /// The weight at (x, y); 0 outside the image.
    pub fn weight(&self, x: u32, y: u32) -> u8 {
        self.weights.get_pixel_checked(x, y).map_or(0, |p| p.0[0])
    }

    /// Pixels with any editable weight.
    pub fn editable_pixels(&self) -> u64 {
        self.weights.as_raw().iter().filter(|&&w| w > 0).count() as u64
    }

    /// Pixels that must stay the original's (weight 0).
    pub fn outside_pixels(&self) -> u64 {
        self.weights.as_raw().iter().filter(|&&w| w == 0).count() as u64
    }

    /// True when nothing may change.
    pub fn is_empty(&self) -> bool {
        self.weights.as_raw().iter().all(|&w| w == 0)
    }

    /// The mask scaled to other dimensions (to go with a downscaled image); edges soften.
    /// Shrinking averages each target pixel's area ([`shrink_by_area`]): a 12 MP mask costs
    /// one read, with no full-height float buffer.
    pub fn resized(&self, width: u32, height: u32) -> Mask {
        let (w, h) = self.dimensions();
        if (w, h) == (width, height) {
            return self.clone();
        }
        if width <= w && height <= h {
            return Mask::from_weights(shrink_by_area(&self.weights, width, height));
        }
        Mask::from_weights(image::imageops::resize(
            &self.weights,
            width,
            height,
            FilterType::Triangle,
        ))
    }

    /// The editable area grown by `px` pixels (square neighbourhood), weights binarised: what
    /// a model that "spills" past a mask really changes.
    pub fn dilated(&self, px: u32) -> Mask {
        let (w, h) = self.dimensions();
        let src = &self.weights;
        // Separable max filter: rows, then columns.
        let mut rows = GrayImage::new(w, h);
        for y in 0..h {
            for x in 0..w {
                let lo = x.saturating_sub(px);
                let hi = x.saturating_add(px).min(w.saturating_sub(1));
                let any = (lo..=hi).any(|xx| src.get_pixel(xx, y).0[0] > 0);
                rows.put_pixel(x, y, Luma([if any { 255 } else { 0 }]));
            }
        }
        let mut out = GrayImage::new(w, h);
        for y in 0..h {
            let lo = y.saturating_sub(px);
            let hi = y.saturating_add(px).min(h.saturating_sub(1));
            for x in 0..w {
                let any = (lo..=hi).any(|yy| rows.get_pixel(x, yy).0[0] > 0);
                out.put_pixel(x, y, Luma([if any { 255 } else { 0 }]));
            }
        }
        Mask::from_weights(out)
    }

    /// The mask as an image model's edit endpoint wants it: a PNG with an alpha channel where
    /// transparent (alpha 0) marks what may be edited.
    pub fn to_alpha_png(&self) -> Result<Vec<u8>, ImagingError> {
        let (w, h) = self.dimensions();
        let raw = self
            .weights
            .iter()
            .flat_map(|&m| [0, 0, 0, 255 - m])
            .collect();
        let rgba = RgbaImage::from_raw(w, h, raw).unwrap_or_else(|| RgbaImage::new(w, h));
        encode_png_for_model(&rgba)
    }

    /// The mask as a picture for a vision model: white = may change, black = keep. Opaque,
    /// because vision models tend to flatten transparency onto an arbitrary colour.
    pub fn to_visual(&self) -> RgbaImage {
        let (w, h) = self.dimensions();
        RgbaImage::from_fn(w, h, |x, y| {
            let v = self.weights.get_pixel(x, y).0[0];
            Rgba([v, v, v, 255])
        })
    }
}

/// `src` shrunk to `width`×`height` (each at most the source's and not 0), each target pixel
/// the exact average of the source area it covers, rounded (`imageops::thumbnail` leaves out
/// the partly covered edge pixels, and was a tenth of the 12 MP path's time), separably in
/// integers: positions are in units of 1/width (1/height) of a source pixel, so every overlap
/// is an integer.
fn shrink_by_area(src: &GrayImage, width: u32, height: u32) -> GrayImage {
    let (sw, sh) = (src.width() as usize, src.height() as usize);
    let (w, h) = (width as usize, height as usize);
    if w == 0 || h == 0 || sw == 0 || w > sw || h > sh {
        return image::imageops::thumbnail(src, width, height);
    }
    // Each target column's source pixels and overlaps, which sum to `sw`.
    let taps: Vec<Vec<(usize, u32)>> = (0..w).map(|j| overlaps(j, w, sw)).collect();
    // Rows first (a weighted sum of whole source rows, which vectorises), then columns;
    // at most 255 × 8192 per column sum, so u32 holds it.
    let mut column_sums = vec![0u32; sw];
    let mut out = Vec::with_capacity(w * h);
    let whole = (sw * sh) as u64;
    for i in 0..h {
        column_sums.fill(0);
        for (y, dy) in overlaps(i, h, sh) {
            let line = src.as_raw().get(y * sw..(y + 1) * sw).unwrap_or(&[]);
            for (sum, &v) in column_sums.iter_mut().zip(line) {
                *sum += u32::from(v) * dy;
            }
        }
        out.extend(taps.iter().map(|taps| {
            let area: u64 = taps
                .iter()
                .map(|&(x, dx)| u64::from(column_sums.get(x).copied().unwrap_or(0)) * u64::from(dx))
                .sum();
            ((area + whole / 2) / whole) as u8
        }));
    }
    GrayImage::from_raw(width, height, out)
        .unwrap_or_else(|| image::imageops::thumbnail(src, width, height))
}

/// The source pixels under target pixel `j` of `n` over `of` source pixels, with the length
/// of each overlap in units of 1/n of a source pixel (they sum to `of`).
fn overlaps(j: usize, n: usize, of: usize) -> Vec<(usize, u32)> {
    let (start, end) = (j * of, (j + 1) * of);
    (start / n..end.div_ceil(n))
        .map(|x| {
            let (lo, hi) = ((x * n).max(start), ((x + 1) * n).min(end));
            (x, hi.saturating_sub(lo) as u32)
        })
        .filter(|&(_, len)| len > 0)
        .collect()
}

/// Reads a mask, which must be exactly `expected` (the original's width and height).
///
/// Two conventions are accepted, decided per file:
/// - **alpha** (OpenAI's): if the PNG has an alpha channel and any pixel is not fully opaque,
///   the weight is `255 - alpha`: fully transparent = editable, opaque = keep. Colour is ignored.
/// - **brightness**: otherwise (no alpha channel, or every pixel opaque) the weight is the
///   pixel's luma: white = editable, black = keep.
pub fn mask_from_png(bytes: &[u8], expected: (u32, u32)) -> Result<Mask, ImagingError> {
    // A mask must be lossless whatever its upload claimed: only the bytes say what it is.
    match image::guess_format(bytes) {
        Ok(ImageFormat::Png) => {}
        Ok(format) => return Err(ImagingError::UnsupportedFormat { format }),
        Err(_) => return Err(ImagingError::NotAnImage),
    }
    match read_plain_mask(bytes, expected)? {
        Some(mask) => Ok(mask),
        None => read_any_mask(bytes, expected),
    }
}

/// Any PNG as a mask, decoded whole by `image`.
fn read_any_mask(bytes: &[u8], expected: (u32, u32)) -> Result<Mask, ImagingError> {
    let image = DecodeLimits::MASK.decode(bytes)?;
    let (width, height) = (image.width(), image.height());
    if (width, height) != expected {
        return Err(ImagingError::SizeMismatch {
            what: "mask",
            width,
            height,
            expected_width: expected.0,
            expected_height: expected.1,
        });
    }
    if image.color().has_alpha() {
        // Borrow the common 8-bit RGBA layout rather than copying a full-size image.
        let converted;
        let rgba = match image.as_rgba8() {
            Some(rgba) => rgba,
            None => {
                converted = image.to_rgba8();
                &converted
            }
        };
        if rgba.pixels().any(|p| p.0[3] < 255) {
            let alpha: Vec<u8> = rgba.pixels().map(|p| 255 - p.0[3]).collect();
            if let Some(weights) = GrayImage::from_raw(width, height, alpha) {
                return Ok(Mask::from_weights(weights));
            }
        }
    }
    Ok(Mask::from_weights(image.to_luma8()))
}

/// The common mask (a brush canvas's PNG: 8-bit, not interlaced, grey or RGB with or without
/// alpha, no tRNS) read row by row straight into weights, by the rules of [`mask_from_png`]:
/// no full-size RGBA copy (48 MB at 12 MP) and no second pass. `None` for any other PNG and
/// for anything wrong with this one, which the general path then reads or refuses as always.
fn read_plain_mask(bytes: &[u8], expected: (u32, u32)) -> Result<Option<Mask>, ImagingError> {
    let limits = DecodeLimits::MASK;
    if bytes.len() as u64 > limits.max_bytes {
        return Ok(None);
    }
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::IDENTITY);
    decoder.set_limits(png::Limits {
        bytes: usize::try_from(limits.max_alloc()).unwrap_or(usize::MAX),
    });
    let Ok(mut reader) = decoder.read_info() else {
        return Ok(None);
    };
    let info = reader.info();
    let (width, height) = (info.width, info.height);
    let channels = match info.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Ok(None),
    };
    let pixels = u64::from(width) * u64::from(height);
    let plain = info.bit_depth == png::BitDepth::Eight && !info.interlaced && info.trns.is_none();
    let within = width.max(height) <= limits.max_side && pixels <= limits.max_pixels;
    if !plain || !within {
        return Ok(None);
    }
    check_size("mask", (width, height), expected)?;
    let mut rows = MaskRows::new(pixels as usize, channels);
    loop {
        match reader.next_row() {
            Ok(Some(row)) => rows.push(row.data()),
            Ok(None) => break,
            Err(_) => return Ok(None),
        }
    }
    Ok(GrayImage::from_raw(width, height, rows.into_weights()).map(Mask::from_weights))
}

/// Weights gathered row by row: luma until a transparent pixel settles the convention, then
/// `255 - alpha` (0 for every opaque pixel before it).
struct MaskRows {
    channels: usize,
    alpha: Vec<u8>,
    luma: Vec<u8>,
    transparent: bool,
}

impl MaskRows {
    fn new(pixels: usize, channels: usize) -> MaskRows {
        // The alpha weights are gathered from the first transparent pixel's row on.
        MaskRows {
            channels,
            alpha: Vec::new(),
            luma: Vec::with_capacity(pixels),
            transparent: false,
        }
    }

    fn push(&mut self, row: &[u8]) {
        let c = self.channels;
        if c.is_multiple_of(2) && (self.transparent || row.chunks_exact(c).any(|p| p[c - 1] < 255))
        {
            // Every earlier pixel was opaque: weight 0 under the alpha rule.
            let before = self.luma.len().max(self.alpha.len());
            self.alpha.resize(before, 0);
            self.alpha
                .extend(row.chunks_exact(c).map(|p| 255 - p[c - 1]));
            self.transparent = true;
        }
        if self.transparent {
            return;
        }
        // Grey pixels (a brush canvas's white on black, anti-aliased) are their own luma.
        let grey = |p: &[u8]| c < 3 || (p[0] == p[1] && p[1] == p[2]);
        if row.chunks_exact(c).all(grey) {
            self.luma.extend(row.chunks_exact(c).map(|p| p[0]));
            return;
        }
        // Colour to luma by `image`'s own conversion (the general path's `to_luma8`), a row
        // at a time.
        let width = (row.len() / c) as u32;
        let line = match c {
            3 => image::RgbImage::from_raw(width, 1, row.to_vec()).map(DynamicImage::from),
            _ => RgbaImage::from_raw(width, 1, row.to_vec()).map(DynamicImage::from),
        };
        if let Some(line) = line {
            self.luma.extend_from_slice(line.to_luma8().as_raw());
        }
    }

    fn into_weights(self) -> Vec<u8> {
        if self.transparent {
            self.alpha
        } else {
            self.luma
        }
    }
}

/// Distance (chamfer 3-4, in thirds of a pixel) from each pixel to the nearest pixel with
/// weight 0, at most `cap` (`cap` when there is none).
fn distance_to_outside(mask: &GrayImage, cap: u16) -> Vec<u16> {
    let w = mask.width() as usize;
    // Starting from the cap rather than "far" gives min(distance, cap) directly.
    let mut d: Vec<u16> = mask
        .as_raw()
        .iter()
        .map(|&m| if m == 0 { 0 } else { cap })
        .collect();
    if w == 0 {
        return d;
    }
    // Forward: left, up-left, up, up-right; backward: the mirror. Row slices, so the inner
    // loops carry no 2-D index arithmetic.
    let rows = d.len() / w;
    let mut scratch = Vec::with_capacity(w);
    for y in 0..rows {
        let (before, rest) = d.split_at_mut(y * w);
        let above = before
            .get(before.len().saturating_sub(w)..)
            .filter(|_| y > 0);
        chamfer_row(&mut rest[..w], above, false, cap, &mut scratch);
    }
    for y in (0..rows).rev() {
        let (upto, after) = d.split_at_mut((y + 1) * w);
        let below = after.get(..w);
        chamfer_row(&mut upto[y * w..], below, true, cap, &mut scratch);
    }
    d
}

/// One row of a chamfer 3-4 pass: each pixel relaxed from the three in `other` (the row
/// above, or below when `reverse`; final already), then along the row (from the left, or the
/// right when `reverse`). Pixels at 0 stay 0; no value exceeds `cap`.
fn chamfer_row(
    row: &mut [u16],
    other: Option<&[u16]>,
    reverse: bool,
    cap: u16,
    scratch: &mut Vec<u16>,
) {
    let w = row.len();
    if let Some(other) = other {
        let relax = |row: &mut [u16], from: &[u16], step: u16| {
            for (v, &n) in row.iter_mut().zip(from) {
                *v = (*v).min(n.saturating_add(step));
            }
        };
        relax(row, other, 3);
        if w > 1 {
            relax(&mut row[1..], &other[..w - 1], 4);
            relax(&mut row[..w - 1], &other[1..], 4);
        }
    }
    along_row(row, reverse, cap, scratch);
}

/// The in-row step of the pass: `row[x] = min over k ≥ 0 of row[x ∓ k] + 3k`, which the
/// pixel-after-pixel loop computes, done by doubling shifts (1, 2, 4, …) over whole slices:
/// after the shift `s` every `k < 2s` is covered, and a `k` with `3k ≥ cap` can lower no
/// value (all are ≤ `cap`), so a few vectorised passes replace a serial dependency chain.
fn along_row(row: &mut [u16], reverse: bool, cap: u16, scratch: &mut Vec<u16>) {
    let w = row.len();
    let reach = usize::from(cap.div_ceil(3));
    let (mut s, mut covered) = (1usize, 0usize);
    while covered + 1 < reach && s < w {
        scratch.clear();
        scratch.extend_from_slice(row);
        let step = u16::try_from(3 * s).unwrap_or(u16::MAX);
        let (to, from) = if reverse {
            (&mut row[..w - s], &scratch[s..])
        } else {
            (&mut row[s..], &scratch[..w - s])
        };
        for (v, &n) in to.iter_mut().zip(from) {
            *v = (*v).min(n.saturating_add(step));
        }
        covered += s;
        s *= 2;
    }
}

/// Puts the edited image back over the original through the mask.
///
/// Where the mask's weight is 0 the result is the original's pixel, exactly. Inside, the
/// edited pixel is blended in by the mask's weight, ramped up over `feather_px` pixels from
/// the selection's edge inward (clamped to [`MAX_FEATHER_PX`]; 0 = a hard edge). An edited
/// image of another size (image models answer in their own sizes) is resized to the
/// original's first — only the selection's bounding box of it, the only part that can show
/// (a 12 MP photo's full-size copy would cost 48 MB and most of the time). The mask must be
/// the original's size.
pub fn composite(
    original: &RgbaImage,
    edited: &RgbaImage,
    mask: &Mask,
    feather_px: u32,
) -> Result<RgbaImage, ImagingError> {
    check_size("mask", mask.dimensions(), original.dimensions())?;
    let mut out = original.clone();
    if let Some(window) = editable_box(mask.weights()) {
        blend_into(&mut out, edited, mask, feather_px, window);
    }
    Ok(out)
}

/// [`composite`] in the original's own pixels, with its leakage: only the
/// selection's box of the original is kept to measure against, not a whole copy (48 MB at
/// 12 MP, and a sixth of the path's time in page faults). The figures equal
/// [`leakage`]'s of [`composite`]'s result, compared inside the mask's box only: outside it a
/// composite is the original's bytes (the `composite_never_touches_a_pixel_outside_the_mask`
/// property).
pub fn composite_into(
    original: RgbaImage,
    edited: &RgbaImage,
    mask: &Mask,
    feather_px: u32,
) -> Result<(RgbaImage, Leakage), ImagingError> {
    check_size("mask", mask.dimensions(), original.dimensions())?;
    let outside = mask.outside_pixels();
    let Some(window) = editable_box(mask.weights()) else {
        return Ok((original, Leakage::of(0, outside)));
    };
    let (x0, y0, x1, y1) = window;
    let before = image::imageops::crop_imm(&original, x0, y0, x1 - x0, y1 - y0).to_image();
    let mut out = original;
    blend_into(&mut out, edited, mask, feather_px, window);
    let (width, bx) = (out.width() as usize, (x0 as usize, x1 as usize));
    let changed = before
        .chunks_exact((bx.1 - bx.0) * 4)
        .zip(out.chunks_exact(width * 4).skip(y0 as usize))
        .zip(mask.weights.chunks_exact(width).skip(y0 as usize))
        .map(|((b_row, r_row), weights)| {
            match (r_row.get(bx.0 * 4..bx.1 * 4), weights.get(bx.0..bx.1)) {
                (Some(r_row), Some(weights)) => changed_in_row(b_row, r_row, weights),
                _ => 0, // unreachable: the box is inside the image
            }
        })
        .sum();
    Ok((out, Leakage::of(changed, outside)))
}

/// The edited image blended into `out` within `window`, the mask's editable box (the
/// rule: [`composite`]). `mask` is `out`'s size.
fn blend_into(
    out: &mut RgbaImage,
    edited: &RgbaImage,
    mask: &Mask,
    feather_px: u32,
    window: (u32, u32, u32, u32),
) {
    let (w, h) = out.dimensions();
    let (x0, y0, x1, y1) = window;
    let patch = if edited.dimensions() == (w, h) {
        image::imageops::crop_imm(edited, x0, y0, x1 - x0, y1 - y0).to_image()
    } else {
        resize_window(edited, (w, h), window)
    };
    let feather = feather_px.min(MAX_FEATHER_PX);
    // Blend factor numerator = weight × min(distance, feather), over 255 × feather; the
    // distance is in thirds of a pixel (chamfer 3-4). At most 255 × 192 × 255: u32 holds it.
    let span = feather.max(1) * 3;
    let dist = (feather > 0).then(|| BoxDistance::new(mask.weights(), window, span as u16));
    let den = 255 * span;
    let stride = w as usize;
    let (bx0, bx1) = (x0 as usize, x1 as usize);
    let rows = out
        .chunks_exact_mut(stride * 4)
        .zip(mask.weights.chunks_exact(stride))
        .skip(y0 as usize)
        .take((y1 - y0) as usize)
        .zip(patch.chunks_exact((bx1 - bx0) * 4));
    for (y, ((out_row, weight_row), patch_row)) in (y0..).zip(rows) {
        let (Some(out_row), Some(weight_row)) =
            (out_row.get_mut(bx0 * 4..bx1 * 4), weight_row.get(bx0..bx1))
        else {
            continue; // unreachable: the box is inside the image
        };
        let ramps = dist.as_ref().map(|d| d.row(y, x0));
        let pixels = out_row.chunks_exact_mut(4).zip(patch_row.chunks_exact(4));
        for (i, ((px, ed), &weight)) in pixels.zip(weight_row).enumerate() {
            if weight == 0 {
                continue;
            }
            let ramp = ramps.map_or(span, |r| {
                u32::from(r.get(i).copied().unwrap_or(0)).min(span)
            });
            let num = u32::from(weight) * ramp;
            if num == den {
                px.copy_from_slice(ed); // fully the edit's: the blend below gives `ed` exactly
                continue;
            }
            for (o, &e) in px.iter_mut().zip(ed) {
                let (o32, e32) = (u32::from(*o), u32::from(e));
                *o = ((o32 * (den - num) + e32 * num + den / 2) / den) as u8;
            }
        }
    }
}

/// The smallest box `(x0, y0, x1, y1)` (x1, y1 exclusive) holding every pixel with a weight;
/// `None` when nothing is editable.
fn editable_box(weights: &GrayImage) -> Option<(u32, u32, u32, u32)> {
    let w = weights.width() as usize;
    let mut found: Option<(usize, usize, usize, usize)> = None;
    for (y, row) in weights.as_raw().chunks_exact(w.max(1)).enumerate() {
        let Some(first) = row.iter().position(|&v| v != 0) else {
            continue;
        };
        let last = row.iter().rposition(|&v| v != 0).unwrap_or(first);
        found = Some(match found {
            None => (first, y, last + 1, y + 1),
            Some((x0, y0, x1, _)) => (x0.min(first), y0, x1.max(last + 1), y + 1),
        });
    }
    found.map(|(x0, y0, x1, y1)| (x0 as u32, y0 as u32, x1 as u32, y1 as u32))
}

/// [`distance_to_outside`] within a box around the selection, grown by one pixel: that ring
/// is all weight 0 (or the image's edge), so every distance inside equals the whole image's.
struct BoxDistance {
    x0: u32,
    y0: u32,
    width: usize,
    d: Vec<u16>,
}

impl BoxDistance {
    fn new(weights: &GrayImage, (x0, y0, x1, y1): (u32, u32, u32, u32), cap: u16) -> BoxDistance {
        let (x0, y0) = (x0.saturating_sub(1), y0.saturating_sub(1));
        let x1 = x1.saturating_add(1).min(weights.width());
        let y1 = y1.saturating_add(1).min(weights.height());
        let grown = image::imageops::crop_imm(weights, x0, y0, x1 - x0, y1 - y0).to_image();
        BoxDistance {
            x0,
            y0,
            width: (x1 - x0) as usize,
            d: distance_to_outside(&grown, cap),
        }
    }

    /// The distances of row `y` of the whole image from the box's first column (`x0` of the
    /// selection's box: one pixel right of this box's own edge, or 0 at the image's edge).
    fn row(&self, y: u32, from_x: u32) -> &[u16] {
        let start = (y - self.y0) as usize * self.width + (from_x - self.x0) as usize;
        let end = (y - self.y0 + 1) as usize * self.width;
        self.d.get(start..end).unwrap_or(&[])
    }
}

fn check_size(what: &'static str, got: (u32, u32), want: (u32, u32)) -> Result<(), ImagingError> {
    if got == want {
        return Ok(());
    }
    Err(ImagingError::SizeMismatch {
        what,
        width: got.0,
        height: got.1,
        expected_width: want.0,
        expected_height: want.1,
    })
}

/// How much of the photo outside the selection an edit changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leakage {
    /// Pixels outside the selection whose value changed by more than [`LEAKAGE_TOLERANCE`]
    /// in any channel.
    pub changed_outside: u64,
    /// Pixels outside the selection (mask weight 0).
    pub outside: u64,
    /// `changed_outside / outside` in parts per million (0 when nothing is outside).
    pub ratio_ppm: u32,
}

fn ppm(part: u64, whole: u64) -> u32 {
    if whole == 0 {
        return 0;
    }
    (u128::from(part) * 1_000_000 / u128::from(whole)) as u32
}

/// Measures leakage of `result` against `original` outside `mask` (weight 0). All three must
/// have the same dimensions.
pub fn leakage(
    original: &RgbaImage,
    result: &RgbaImage,
    mask: &Mask,
) -> Result<Leakage, ImagingError> {
    let (w, h) = same_sizes(original, result, mask)?;
    let changed = changed_outside(original, result, mask, (0..h, 0..w));
    Ok(Leakage::of(changed, mask.outside_pixels()))
}

impl Leakage {
    fn of(changed_outside: u64, outside: u64) -> Leakage {
        Leakage {
            changed_outside,
            outside,
            ratio_ppm: ppm(changed_outside, outside),
        }
    }
}

/// The common width and height of the three, or which one differs.
fn same_sizes(
    original: &RgbaImage,
    result: &RgbaImage,
    mask: &Mask,
) -> Result<(usize, usize), ImagingError> {
    let dims = original.dimensions();
    check_size("result", result.dimensions(), dims)?;
    check_size("mask", mask.dimensions(), dims)?;
    Ok((dims.0 as usize, dims.1 as usize))
}

/// Pixels outside `mask` that changed beyond the tolerance, within `rows` × `columns`.
fn changed_outside(
    original: &RgbaImage,
    result: &RgbaImage,
    mask: &Mask,
    (rows, columns): (std::ops::Range<usize>, std::ops::Range<usize>),
) -> u64 {
    let width = original.width() as usize;
    if width == 0 {
        return 0;
    }
    let lines = original
        .chunks_exact(width * 4)
        .zip(result.chunks_exact(width * 4))
        .zip(mask.weights.chunks_exact(width));
    lines
        .skip(rows.start)
        .take(rows.len())
        .map(|((o_row, r_row), weights)| {
            let bytes = columns.start * 4..columns.end * 4;
            let (o, r) = (o_row.get(bytes.clone()), r_row.get(bytes));
            match (o, r, weights.get(columns.clone())) {
                (Some(o), Some(r), Some(weights)) => changed_in_row(o, r, weights),
                _ => 0, // unreachable: the columns are inside the image
            }
        })
        .sum()
}

/// Pixels of one row (RGBA bytes, and the mask's weights under them) outside the mask that
/// changed beyond the tolerance.
fn changed_in_row(original: &[u8], result: &[u8], weights: &[u8]) -> u64 {
    if original == result {
        return 0; // equal byte for byte: one comparison, not a pixel walk
    }
    let pixels = original.chunks_exact(4).zip(result.chunks_exact(4));
    pixels
        .zip(weights)
        .filter(|((o, r), m)| **m == 0 && channels_differ(o, r, LEAKAGE_TOLERANCE))
        .count() as u64
}

/// True when any channel differs by more than `tolerance`.
pub fn pixel_changed(a: &Rgba<u8>, b: &Rgba<u8>, tolerance: u8) -> bool {
    channels_differ(&a.0, &b.0, tolerance)
}

fn channels_differ(a: &[u8], b: &[u8], tolerance: u8) -> bool {
    a.iter().zip(b).any(|(x, y)| x.abs_diff(*y) > tolerance)
}

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

/// Dimensions scaled to fit within `max_side` on the long side, keeping the aspect ratio
/// (never upscaled; never 0).
pub fn fit_within((width, height): (u32, u32), max_side: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= max_side || long == 0 {
        return (width, height);
    }
    let scale = |v: u32| {
        ((u64::from(v) * u64::from(max_side) + u64::from(long) / 2) / u64::from(long)).max(1) as u32
    };
    (scale(width), scale(height))
}

/// The image scaled down to fit within `max_side` (e.g. [`VISION_MAX_SIDE`]); a copy when it
/// already fits.
pub fn downscale(image: &RgbaImage, max_side: u32) -> RgbaImage {
    let (w, h) = fit_within(image.dimensions(), max_side);
    resize_exact(image, w, h)
}

/// The image resized to exactly `width`×`height`.
pub fn resize_exact(image: &RgbaImage, width: u32, height: u32) -> RgbaImage {
    if image.dimensions() == (width, height) {
        return image.clone();
    }
    resize_window(image, (width, height), (0, 0, width, height))
}

/// The window `(x0, y0, x1, y1)` of `image` resized to `full`: that part of the whole resize,
/// within one level of rounding (the source is cropped at fractional coordinates, and the
/// filter still reads the pixels around the crop), without the rest. SIMD convolution (`fast_image_resize`)
/// in integers: a 12 MP photo shrinks to 1536 px in a tenth of `image`'s time, and with no
/// full-height float buffer (74 MB for that photo).
fn resize_window(image: &RgbaImage, full: (u32, u32), window: (u32, u32, u32, u32)) -> RgbaImage {
    use fast_image_resize::{FilterType as Filter, PixelType, ResizeAlg, ResizeOptions, Resizer};
    let (sw, sh) = image.dimensions();
    let (x0, y0, x1, y1) = window;
    let (sx, sy) = (
        f64::from(sw) / f64::from(full.0),
        f64::from(sh) / f64::from(full.1),
    );
    let filter = if full.0 < sw || full.1 < sh {
        Filter::Bilinear // a box-like filter, widened by the reduction, is right for shrinking
    } else {
        Filter::CatmullRom
    };
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(filter))
        .use_alpha(false)
        .crop(
            f64::from(x0) * sx,
            f64::from(y0) * sy,
            f64::from(x1 - x0) * sx,
            f64::from(y1 - y0) * sy,
        );
    let (ow, oh) = (x1 - x0, y1 - y0);
    let mut dst = fast_image_resize::images::Image::new(ow, oh, PixelType::U8x4);
    let resized = fast_image_resize::images::ImageRef::new(sw, sh, image.as_raw(), PixelType::U8x4)
        .map_err(|_| ())
        .and_then(|src| {
            Resizer::new()
                .resize(&src, &mut dst, &options)
                .map_err(|_| ())
        });
    match resized
        .ok()
        .and_then(|()| RgbaImage::from_raw(ow, oh, dst.into_vec()))
    {
        Some(out) => out,
        // Unreachable for an `RgbaImage` (its buffer is exactly its size); never panic on it.
        None => {
            let whole = image::imageops::resize(image, full.0, full.1, FilterType::Triangle);
            image::imageops::crop_imm(&whole, x0, y0, ow, oh).to_image()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    use proptest::prelude::*;

    fn png_of(image: &RgbaImage) -> Vec<u8> {
        encode_png(image).unwrap_or_default()
    }

    fn checker(w: u32, h: u32) -> RgbaImage {
        RgbaImage::from_fn(w, h, |x, y| {
            Rgba([
                (x * 7 % 256) as u8,
                (y * 5 % 256) as u8,
                ((x + y) % 256) as u8,
                255,
            ])
        })
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    }

    /// A bomb's shape, forged by hand (no encoder will write it): a valid header declaring
    /// `w`×`h` RGBA and a few bytes of zlib data. A decoder that trusted the header would
    /// allocate w×h×4 bytes before noticing the data is short.
    fn bomb_png(w: u32, h: u32) -> Vec<u8> {
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = Vec::new();
        ihdr.extend_from_slice(&w.to_be_bytes());
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
        chunk(&mut out, b"IHDR", &ihdr);
        chunk(
            &mut out,
            b"IDAT",
            &[0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01],
        );
        chunk(&mut out, b"IEND", &[]);
        out
    }

    #[test]
    fn a_jpeg_is_never_a_mask_whatever_it_was_uploaded_as() {
        let mut jpeg = Vec::new();
        let img = image::RgbImage::from_pixel(8, 8, image::Rgb([255, 255, 255]));
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut std::io::Cursor::new(&mut jpeg), ImageFormat::Jpeg)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            mask_from_png(&jpeg, (8, 8)),
            Err(ImagingError::UnsupportedFormat {
                format: ImageFormat::Jpeg
            })
        ));
    }

    #[test]
    fn a_decompression_bomb_is_refused_before_decoding() {
        let bytes = bomb_png(50_000, 50_000);
        assert!(bytes.len() < 100, "the bomb is tiny: {} bytes", bytes.len());
        let err = DecodeLimits::PHOTO.decode(&bytes).err();
        assert!(
            matches!(
                err,
                Some(ImagingError::TooLarge {
                    width: 50_000,
                    height: 50_000,
                    ..
                })
            ),
            "got {err:?}"
        );
    }

    #[test]
    fn too_many_pixels_within_the_side_limit_is_refused() {
        let bytes = bomb_png(8000, 8000); // 64 MP, each side under 8192
        let err = DecodeLimits::PHOTO.decode(&bytes).err();
        assert!(
            matches!(err, Some(ImagingError::TooLarge { .. })),
            "got {err:?}"
        );
    }

    #[test]
    fn too_many_bytes_is_refused_before_reading() {
        let err = decode_limited(&[0u8; 2048], 1024, 100, 10).err();
        assert!(
            matches!(
                err,
                Some(ImagingError::TooManyBytes {
                    bytes: 2048,
                    max: 1024
                })
            ),
            "got {err:?}"
        );
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
    fn a_delivered_12_mp_result_may_be_larger_than_any_upload() {
        let limit = DecodeLimits::for_delivered((4032, 3024)).max_bytes;
        assert!(limit > DecodeLimits::PHOTO.max_bytes, "{limit}");
        assert!(limit > 48_774_096 && limit < 49_500_000, "{limit}");
    }

    #[test]
    fn a_delivered_image_larger_than_the_photo_is_refused_before_decoding() {
        let png = png_of(&checker(64, 48));
        let err = DecodeLimits::for_delivered((32, 24)).decode(&png).err();
        assert!(
            matches!(err, Some(ImagingError::TooLarge { .. })),
            "{err:?}"
        );
    }

    #[test]
    fn refusals_have_clear_variants() {
        let good = png_of(&checker(40, 30));
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            (
                "text",
                b"hello, this is not an image at all".to_vec(),
                "not_an_image",
            ),
            ("empty", vec![], "not_an_image"),
            (
                "gif",
                b"GIF89a\x01\x00\x01\x00\x00\x00\x00;".to_vec(),
                "unsupported_image_format",
            ),
            (
                "truncated in the data",
                good[..good.len() / 2].to_vec(),
                "image_corrupt",
            ),
            (
                "truncated in the header",
                good[..20].to_vec(),
                "image_corrupt",
            ),
        ];
        for (why, bytes, code) in cases {
            match DecodeLimits::PHOTO.decode(&bytes) {
                Ok(_) => panic!("{why}: accepted"),
                Err(e) => assert_eq!(e.code(), code, "{why}: {e:?}"),
            }
        }
    }

    #[test]
    fn a_valid_png_round_trips() {
        let img = checker(40, 30);
        let decoded = DecodeLimits::PHOTO
            .decode(&png_of(&img))
            .map(DynamicImage::into_rgba8);
        assert_eq!(decoded.ok(), Some(img));
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

    #[test]
    fn a_mask_of_the_wrong_size_is_refused() {
        let mask = png_of(&RgbaImage::from_pixel(40, 31, Rgba([0, 0, 0, 0])));
        let err = mask_from_png(&mask, (40, 30)).err();
        assert!(
            matches!(
                err,
                Some(ImagingError::SizeMismatch {
                    what: "mask",
                    width: 40,
                    height: 31,
                    expected_width: 40,
                    expected_height: 30
                })
            ),
            "got {err:?}"
        );
    }

    #[test]
    fn a_mask_with_transparency_is_read_by_alpha() {
        // Left half transparent (editable), right half opaque white (keep, despite the white).
        let img = RgbaImage::from_fn(10, 4, |x, _| {
            if x < 5 {
                Rgba([255, 255, 255, 0])
            } else {
                Rgba([255, 255, 255, 255])
            }
        });
        let mask = mask_from_png(&png_of(&img), (10, 4)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mask.weight(0, 0), 255);
        assert_eq!(mask.weight(9, 3), 0);
        assert_eq!(mask.editable_pixels(), 20);
    }

    #[test]
    fn an_opaque_mask_is_read_by_brightness() {
        let img = image::GrayImage::from_fn(10, 4, |x, _| Luma([if x < 3 { 255 } else { 0 }]));
        let mut bytes = Vec::new();
        let written = image::codecs::png::PngEncoder::new(&mut bytes).write_image(
            img.as_raw(),
            10,
            4,
            image::ExtendedColorType::L8,
        );
        assert!(written.is_ok());
        let mask = mask_from_png(&bytes, (10, 4)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mask.editable_pixels(), 12);
        assert_eq!(mask.weight(2, 0), 255);
        assert_eq!(mask.weight(3, 0), 0);
    }

    #[test]
    fn the_alpha_png_for_the_model_round_trips() {
        let weights = GrayImage::from_fn(8, 8, |x, y| Luma([if x + y < 6 { 255 } else { 0 }]));
        let mask = Mask::from_weights(weights);
        let png = mask.to_alpha_png().unwrap_or_default();
        assert_eq!(mask_from_png(&png, (8, 8)).ok(), Some(mask));
    }

    fn half_mask(w: u32, h: u32) -> Mask {
        Mask::from_weights(GrayImage::from_fn(w, h, |x, _| {
            Luma([if x >= w / 2 { 255 } else { 0 }])
        }))
    }

    #[test]
    fn composite_keeps_every_outside_pixel_and_feathers_inward() {
        let original = RgbaImage::from_pixel(20, 10, Rgba([10, 20, 30, 255]));
        let edited = RgbaImage::from_pixel(20, 10, Rgba([210, 220, 230, 255]));
        let mask = half_mask(20, 10);
        let out = composite(&original, &edited, &mask, 4).unwrap_or_else(|e| panic!("{e}"));
        for y in 0..10 {
            for x in 0..10 {
                assert_eq!(out.get_pixel(x, y), original.get_pixel(x, y), "({x},{y})");
            }
            // First inside column: a quarter of the way (1 of 4 pixels of feather).
            assert_eq!(out.get_pixel(10, y).0[0], 60);
            // Past the feather: the edited pixel exactly.
            for x in 14..20 {
                assert_eq!(out.get_pixel(x, y), edited.get_pixel(x, y), "({x},{y})");
            }
        }
    }

    #[test]
    fn composite_resizes_an_edited_image_of_another_size() {
        let original = checker(40, 30);
        let edited = RgbaImage::from_pixel(20, 15, Rgba([255, 0, 0, 255]));
        let mask = half_mask(40, 30);
        let out = composite(&original, &edited, &mask, 0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.dimensions(), (40, 30));
        assert_eq!(out.get_pixel(0, 0), original.get_pixel(0, 0));
        assert_eq!(*out.get_pixel(39, 29), Rgba([255, 0, 0, 255]));
    }

    /// A round brush away from the edges, and one touching two of them.
    fn brushes(w: u32, h: u32) -> [Mask; 2] {
        let disc = |cx: i64, cy: i64, r: i64| {
            Mask::from_weights(GrayImage::from_fn(w, h, |x, y| {
                let (dx, dy) = (i64::from(x) - cx, i64::from(y) - cy);
                Luma([if dx * dx + dy * dy < r * r { 200 } else { 0 }])
            }))
        };
        [disc(40, 30, 12), disc(0, 59, 25)]
    }

    /// The mean of the source area under target pixel (i, j), by its definition in floats.
    fn area_mean(src: &GrayImage, (w, h): (u32, u32), (i, j): (u32, u32)) -> f64 {
        let (sx, sy) = (
            f64::from(src.width()) / f64::from(w),
            f64::from(src.height()) / f64::from(h),
        );
        let overlap =
            |p: u32, lo: f64, hi: f64| (f64::from(p + 1).min(hi) - f64::from(p).max(lo)).max(0.0);
        let mut sum = 0.0;
        for (x, y, v) in src.enumerate_pixels() {
            let a = overlap(x, f64::from(i) * sx, f64::from(i + 1) * sx)
                * overlap(y, f64::from(j) * sy, f64::from(j + 1) * sy);
            sum += a * f64::from(v.0[0]);
        }
        sum / (sx * sy)
    }

    #[test]
    fn a_mask_shrinks_to_the_average_of_each_pixels_area() {
        let noisy = GrayImage::from_fn(61, 47, |x, y| {
            Luma([((x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 13) as u8])
        });
        for (w, h) in [(23, 18), (61, 1), (1, 47), (30, 23), (61, 47), (60, 46)] {
            let ours = shrink_by_area(&noisy, w, h);
            assert_eq!(ours.dimensions(), (w, h));
            for (i, j, got) in ours.enumerate_pixels() {
                let want = area_mean(&noisy, (w, h), (i, j));
                assert!(
                    (f64::from(got.0[0]) - want).abs() <= 0.5 + 1e-9,
                    "{w}x{h} ({i},{j})"
                );
            }
        }
    }

    #[test]
    fn a_grey_pixel_is_its_own_luma_in_images_conversion() {
        let greys = RgbaImage::from_fn(256, 1, |x, _| Rgba([x as u8, x as u8, x as u8, 255]));
        let luma = DynamicImage::from(greys.clone()).to_luma8();
        assert!(
            luma.as_raw()
                .iter()
                .zip(greys.pixels())
                .all(|(l, p)| *l == p.0[0])
        );
    }

    #[test]
    fn a_brush_canvas_mask_read_row_by_row_is_the_mask_read_whole() {
        let (w, h) = (37, 23);
        let shade = |x: u32, y: u32| (x * 7 + y * 3) as u8;
        // Transparent from a later row on: the rows before are opaque (weight 0 by alpha).
        let alpha = |x: u32, y: u32, transparent: bool| match transparent && x > 20 && y > 9 {
            true => 40,
            false => 255,
        };
        // Grey rows (as a canvas's white on black) and coloured ones.
        let colour = |x: u32, y: u32| match y % 2 {
            0 => [shade(x, y); 3],
            _ => [shade(x, y), 90, shade(y, x)],
        };
        for transparent in [true, false] {
            let images: [DynamicImage; 4] = [
                GrayImage::from_fn(w, h, |x, y| Luma([shade(x, y)])).into(),
                image::GrayAlphaImage::from_fn(w, h, |x, y| {
                    image::LumaA([shade(x, y), alpha(x, y, transparent)])
                })
                .into(),
                image::RgbImage::from_fn(w, h, |x, y| image::Rgb(colour(x, y))).into(),
                RgbaImage::from_fn(w, h, |x, y| {
                    let [r, g, b] = colour(x, y);
                    Rgba([r, g, b, alpha(x, y, transparent)])
                })
                .into(),
            ];
            for image in images {
                let mut png = Vec::new();
                image
                    .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
                    .unwrap_or_else(|e| panic!("{e}"));
                let rows = read_plain_mask(&png, (w, h)).unwrap_or_else(|e| panic!("{e}"));
                let whole = read_any_mask(&png, (w, h)).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    rows,
                    Some(whole),
                    "{:?} transparent {transparent}",
                    image.color()
                );
            }
        }
    }

    /// The chamfer distance as first written (whole-image indices, from "far"): the reference
    /// for the row-slice version.
    fn chamfer_reference(mask: &GrayImage, cap: u16) -> Vec<u16> {
        let (w, h) = (mask.width() as usize, mask.height() as usize);
        let far = u16::MAX;
        let mut d: Vec<u16> = mask
            .as_raw()
            .iter()
            .map(|&m| if m == 0 { 0 } else { far })
            .collect();
        let relax = |d: &mut Vec<u16>, i: usize, j: usize, step: u16| {
            let via = d[j].saturating_add(step);
            if via < d[i] {
                d[i] = via;
            }
        };
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                if x > 0 {
                    relax(&mut d, i, i - 1, 3);
                }
                if y > 0 {
                    relax(&mut d, i, i - w, 3);
                    if x > 0 {
                        relax(&mut d, i, i - w - 1, 4);
                    }
                    if x + 1 < w {
                        relax(&mut d, i, i - w + 1, 4);
                    }
                }
            }
        }
        for y in (0..h).rev() {
            for x in (0..w).rev() {
                let i = y * w + x;
                if x + 1 < w {
                    relax(&mut d, i, i + 1, 3);
                }
                if y + 1 < h {
                    relax(&mut d, i, i + w, 3);
                    if x + 1 < w {
                        relax(&mut d, i, i + w + 1, 4);
                    }
                    if x > 0 {
                        relax(&mut d, i, i + w - 1, 4);
                    }
                }
            }
        }
        for v in &mut d {
            *v = (*v).min(cap);
        }
        d
    }

    #[test]
    fn the_row_by_row_chamfer_is_the_reference_chamfer() {
        let mut masks = brushes(90, 60).to_vec();
        masks.push(Mask::from_weights(GrayImage::from_fn(33, 21, |x, y| {
            Luma([((x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 30) as u8])
        })));
        masks.push(Mask::full(7, 5));
        for mask in masks {
            for cap in [1, 3, 4, 5, 12, 24, 25, 192] {
                let got = distance_to_outside(mask.weights(), cap);
                assert_eq!(got, chamfer_reference(mask.weights(), cap), "cap {cap}");
            }
        }
    }

    #[test]
    fn the_composite_inside_a_brush_is_each_pixels_feathered_blend() {
        let (w, h) = (90, 60);
        let original = checker(w, h);
        let edited = RgbaImage::from_fn(w, h, |x, y| Rgba([(x * 2) as u8, (y * 4) as u8, 77, 9]));
        for mask in brushes(w, h) {
            let out = composite(&original, &edited, &mask, 4).unwrap_or_else(|e| panic!("{e}"));
            // The rule as documented, pixel by pixel over the whole image: weight × the
            // distance inward (thirds of a pixel, capped at the feather's 12), over 255 × 12.
            let (span, dist) = (12, distance_to_outside(mask.weights(), 12));
            for (x, y, got) in out.enumerate_pixels() {
                let ramp = u32::from(dist[(y * w + x) as usize]).min(span);
                let (num, den) = (u32::from(mask.weight(x, y)) * ramp, 255 * span);
                let (o, e) = (original.get_pixel(x, y).0, edited.get_pixel(x, y).0);
                let want: [u8; 4] = std::array::from_fn(|c| {
                    let (o, e) = (u32::from(o[c]), u32::from(e[c]));
                    ((o * (den - num) + e * num + den / 2) / den) as u8
                });
                assert_eq!(got.0, want, "({x},{y})");
            }
        }
    }

    /// A gradient JPEG of `w`×`h` in colour or grey, with an EXIF orientation when given.
    fn jpeg(w: u16, h: u16, grey: bool, orientation: Option<u8>) -> Vec<u8> {
        let (channels, color) = match grey {
            true => (1, jpeg_encoder::ColorType::Luma),
            false => (3, jpeg_encoder::ColorType::Rgb),
        };
        let pixels: Vec<u8> = (0..usize::from(w) * usize::from(h) * channels)
            .map(|i| {
                let x = i / channels % usize::from(w);
                if x < usize::from(w) / 2 {
                    220
                } else {
                    (i * 7 % 64) as u8
                }
            })
            .collect();
        let mut out = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, 90);
        if let Some(o) = orientation {
            // APP1 "Exif": a big-endian TIFF header, one IFD entry: Orientation (SHORT) = o.
            let mut exif = b"Exif\0\0MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0".to_vec();
            exif.extend([o, 0, 0, 0, 0, 0, 0]);
            encoder
                .add_app_segment(1, exif)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        encoder
            .encode(&pixels, w, h, color)
            .unwrap_or_else(|e| panic!("{e}"));
        out
    }

    #[test]
    fn a_jpeg_decodes_straight_to_rgba_with_the_pixels_image_decodes() {
        for grey in [false, true] {
            let bytes = jpeg(48, 32, grey, None);
            let ours = DecodeLimits::PHOTO
                .decode(&bytes)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(matches!(ours, DynamicImage::ImageRgba8(_)), "grey {grey}");
            let theirs = image::load_from_memory_with_format(&bytes, ImageFormat::Jpeg)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(ours.into_rgba8() == theirs.to_rgba8(), "grey {grey}");
        }
    }

    #[test]
    fn a_photo_is_turned_as_its_exif_orientation_says() {
        // Orientation 6: the camera was turned; shown rotated 90° clockwise, so the stored
        // left half (bright) becomes the top half.
        let bytes = jpeg(40, 20, false, Some(6));
        let shown = DecodeLimits::PHOTO
            .decode(&bytes)
            .unwrap_or_else(|e| panic!("{e}"))
            .into_rgba8();
        assert_eq!(shown.dimensions(), (20, 40));
        assert!(shown.get_pixel(10, 5).0[0] > 200);
        assert!(shown.get_pixel(10, 35).0[0] < 100);
    }

    #[test]
    fn the_feather_measured_in_the_brushs_box_equals_the_whole_images() {
        for mask in brushes(90, 60) {
            let window = editable_box(mask.weights()).unwrap_or((0, 0, 0, 0));
            let boxed = BoxDistance::new(mask.weights(), window, 24);
            let whole = distance_to_outside(mask.weights(), 24);
            let (x0, y0, x1, y1) = window;
            for y in y0..y1 {
                let row = boxed.row(y, x0);
                for x in x0..x1 {
                    let at = row.get((x - x0) as usize).copied();
                    assert_eq!(at, Some(whole[(y * 90 + x) as usize]), "({x},{y})");
                }
            }
        }
    }

    #[test]
    fn a_window_of_a_resize_is_that_part_of_the_whole_resize_within_a_level() {
        let small = checker(36, 24);
        let whole = resize_window(&small, (90, 60), (0, 0, 90, 60));
        for (x0, y0, x1, y1) in [(21, 7, 60, 44), (0, 30, 25, 60), (89, 0, 90, 1)] {
            let part = resize_window(&small, (90, 60), (x0, y0, x1, y1));
            let expected = image::imageops::crop_imm(&whole, x0, y0, x1 - x0, y1 - y0).to_image();
            assert_eq!(part.dimensions(), expected.dimensions());
            let off = part
                .as_raw()
                .iter()
                .zip(expected.as_raw())
                .map(|(a, b)| a.abs_diff(*b))
                .max();
            assert!(off <= Some(1), "window ({x0},{y0})-({x1},{y1}): {off:?}");
        }
    }

    #[test]
    fn an_empty_mask_composites_to_the_original() {
        let original = checker(30, 20);
        let edited = RgbaImage::from_pixel(10, 10, Rgba([255, 0, 0, 255]));
        let empty = Mask::from_weights(GrayImage::new(30, 20));
        let out = composite(&original, &edited, &empty, 4).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, original);
    }

    #[test]
    fn composite_refuses_a_mask_of_another_size() {
        let original = checker(40, 30);
        let err = composite(&original, &original, &half_mask(30, 40), 2).err();
        assert!(matches!(
            err,
            Some(ImagingError::SizeMismatch { what: "mask", .. })
        ));
    }

    #[test]
    fn leakage_counts_exactly_with_tolerance() {
        let original = RgbaImage::from_pixel(10, 10, Rgba([100, 100, 100, 255]));
        let mut result = original.clone();
        let mask = half_mask(10, 10); // 50 outside, 50 inside
        // Outside: 3 pixels changed beyond tolerance, 2 within it (codec noise).
        for (x, y, v) in [(0, 0, 200), (1, 0, 0), (2, 0, 111), (3, 0, 110), (4, 0, 90)] {
            result.put_pixel(x, y, Rgba([v, 100, 100, 255]));
        }
        // Inside changes never count.
        for x in 5..10 {
            result.put_pixel(x, 5, Rgba([0, 0, 0, 255]));
        }
        let l = leakage(&original, &result, &mask).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            l,
            Leakage {
                changed_outside: 3,
                outside: 50,
                ratio_ppm: 60_000
            }
        );
    }

    #[test]
    fn leakage_of_a_composite_is_zero() {
        let original = checker(64, 48);
        let edited = RgbaImage::from_pixel(64, 48, Rgba([0, 255, 0, 255]));
        let mask = half_mask(64, 48);
        let out = composite(&original, &edited, &mask, 6).unwrap_or_else(|e| panic!("{e}"));
        let l = leakage(&original, &out, &mask).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((l.changed_outside, l.outside, l.ratio_ppm), (0, 32 * 48, 0));
        let raw = leakage(&original, &edited, &mask).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(raw.ratio_ppm, 1_000_000);
    }

    /// [`leakage`] of a [`composite`] of `original` through `mask`, compared only inside the
    /// mask's editable box: outside it a composite is the original's bytes, copied (the
    /// `composite_never_touches_a_pixel_outside_the_mask` property), so comparing 12 MP there
    /// again would cost a fifth of the path and could find nothing. Outside pixels are still
    /// counted over the whole mask; the figures equal [`leakage`]'s for any composite.
    fn composite_leakage(
        original: &RgbaImage,
        result: &RgbaImage,
        mask: &Mask,
    ) -> Result<Leakage, ImagingError> {
        same_sizes(original, result, mask)?;
        let changed = editable_box(mask.weights()).map_or(0, |(x0, y0, x1, y1)| {
            let (x0, y0, x1, y1) = (x0 as usize, y0 as usize, x1 as usize, y1 as usize);
            changed_outside(original, result, mask, (y0..y1, x0..x1))
        });
        Ok(Leakage::of(changed, mask.outside_pixels()))
    }

    #[test]
    fn a_composites_leakage_measured_in_its_box_equals_the_whole_images() {
        let original = checker(90, 60);
        let edited = RgbaImage::from_pixel(45, 30, Rgba([0, 255, 0, 255]));
        for mask in brushes(90, 60) {
            let mut out = composite(&original, &edited, &mask, 4).unwrap_or_else(|e| panic!("{e}"));
            let whole = leakage(&original, &out, &mask).unwrap_or_else(|e| panic!("{e}"));
            let boxed = composite_leakage(&original, &out, &mask).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((boxed, whole.changed_outside), (whole, 0));
            // A pixel spilled past the brush but inside its box is found.
            let (x0, y0, x1, _) = editable_box(mask.weights()).unwrap_or_default();
            let spill = (x0..x1).find(|&x| mask.weight(x, y0) == 0).unwrap_or(x0);
            out.put_pixel(spill, y0, Rgba([255, 0, 255, 255]));
            let boxed = composite_leakage(&original, &out, &mask).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(boxed.changed_outside, 1);
        }
    }

    #[test]
    fn compositing_in_the_originals_pixels_gives_the_same_image_and_leakage() {
        let original = checker(90, 60);
        let edited = RgbaImage::from_pixel(45, 30, Rgba([0, 255, 0, 255]));
        let mut masks = brushes(90, 60).to_vec();
        masks.push(Mask::from_weights(GrayImage::new(90, 60)));
        for mask in masks {
            let copy = composite(&original, &edited, &mask, 4).unwrap_or_else(|e| panic!("{e}"));
            let (into, l) = composite_into(original.clone(), &edited, &mask, 4)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(into, copy);
            let whole = leakage(&original, &copy, &mask).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(l, whole);
        }
        let small = Mask::from_weights(GrayImage::new(9, 6));
        assert!(composite_into(original, &edited, &small, 4).is_err());
    }

    #[test]
    fn fit_within_keeps_aspect_and_never_upscales() {
        assert_eq!(fit_within((4032, 3024), 1024), (1024, 768));
        assert_eq!(fit_within((3024, 4032), 1024), (768, 1024));
        assert_eq!(fit_within((800, 600), 1024), (800, 600));
        assert_eq!(fit_within((10_000, 1), 1024), (1024, 1));
        assert_eq!(downscale(&checker(300, 100), 150).dimensions(), (150, 50));
    }

    #[test]
    fn dilation_grows_the_editable_area() {
        let mut weights = GrayImage::new(9, 9);
        weights.put_pixel(4, 4, Luma([255]));
        let grown = Mask::from_weights(weights).dilated(2);
        assert_eq!(grown.editable_pixels(), 25);
        assert_eq!(grown.weight(2, 2), 255);
        assert_eq!(grown.weight(1, 4), 0);
    }

    proptest! {
        #[test]
        fn composite_never_touches_a_pixel_outside_the_mask(
            w in 1u32..24,
            h in 1u32..24,
            seed in any::<u64>(),
            feather in 0u32..8,
            edited_w in 1u32..30,
            edited_h in 1u32..30,
        ) {
            let noise = |x: u32, y: u32, k: u64| -> u8 {
                let v = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(u64::from(x) * 31 + u64::from(y) * 17 + k)
                    .rotate_left(17)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15);
                (v >> 56) as u8
            };
            let original = RgbaImage::from_fn(w, h, |x, y| Rgba([noise(x, y, 1), noise(x, y, 2), noise(x, y, 3), noise(x, y, 4)]));
            let edited = RgbaImage::from_fn(edited_w, edited_h, |x, y| Rgba([noise(x, y, 5), noise(x, y, 6), noise(x, y, 7), noise(x, y, 8)]));
            let mask = Mask::from_weights(GrayImage::from_fn(w, h, |x, y| {
                let n = noise(x, y, 9);
                Luma([if n < 100 { 0 } else { n }])
            }));
            let out = composite(&original, &edited, &mask, feather);
            prop_assert!(out.is_ok());
            let out = out.unwrap_or_default();
            prop_assert_eq!(out.dimensions(), (w, h));
            for (x, y, p) in out.enumerate_pixels() {
                if mask.weight(x, y) == 0 {
                    prop_assert_eq!(p, original.get_pixel(x, y));
                }
            }
            let l = leakage(&original, &out, &mask);
            prop_assert_eq!(l.map(|l| l.changed_outside).ok(), Some(0));
        }
    }
}
