//! The mask: where an edit may change pixels, read from an uploaded PNG by either convention,
//! and shown to the models.

use std::io::Cursor;

use image::imageops::FilterType;
use image::{DynamicImage, GrayImage, ImageFormat, Luma, RgbaImage};

use super::decode::DecodeLimits;
use super::encode::encode_png_for_model;
use super::error::{ImagingError, check_size};
use super::resize::shrink_by_area;

/// Where an edit may change pixels: one weight per pixel, 0 = keep the original exactly,
/// 255 = fully editable, values between = a soft edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mask {
    pub(super) weights: GrayImage,
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
        // Counted in u8 over runs of at most 255 (no overflow), which vectorises 16 or 32 to
        // an instruction; a `usize` count per pixel was 7 ms of a 12 MP mask.
        let runs = self.weights.as_raw().chunks(255);
        runs.map(|run| u64::from(run.iter().fold(0u8, |n, &w| n + u8::from(w == 0))))
            .sum()
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
        let mut raw = vec![0u8; self.weights.as_raw().len() * 4];
        for (px, &m) in raw.chunks_exact_mut(4).zip(self.weights.as_raw()) {
            px[3] = 255 - m;
        }
        let rgba = RgbaImage::from_raw(w, h, raw).unwrap_or_else(|| RgbaImage::new(w, h));
        encode_png_for_model(&rgba)
    }

    /// The mask as a picture for a vision model: white = may change, black = keep. Opaque,
    /// because vision models tend to flatten transparency onto an arbitrary colour.
    pub fn to_visual(&self) -> RgbaImage {
        let (w, h) = self.dimensions();
        let mut raw = vec![255u8; self.weights.as_raw().len() * 4];
        for (px, &v) in raw.chunks_exact_mut(4).zip(self.weights.as_raw()) {
            px[..3].fill(v);
        }
        RgbaImage::from_raw(w, h, raw).unwrap_or_else(|| RgbaImage::new(w, h))
    }
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
        match self.channels {
            1 => self.push_pixels::<1>(row),
            2 => self.push_pixels::<2>(row),
            3 => self.push_pixels::<3>(row),
            _ => self.push_pixels::<4>(row),
        }
    }

    /// One row of `C`-channel pixels. The checks are folds over fixed-size pixels, with no
    /// early exit, so they vectorise (three pixel-by-pixel passes were a third of the mask's
    /// time at 12 MP).
    fn push_pixels<const C: usize>(&mut self, row: &[u8]) {
        let (pixels, _) = row.as_chunks::<C>();
        // Every alpha 255 ⇔ their AND is 255.
        let opaque = || pixels.iter().fold(255u8, |all, p| all & p[C - 1]) == 255;
        if C.is_multiple_of(2) && (self.transparent || !opaque()) {
            // Every earlier pixel was opaque: weight 0 under the alpha rule.
            let before = self.luma.len().max(self.alpha.len());
            self.alpha.resize(before, 0);
            self.alpha.extend(pixels.iter().map(|p| 255 - p[C - 1]));
            self.transparent = true;
        }
        if self.transparent {
            return;
        }
        // Grey pixels (a brush canvas's white on black, anti-aliased) are their own luma.
        let (g, b) = (1.min(C - 1), 2.min(C - 1));
        let grey = || {
            pixels
                .iter()
                .fold(0u8, |d, p| d | (p[0] ^ p[g]) | (p[g] ^ p[b]))
                == 0
        };
        if C < 3 || grey() {
            self.luma.extend(pixels.iter().map(|p| p[0]));
            return;
        }
        // Colour to luma by `image`'s own conversion (the general path's `to_luma8`), a row
        // at a time.
        let width = (row.len() / C) as u32;
        let line = match C {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::imaging::test_images::png_of;
    use image::{ImageEncoder, Rgba};

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

    #[test]
    fn dilation_grows_the_editable_area() {
        let mut weights = GrayImage::new(9, 9);
        weights.put_pixel(4, 4, Luma([255]));
        let grown = Mask::from_weights(weights).dilated(2);
        assert_eq!(grown.editable_pixels(), 25);
        assert_eq!(grown.weight(2, 2), 255);
        assert_eq!(grown.weight(1, 4), 0);
    }
}
