//! Scaling: images to fit a side (the vision models', the thumbnail's) or a window of a resize,
//! and a mask shrunk by area.

use image::imageops::FilterType;
use image::{GrayImage, ImageBuffer, RgbaImage};

/// Long side, in pixels, of images sent to the vision model. Vision models downscale larger
/// inputs themselves (and bill by tiles), so sending more only costs bandwidth and tokens.
pub const VISION_MAX_SIDE: u32 = 1024;

/// `src` shrunk to `width`×`height` (each at most the source's and not 0), each target pixel
/// the exact average of the source area it covers, rounded (`imageops::thumbnail` leaves out
/// the partly covered edge pixels, and was a tenth of the 12 MP path's time), separably in
/// integers: positions are in units of 1/width (1/height) of a source pixel, so every overlap
/// is an integer.
pub(super) fn shrink_by_area(src: &GrayImage, width: u32, height: u32) -> GrayImage {
    // Every area sum is at most 255 × sw × sh: in u32 up to 16 MP, whose products and
    // conversion to f64 are single instructions (u64's are not, on SSE2).
    let areas_fit_u32 =
        255 * u64::from(src.width()) * u64::from(src.height()) <= u64::from(u32::MAX);
    shrink_by_area_in(src, width, height, areas_fit_u32)
}

/// [`shrink_by_area`], its column sums in u32 when `narrow_areas`, else in u64.
fn shrink_by_area_in(src: &GrayImage, width: u32, height: u32, narrow_areas: bool) -> GrayImage {
    let (sw, sh) = (src.width() as usize, src.height() as usize);
    let (w, h) = (width as usize, height as usize);
    if w == 0 || h == 0 || sw == 0 || w > sw || h > sh {
        return image::imageops::thumbnail(src, width, height);
    }
    // Each target column's source pixels and overlaps, which sum to `sw`.
    let taps: Vec<Vec<(usize, u32)>> = (0..w).map(|j| overlaps(j, w, sw)).collect();
    // Rows first (a weighted sum of whole source rows, which vectorises), then columns;
    // at most 255 × 8192 per column sum, so u32 holds it. The whole rows' sum is kept in u16
    // when it cannot overflow, so both products below are of 16-bit numbers (SSE2 has no
    // 32-bit vector multiply: it was a third of the shrink's time).
    let narrow = h <= usize::from(u16::MAX) && (sh / h + 1) * 255 <= usize::from(u16::MAX);
    let (mut column_sums, mut whole_rows) = (vec![0u32; sw], vec![0u16; sw]);
    let mut out = Vec::with_capacity(w * h);
    // The rounded quotient in f64: exact, since every sum is below 2^53 and a quotient
    // short of an integer by at least 1/whole stays short of it (a division per pixel in
    // u64 was a fifth of the shrink's time).
    let whole = (sw * sh) as f64;
    let half = (whole / 2.0).floor();
    for i in 0..h {
        column_sums.fill(0);
        whole_rows.fill(0);
        // Rows the target row covers whole are added as they are and weighted once (no
        // multiplication per pixel); the partly covered edge rows by their overlap.
        for (y, dy) in overlaps(i, h, sh) {
            let line = src.as_raw().get(y * sw..(y + 1) * sw).unwrap_or(&[]);
            if narrow && dy as usize == h {
                let rows = whole_rows.iter_mut().zip(line);
                rows.for_each(|(s, &v)| *s += u16::from(v));
            } else {
                add_weighted(&mut column_sums, line, dy);
            }
        }
        let weight = u16::try_from(h).unwrap_or(u16::MAX); // `narrow`: h fits
        let sums = column_sums.iter_mut().zip(&whole_rows);
        sums.for_each(|(s, &v)| *s += u32::from(v) * u32::from(weight));
        let sum = |x: usize| column_sums.get(x).copied().unwrap_or(0);
        if narrow_areas {
            out.extend(taps.iter().map(|taps| {
                let area: u32 = taps.iter().map(|&(x, dx)| sum(x) * dx).sum();
                ((f64::from(area) + half) / whole) as u8
            }));
        } else {
            out.extend(taps.iter().map(|taps| {
                let area: u64 = taps
                    .iter()
                    .map(|&(x, dx)| u64::from(sum(x)) * u64::from(dx))
                    .sum();
                ((area as f64 + half) / whole) as u8
            }));
        }
    }
    GrayImage::from_raw(width, height, out)
        .unwrap_or_else(|| image::imageops::thumbnail(src, width, height))
}

