//! Measuring what an edit changed outside its selection, as stored integer figures.

use image::{Rgba, RgbaImage};
use serde::{Deserialize, Serialize};

use super::error::{ImagingError, check_size};
use super::mask::Mask;

/// Per-channel difference (0..=255) at or below which a pixel counts as unchanged in
/// [`leakage`]. Lossless results differ by exactly 0; 10 absorbs JPEG/WebP re-encoding noise
/// (typically 1–6 per channel at normal quality) while any visible restyle (a tint, a texture,
/// a posterised tone) differs by far more.
pub const LEAKAGE_TOLERANCE: u8 = 10;

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
    pub(super) fn of(changed_outside: u64, outside: u64) -> Leakage {
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
pub(super) fn changed_in_row(original: &[u8], result: &[u8], weights: &[u8]) -> u64 {
    if original == result {
        return 0; // equal byte for byte: one comparison, not a pixel walk
    }
    // Branch-free, so it vectorises: a row inside a selection is mostly weighted pixels.
    let pixels = original.chunks_exact(4).zip(result.chunks_exact(4));
    let outside_and_changed = pixels
        .zip(weights)
        .map(|((o, r), &m)| u64::from(m == 0 && channels_differ(o, r, LEAKAGE_TOLERANCE)));
    outside_and_changed.sum()
}

/// True when any channel differs by more than `tolerance`.
pub fn pixel_changed(a: &Rgba<u8>, b: &Rgba<u8>, tolerance: u8) -> bool {
    channels_differ(&a.0, &b.0, tolerance)
}

/// Without an early exit (a fold, not `any`), so a row's count vectorises.
fn channels_differ(a: &[u8], b: &[u8], tolerance: u8) -> bool {
    a.iter()
        .zip(b)
        .fold(false, |any, (x, y)| any | (x.abs_diff(*y) > tolerance))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::imaging::composite::{composite, editable_box};
    use crate::domain::imaging::test_images::{brushes, checker, half_mask};

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
}
