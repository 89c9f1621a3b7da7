//! Putting the model's edit back over the original through the mask, feathered inward, so
//! every pixel outside the selection stays the original's.

use image::{GrayImage, RgbaImage};

use super::error::{ImagingError, check_size};
use super::feather::BoxDistance;
use super::leakage::{Leakage, changed_in_row};
use super::mask::Mask;
use super::resize::{crop, resize_window};

/// Largest inward feather accepted by [`composite`]; wider feathers are clamped.
pub const MAX_FEATHER_PX: u32 = 64;

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

/// [`composite`] in the original's own pixels, with its leakage. Each row of the selection's
/// box is copied aside just before it is blended and compared with its blended self right
/// after, while both are in the cache: no copy of the box (13 MB at 12 MP) and no second pass
/// over it. The figures equal [`leakage`]'s of [`composite`]'s result, compared inside the
/// mask's box only: outside it a composite is the original's bytes (the
/// `composite_never_touches_a_pixel_outside_the_mask` property).
///
/// [`leakage`]: super::leakage::leakage
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
    let mut out = original;
    let changed = blend_into(&mut out, edited, mask, feather_px, window);
    Ok((out, Leakage::of(changed, outside)))
}

/// The edited image blended into `out` within `window`, the mask's editable box (the
/// rule: [`composite`]). `mask` is `out`'s size. Returns the pixels outside the mask that
/// the blend changed beyond the tolerance, each row measured against its copy from before.
fn blend_into(
    out: &mut RgbaImage,
    edited: &RgbaImage,
    mask: &Mask,
    feather_px: u32,
    window: (u32, u32, u32, u32),
) -> u64 {
    let (w, h) = out.dimensions();
    let (x0, y0, x1, y1) = window;
    let patch = if edited.dimensions() == (w, h) {
        crop(edited, window)
    } else {
        resize_window(edited, (w, h), window)
    };
    let feather = feather_px.min(MAX_FEATHER_PX);
    // The distance is in thirds of a pixel (chamfer 3-4), ramped over `span`.
    let span = feather.max(1) * 3;
    let dist = (feather > 0).then(|| BoxDistance::new(mask.weights(), window, span as u16));
    let stride = w as usize;
    let (bx0, bx1) = (x0 as usize, x1 as usize);
    let rows = out
        .chunks_exact_mut(stride * 4)
        .zip(mask.weights.chunks_exact(stride))
        .skip(y0 as usize)
        .take((y1 - y0) as usize)
        .zip(patch.chunks_exact((bx1 - bx0) * 4));
    let (mut before, mut changed) = (Vec::with_capacity((bx1 - bx0) * 4), 0);
    for (y, ((out_row, weight_row), patch_row)) in (y0..).zip(rows) {
        let (Some(out_row), Some(weight_row)) =
            (out_row.get_mut(bx0 * 4..bx1 * 4), weight_row.get(bx0..bx1))
        else {
            continue; // unreachable: the box is inside the image
        };
        before.clear();
        before.extend_from_slice(out_row);
        let ramps = dist.as_ref().map(|d| d.row(y, x0));
        blend_row(out_row, patch_row, weight_row, ramps, span);
        changed += changed_in_row(&before, out_row, weight_row);
    }
    changed
}

/// One row of the blend: each pixel with a weight takes the edit by weight × min(distance,
/// span) over 255 × span (`ramps` = None: a hard edge, the whole span everywhere). At most
/// 255 × 192 × 255 before the division: u32 holds it.
fn blend_row(out: &mut [u8], patch: &[u8], weights: &[u8], ramps: Option<&[u16]>, span: u32) {
    let den = 255 * span;
    let pixels = out.chunks_exact_mut(4).zip(patch.chunks_exact(4));
    for (i, ((px, ed), &weight)) in pixels.zip(weights).enumerate() {
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

/// The smallest box `(x0, y0, x1, y1)` (x1, y1 exclusive) holding every pixel with a weight;
/// `None` when nothing is editable.
pub(super) fn editable_box(weights: &GrayImage) -> Option<(u32, u32, u32, u32)> {
    let w = weights.width() as usize;
    let mut found: Option<(usize, usize, usize, usize)> = None;
    for (y, row) in weights.as_raw().chunks_exact(w.max(1)).enumerate() {
        // An empty row, the common case, in one vectorised pass (no early exit to stop it).
        if row.iter().fold(0u8, |any, &v| any | v) == 0 {
            continue;
        }
        let Some(first) = first_set(row) else {
            continue;
        };
        let last = last_set(row).unwrap_or(first);
        found = Some(match found {
            None => (first, y, last + 1, y + 1),
            Some((x0, y0, x1, _)) => (x0.min(first), y0, x1.max(last + 1), y + 1),
        });
    }
    found.map(|(x0, y0, x1, y1)| (x0 as u32, y0 as u32, x1 as u32, y1 as u32))
}

/// Runs of this many weights are skipped by one vectorised OR when all are 0.
const RUN: usize = 64;

/// The first pixel with a weight: whole runs of 0 skipped, then that run searched.
fn first_set(row: &[u8]) -> Option<usize> {
    let (run, r) =
        (row.chunks(RUN).enumerate()).find(|(_, r)| r.iter().fold(0, |a, &v| a | v) != 0)?;
    r.iter().position(|&v| v != 0).map(|i| run * RUN + i)
}

/// The last pixel with a weight, as [`first_set`] from the end.
fn last_set(row: &[u8]) -> Option<usize> {
    let (run, r) =
        (row.chunks(RUN).enumerate()).rfind(|(_, r)| r.iter().fold(0, |a, &v| a | v) != 0)?;
    r.iter().rposition(|&v| v != 0).map(|i| run * RUN + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::imaging::feather::distance_to_outside;
    use crate::domain::imaging::leakage::leakage;
    use crate::domain::imaging::test_images::{brushes, checker, half_mask};
    use image::{Luma, Rgba};
    use proptest::prelude::*;

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

    proptest! {
        /// The box and the outside count, found by skipping runs of 0, are the pixel-by-pixel
        /// ones: rows of 1 to 300 weights (under, at and over a run of 64, and 255 for the
        /// count's runs), a few pixels set anywhere.
        #[test]
        fn the_editable_box_and_outside_count_are_every_pixels(
            w in 1u32..300,
            h in 1u32..6,
            set in proptest::collection::vec((any::<u32>(), any::<u32>(), 1u8..), 0..5),
        ) {
            let mut weights = GrayImage::new(w, h);
            for &(x, y, v) in &set {
                weights.put_pixel(x % w, y % h, Luma([v]));
            }
            let lit: Vec<(u32, u32)> = weights.enumerate_pixels().filter(|p| p.2.0[0] != 0).map(|p| (p.0, p.1)).collect();
            let naive = (!lit.is_empty()).then(|| {
                let xs = lit.iter().map(|p| p.0);
                let ys = lit.iter().map(|p| p.1);
                (xs.clone().min().unwrap_or(0), ys.clone().min().unwrap_or(0), xs.max().unwrap_or(0) + 1, ys.max().unwrap_or(0) + 1)
            });
            prop_assert_eq!(editable_box(&weights), naive);
            let outside = u64::from(w * h) - lit.len() as u64;
            prop_assert_eq!(Mask::from_weights(weights).outside_pixels(), outside);
        }

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