/// `sums[x] += line[x] × weight`, as a product of 16-bit numbers when the weight fits.
fn add_weighted(sums: &mut [u32], line: &[u8], weight: u32) {
    let pairs = sums.iter_mut().zip(line);
    match u16::try_from(weight) {
        Ok(w) => pairs.for_each(|(s, &v)| *s += u32::from(v) * u32::from(w)),
        Err(_) => pairs.for_each(|(s, &v)| *s += u32::from(v) * weight),
    }
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

/// The box `(x0, y0, x1, y1)` (x1, y1 exclusive, inside the image) of `image`, copied row by
/// row (`SubImage::to_image` copies pixel by pixel: 13 MB of a 12 MP composite's box took a
/// tenth of its time).
pub(super) fn crop<P: image::Pixel<Subpixel = u8> + 'static>(
    image: &ImageBuffer<P, Vec<u8>>,
    (x0, y0, x1, y1): (u32, u32, u32, u32),
) -> ImageBuffer<P, Vec<u8>> {
    let channels = usize::from(P::CHANNEL_COUNT);
    let stride = (image.width() as usize * channels).max(1);
    let columns = x0 as usize * channels..x1 as usize * channels;
    let (rows, width) = ((y1 - y0) as usize, columns.len());
    let mut out = Vec::with_capacity(width * rows);
    let lines = image
        .as_raw()
        .chunks_exact(stride)
        .skip(y0 as usize)
        .take(rows);
    for line in lines {
        out.extend_from_slice(line.get(columns.clone()).unwrap_or(&[]));
    }
    ImageBuffer::from_raw(x1 - x0, y1 - y0, out).unwrap_or_else(|| {
        // Unreachable for a box inside the image; never panic on it.
        image::imageops::crop_imm(image, x0, y0, x1 - x0, y1 - y0).to_image()
    })
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
pub(super) fn resize_window(
    image: &RgbaImage,
    full: (u32, u32),
    window: (u32, u32, u32, u32),
) -> RgbaImage {
    use fast_image_resize::{FilterType as Filter, PixelType, ResizeAlg, ResizeOptions, Resizer};
    let (sw, sh) = image.dimensions();
    let (x0, y0, x1, y1) = window;
    let (sx, sy) = (
        f64::from(sw) / f64::from(full.0),
        f64::from(sh) / f64::from(full.1),
    );
    let filter = if full.0 < sw || full.1 < sh {
        // The mean of the source pixels under each target pixel, as the mask is shrunk (the
        // model's photo and mask then agree at its edge), and a fifth faster than the
        // triangle it replaced (`shrinking_a_photo_takes_near_the_mean_…`).
        Filter::Box
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
    use crate::domain::imaging::test_images::checker;
    use image::{Luma, RgbaImage};

    /// The mean of the source area under target pixel (i, j), by its definition in floats.
    fn area_mean(src: &GrayImage, (w, h): (u32, u32), (i, j): (u32, u32)) -> f64 {
        let (sx, sy) = (
            f64::from(src.width()) / f64::from(w),
            f64::from(src.height()) / f64::from(h),
        );
        let overlap =
            |p: u32, lo: f64, hi: f64| (f64::from(p + 1).min(hi) - f64::from(p).max(lo)).max(0.0);
        let (xs, ys) = (f64::from(i) * sx, f64::from(j) * sy);
        let mut sum = 0.0;
        // The pixels under the target's area only (the rest overlap it by 0).
        for y in ys.floor() as u32..((ys + sy).ceil() as u32).min(src.height()) {
            for x in xs.floor() as u32..((xs + sx).ceil() as u32).min(src.width()) {
                let a = overlap(x, xs, xs + sx) * overlap(y, ys, ys + sy);
                sum += a * f64::from(src.get_pixel(x, y).0[0]);
            }
        }
        sum / (sx * sy)
    }

    #[test]
    fn a_mask_shrinks_to_the_average_of_each_pixels_area() {
        let noisy = GrayImage::from_fn(61, 47, |x, y| {
            Luma([((x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 13) as u8])
        });
        // The last two are over 256 source rows per target row: every row takes the u32 path.
        let tall = GrayImage::from_fn(3, 700, |x, y| Luma([(x * 97 + y * 13) as u8 | 0x80]));
        let cases = [(23, 18), (61, 1), (1, 47), (30, 23), (61, 47), (60, 46)];
        let cases = cases.map(|c| (&noisy, c)).into_iter();
        for (src, (w, h)) in cases.chain([(&tall, (2, 2)), (&tall, (3, 1))]) {
            let ours = shrink_by_area(src, w, h);
            assert_eq!(ours.dimensions(), (w, h));
            // Over 16 MP the areas are summed in u64: the same pixels.
            assert_eq!(shrink_by_area_in(src, w, h, false), ours, "{w}x{h} in u64");
            for (i, j, got) in ours.enumerate_pixels() {
                let want = area_mean(src, (w, h), (i, j));
                assert!(
                    (f64::from(got.0[0]) - want).abs() <= 0.5 + 1e-9,
                    "{w}x{h} ({i},{j})"
                );
            }
        }
    }

    /// A photo's shrink (the model's copy, the review's) is near each target pixel's area
    /// mean: on a textured gradient at the 12 MP photo's ratios (to 1536 px and to 1024 px),
    /// every channel within 4 levels and 0.5 on average (measured: 3.3 and 0.37; the triangle
    /// filter it replaced, 2.4 and 0.33).
    #[test]
    fn shrinking_a_photo_takes_near_the_mean_of_the_pixels_under_each() {
        let photo = RgbaImage::from_fn(403, 302, |x, y| {
            let grain = ((x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 28) as u8;
            image::Rgba([
                (x / 2) as u8 ^ grain,
                (y * 3 / 4) as u8,
                ((x + y) / 3) as u8,
                255,
            ])
        });
        for side in [154, 102] {
            let small = downscale(&photo, side);
            let (mut worst, mut total) = (0.0f64, 0.0);
            for c in 0..4 {
                let channel =
                    GrayImage::from_fn(403, 302, |x, y| Luma([photo.get_pixel(x, y).0[c]]));
                for (i, j, got) in small.enumerate_pixels() {
                    let off = (f64::from(got.0[c])
                        - area_mean(&channel, small.dimensions(), (i, j)))
                    .abs();
                    (worst, total) = (worst.max(off), total + off);
                }
            }
            let mean = total / (small.as_raw().len() as f64);
            assert!(
                worst <= 4.0 && mean <= 0.5,
                "{side}: worst {worst:.2}, mean {mean:.3}"
            );
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
    fn fit_within_keeps_aspect_and_never_upscales() {
        assert_eq!(fit_within((4032, 3024), 1024), (1024, 768));
        assert_eq!(fit_within((3024, 4032), 1024), (768, 1024));
        assert_eq!(fit_within((800, 600), 1024), (800, 600));
        assert_eq!(fit_within((10_000, 1), 1024), (1024, 1));
        assert_eq!(downscale(&checker(300, 100), 150).dimensions(), (150, 50));
    }
}
