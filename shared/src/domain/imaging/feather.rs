//! The feather's ramp: chamfer distances from each editable pixel to the selection's edge,
//! measured within the selection's box.

use image::GrayImage;

/// Distance (chamfer 3-4, in thirds of a pixel) from each pixel to the nearest pixel with
/// weight 0, at most `cap` (`cap` when there is none).
pub(super) fn distance_to_outside(mask: &GrayImage, cap: u16) -> Vec<u16> {
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

/// [`distance_to_outside`] within a box around the selection, grown by one pixel: that ring
/// is all weight 0 (or the image's edge), so every distance inside equals the whole image's.
pub(super) struct BoxDistance {
    x0: u32,
    y0: u32,
    width: usize,
    d: Vec<u16>,
}

impl BoxDistance {
    pub(super) fn new(
        weights: &GrayImage,
        (x0, y0, x1, y1): (u32, u32, u32, u32),
        cap: u16,
    ) -> BoxDistance {
        let (x0, y0) = (x0.saturating_sub(1), y0.saturating_sub(1));
        let x1 = x1.saturating_add(1).min(weights.width());
        let y1 = y1.saturating_add(1).min(weights.height());
        let grown = super::resize::crop(weights, (x0, y0, x1, y1));
        BoxDistance {
            x0,
            y0,
            width: (x1 - x0) as usize,
            d: distance_to_outside(&grown, cap),
        }
    }

    /// The distances of row `y` of the whole image from the box's first column (`x0` of the
    /// selection's box: one pixel right of this box's own edge, or 0 at the image's edge).
    pub(super) fn row(&self, y: u32, from_x: u32) -> &[u16] {
        let start = (y - self.y0) as usize * self.width + (from_x - self.x0) as usize;
        let end = (y - self.y0 + 1) as usize * self.width;
        self.d.get(start..end).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::imaging::composite::editable_box;
    use crate::domain::imaging::mask::Mask;
    use crate::domain::imaging::test_images::brushes;
    use image::Luma;

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
}
