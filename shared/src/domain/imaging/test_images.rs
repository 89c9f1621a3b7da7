//! Images the stages' unit tests share.

use image::{GrayImage, Luma, Rgba, RgbaImage};

use super::encode::encode_png;
use super::mask::Mask;

pub(super) fn png_of(image: &RgbaImage) -> Vec<u8> {
    encode_png(image).unwrap_or_default()
}

pub(super) fn checker(w: u32, h: u32) -> RgbaImage {
    RgbaImage::from_fn(w, h, |x, y| {
        Rgba([
            (x * 7 % 256) as u8,
            (y * 5 % 256) as u8,
            ((x + y) % 256) as u8,
            255,
        ])
    })
}

pub(super) fn half_mask(w: u32, h: u32) -> Mask {
    Mask::from_weights(GrayImage::from_fn(w, h, |x, _| {
        Luma([if x >= w / 2 { 255 } else { 0 }])
    }))
}

/// A round brush away from the edges, and one touching two of them.
pub(super) fn brushes(w: u32, h: u32) -> [Mask; 2] {
    let disc = |cx: i64, cy: i64, r: i64| {
        Mask::from_weights(GrayImage::from_fn(w, h, |x, y| {
            let (dx, dy) = (i64::from(x) - cx, i64::from(y) - cy);
            Luma([if dx * dx + dy * dy < r * r { 200 } else { 0 }])
        }))
    };
    [disc(40, 30, 12), disc(0, 59, 25)]
}
