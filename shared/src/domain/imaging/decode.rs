//! Decoding untrusted uploads within hard limits, checked on the header before any pixel is
//! allocated.

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, RgbaImage};

use super::encode::delivered_png_max_bytes;
use super::error::ImagingError;
use crate::domain::edit::AssetKind;

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
    ///
    /// [`encode_png`]: super::encode::encode_png
    pub fn for_delivered((width, height): (u32, u32)) -> DecodeLimits {
        DecodeLimits {
            max_bytes: delivered_png_max_bytes(width, height),
            max_pixels: u64::from(width) * u64::from(height),
            max_side: width.max(height),
        }
    }

    /// Bytes the decoder may allocate: the pixels at 16 bits per channel RGBA (the widest
    /// PNG), which also covers its working buffers for 8-bit images.
    pub(super) fn max_alloc(self) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::imaging::test_images::{checker, png_of};

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
}
