//! The stand-in's "image model": a deterministic, visible, per-medium restyle. Inside the
//! region every pixel is posterised, pulled halfway toward the style's swatch colour, and given
//! the medium's texture (stitch lines, tiles with grout, flat facets, or fibre noise). The
//! same input always gives the same output, so tests can compare results byte for byte.

use atelier_shared::domain::StyleId;
use atelier_shared::domain::imaging::Mask;
use image::{Rgba, RgbaImage};

/// How far (pixels) the edit spills past a mask, as real image models do.
pub const MASK_SPILL_PX: u32 = 4;
/// How far the edit spills past the region it finds itself (no mask).
pub const REGION_SPILL_PX: u32 = 3;

#[derive(Debug, Clone, Copy)]
enum Texture {
    /// Diagonal stitch lines every `period` pixels.
    Stitches { period: u32 },
    /// Horizontal rows (crochet, knit) every `period` pixels, V-shaped.
    Rows { period: u32 },
    /// Square tiles of `size` with dark grout.
    Tiles { size: u32 },
    /// Triangular facets of `size`, flat colour each; `lead` draws dark lines between them.
    Facets { size: u32, lead: bool },
    /// Fibre or surface noise of this amplitude.
    Fibres { amplitude: i32 },
}

fn texture(style: StyleId) -> Texture {
    match style {
        StyleId::Embroidery => Texture::Stitches { period: 5 },
        StyleId::PatchworkQuilt => Texture::Stitches { period: 9 },
        StyleId::Crochet => Texture::Rows { period: 5 },
        StyleId::KnittedWool => Texture::Rows { period: 7 },
        StyleId::Mosaic => Texture::Tiles { size: 8 },
        StyleId::Beadwork => Texture::Tiles { size: 4 },
        StyleId::PaperQuilling => Texture::Tiles { size: 6 },
        StyleId::Origami => Texture::Facets {
            size: 24,
            lead: false,
        },
        StyleId::StainedGlass => Texture::Facets {
            size: 20,
            lead: true,
        },
        StyleId::WoodCarving | StyleId::LayeredPapercut => Texture::Facets {
            size: 14,
            lead: false,
        },
        StyleId::Linocut => Texture::Facets {
            size: 10,
            lead: true,
        },
        StyleId::NeedleFelt => Texture::Fibres { amplitude: 22 },
        StyleId::ClaySculpt | StyleId::PapierMache => Texture::Fibres { amplitude: 12 },
    }
}

fn hash(x: u32, y: u32) -> u32 {
    let mut v = x.wrapping_mul(0x9e37_79b1) ^ y.wrapping_mul(0x85eb_ca77);
    v ^= v >> 15;
    v = v.wrapping_mul(0x2c1b_3c6d);
    v ^ (v >> 12)
}

/// Posterise to four levels, then pull halfway toward the swatch.
fn tone(p: Rgba<u8>, swatch: [u8; 3]) -> [i32; 3] {
    let mut out = [0i32; 3];
    for c in 0..3 {
        let poster = i32::from(p.0[c] / 64) * 64 + 32;
        out[c] = (poster + i32::from(swatch[c])) / 2;
    }
    out
}

fn shade(rgb: [i32; 3], percent: i32) -> [i32; 3] {
    rgb.map(|v| v * percent / 100)
}

fn clamp(rgb: [i32; 3], alpha: u8) -> Rgba<u8> {
    Rgba([
        rgb[0].clamp(0, 255) as u8,
        rgb[1].clamp(0, 255) as u8,
        rgb[2].clamp(0, 255) as u8,
        alpha,
    ])
}

/// The restyled colour of pixel (x, y) of `original`.
fn restyled(original: &RgbaImage, x: u32, y: u32, style: StyleId) -> Rgba<u8> {
    let swatch = style.style().swatch;
    let here = *original.get_pixel(x, y);
    let sample = |sx: u32, sy: u32| {
        *original.get_pixel(sx.min(original.width() - 1), sy.min(original.height() - 1))
    };
    let rgb = match texture(style) {
        Texture::Stitches { period } => {
            let base = tone(here, swatch);
            if (x + y).is_multiple_of(period) {
                shade(base, 60)
            } else if (x + y) % period == 1 {
                shade(base, 120)
            } else {
                base
            }
        }
        Texture::Rows { period } => {
            let base = tone(here, swatch);
            let v = (x % (2 * period)).abs_diff(period);
            if (y + v).is_multiple_of(period) {
                shade(base, 65)
            } else {
                base
            }
        }
        Texture::Tiles { size } => {
            let base = tone(sample(x - x % size, y - y % size), swatch);
            if x.is_multiple_of(size) || y.is_multiple_of(size) {
                shade(base, 55)
            } else {
                base
            }
        }
        Texture::Facets { size, lead } => {
            let (cx, cy) = (x - x % size, y - y % size);
            let upper = x % size > y % size;
            let (sx, sy) = if upper {
                (cx + size * 2 / 3, cy + size / 3)
            } else {
                (cx + size / 3, cy + size * 2 / 3)
            };
            let base = tone(sample(sx, sy), swatch);
            let edge = x % size == y % size || x.is_multiple_of(size) || y.is_multiple_of(size);
            match (lead, edge, upper) {
                (true, true, _) => [25, 25, 30],
                (_, _, true) => shade(base, 115),
                _ => shade(base, 90),
            }
        }
        Texture::Fibres { amplitude } => {
            let base = tone(here, swatch);
            let n = (hash(x, y) % (2 * amplitude as u32 + 1)) as i32 - amplitude;
            base.map(|v| v + n)
        }
    };
    clamp(rgb, here.0[3])
}

/// Restyles the pixels of `image` where `region` is editable (weight > 0), in place.
pub fn restyle(image: &mut RgbaImage, region: &Mask, style: StyleId) {
    let original = image.clone();
    for (x, y, p) in image.enumerate_pixels_mut() {
        if region.weight(x, y) > 0 {
            *p = restyled(&original, x, y, style);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atelier_shared::domain::STYLES;
    use atelier_shared::domain::imaging::{LEAKAGE_TOLERANCE, pixel_changed};

    #[test]
    fn every_medium_visibly_changes_most_pixels_and_is_deterministic() {
        let original = RgbaImage::from_fn(64, 48, |x, y| {
            Rgba([(x * 4) as u8, (y * 5) as u8, 128, 255])
        });
        let region = Mask::full(64, 48);
        for style in STYLES {
            let mut a = original.clone();
            restyle(&mut a, &region, style.id);
            let mut b = original.clone();
            restyle(&mut b, &region, style.id);
            assert_eq!(a, b, "{} is not deterministic", style.name);
            let changed = a
                .pixels()
                .zip(original.pixels())
                .filter(|(p, q)| pixel_changed(p, q, LEAKAGE_TOLERANCE))
                .count();
            assert!(
                changed * 10 > 64 * 48 * 8,
                "{}: only {changed} changed",
                style.name
            );
        }
    }
}
