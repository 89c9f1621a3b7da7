//! Sample photos drawn in code (nothing is downloaded): simple subjects on a gentle gradient
//! with a little deterministic grain, 512×384, as PNG bytes. They are what the tests, the
//! local run and the CLI use; the stand-in's scene analysis finds their subjects exactly.

use atelier_shared::domain::imaging::{ImagingError, Mask, encode_png};
use image::{GrayImage, Luma, Rgba, RgbaImage};

pub const WIDTH: u32 = 512;
pub const HEIGHT: u32 = 384;

fn grain(x: u32, y: u32, amplitude: i32) -> i32 {
    let mut v = x.wrapping_mul(0x2545_f491) ^ y.wrapping_mul(0x9e37_79b9);
    v ^= v >> 13;
    v = v.wrapping_mul(0x5bd1_e995);
    v ^= v >> 15;
    (v % (2 * amplitude as u32 + 1)) as i32 - amplitude
}

fn px(rgb: [i32; 3]) -> Rgba<u8> {
    Rgba([
        rgb[0].clamp(0, 255) as u8,
        rgb[1].clamp(0, 255) as u8,
        rgb[2].clamp(0, 255) as u8,
        255,
    ])
}

/// A soft daylight gradient, top (cool) to bottom (warm).
fn backdrop() -> RgbaImage {
    RgbaImage::from_fn(WIDTH, HEIGHT, |x, y| {
        let t = y as i32 * 100 / HEIGHT as i32;
        let top = [206, 218, 228];
        let bottom = [222, 214, 200];
        let g = grain(x, y, 3);
        px([0, 1, 2].map(|c| top[c] + (bottom[c] - top[c]) * t / 100 + g))
    })
}

fn in_ellipse(x: u32, y: u32, cx: i32, cy: i32, rx: i32, ry: i32) -> bool {
    let (dx, dy) = (x as i64 - i64::from(cx), y as i64 - i64::from(cy));
    let (rx, ry) = (i64::from(rx), i64::from(ry));
    dx * dx * ry * ry + dy * dy * rx * rx <= rx * rx * ry * ry
}

/// Paints `colour` with fur-like grain and a top-lit shade where `inside` holds.
fn paint(img: &mut RgbaImage, colour: [i32; 3], inside: impl Fn(u32, u32) -> bool) {
    for (x, y, p) in img.enumerate_pixels_mut() {
        if inside(x, y) {
            let shade = 110 - (y as i32 * 20 / HEIGHT as i32);
            let g = grain(x, y, 12);
            *p = px(colour.map(|v| v * shade / 100 + g));
        }
    }
}

/// A cat-like pet sitting at (cx, cy) (the body's centre), `scale` percent.
fn draw_pet(img: &mut RgbaImage, cx: i32, cy: i32, scale: i32, colour: [i32; 3]) {
    let s = |v: i32| v * scale / 100;
    paint(img, colour, |x, y| {
        let body = in_ellipse(x, y, cx, cy, s(95), s(60));
        let head = in_ellipse(x, y, cx + s(80), cy - s(65), s(42), s(38));
        // Ears: triangles above the head.
        let ear = |ex: i32| {
            let (dx, dy) = (x as i32 - (cx + s(ex)), (cy - s(95)) - y as i32);
            dy >= 0 && dy <= s(30) && dx.abs() * 30 <= (s(30) - dy) * 14
        };
        let tail = in_ellipse(x, y, cx - s(95), cy - s(30), s(14), s(45));
        body || head || ear(62) || ear(100) || tail
    });
}

fn png(img: &RgbaImage) -> Vec<u8> {
    // Encoding a valid in-memory image cannot fail; an empty result would fail loudly in any
    // test that decodes it.
    encode_png(img).unwrap_or_default()
}

/// One brown pet, centre-left, clear of the frame's edges.
pub fn single_pet_image() -> RgbaImage {
    let mut img = backdrop();
    draw_pet(&mut img, 230, 250, 100, [140, 95, 60]);
    img
}

/// Two pets, one on the left and one on the right, well apart.
pub fn two_pets_image() -> RgbaImage {
    let mut img = backdrop();
    draw_pet(&mut img, 120, 260, 70, [140, 95, 60]);
    draw_pet(&mut img, 360, 250, 75, [105, 105, 112]);
    img
}

/// A person from the chest up, centred, the shoulders running off the bottom edge.
pub fn portrait_image() -> RgbaImage {
    let mut img = backdrop();
    let (cx, head_y) = (256i32, 140i32);
    paint(&mut img, [60, 90, 160], |x, y| {
        in_ellipse(x, y, cx, 400, 150, 170) && y as i32 > 240
    });
    paint(&mut img, [205, 160, 130], |x, y| {
        in_ellipse(x, y, cx, head_y, 55, 68)
            || (x.abs_diff(cx as u32) < 24 && (200..260).contains(&y))
    });
    paint(&mut img, [60, 45, 35], |x, y| {
        in_ellipse(x, y, cx, head_y - 30, 58, 42) && (y as i32) < head_y - 20
    });
    img
}

pub fn single_pet() -> Vec<u8> {
    png(&single_pet_image())
}

pub fn two_pets() -> Vec<u8> {
    png(&two_pets_image())
}

pub fn portrait() -> Vec<u8> {
    png(&portrait_image())
}

/// A brushed circle as a mask in OpenAI's convention (transparent = editable), the samples'
/// size.
pub fn circle_mask(cx: u32, cy: u32, r: u32) -> Result<Vec<u8>, ImagingError> {
    circle_weights(cx, cy, r).to_alpha_png()
}

/// The same circle as a [`Mask`].
pub fn circle_weights(cx: u32, cy: u32, r: u32) -> Mask {
    let r = i64::from(r);
    Mask::from_weights(GrayImage::from_fn(WIDTH, HEIGHT, |x, y| {
        let (dx, dy) = (i64::from(x) - i64::from(cx), i64::from(y) - i64::from(cy));
        Luma([if dx * dx + dy * dy <= r * r { 255 } else { 0 }])
    }))
}
