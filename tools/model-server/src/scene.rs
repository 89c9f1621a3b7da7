//! What the stand-in "sees" in a photo: the background is the dominant colour along the image
//! border; subjects are the connected groups of pixels far from that colour. Crude, but real
//! measurement on real pixels, and right for the generated samples (blobs on a gentle
//! gradient), which is what the tests need: a readiness check that finds two pets, an edit
//! that restyles only the pet, a review that measures what changed where.

use std::collections::HashMap;

use atelier_shared::domain::Target;
use atelier_shared::domain::imaging::Mask;
use image::{GrayImage, Luma, RgbaImage};

/// Sum of absolute RGB differences above which a pixel is not background.
pub const FAR_FROM_BACKGROUND: u32 = 90;

/// A connected group of pixels far from the background colour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub label: u32,
    pub area: u64,
    /// x0, y0 inclusive; x1, y1 exclusive.
    pub bbox: (u32, u32, u32, u32),
    pub centroid: (u32, u32),
    pub touches_border: bool,
}

/// The analysis of one image.
#[derive(Debug, Clone)]
pub struct Scene {
    pub width: u32,
    pub height: u32,
    pub background: [u8; 3],
    /// Largest first.
    pub components: Vec<Component>,
    labels: Vec<u32>,
}

fn distance(a: [u8; 3], b: [u8; 3]) -> u32 {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| u32::from(x.abs_diff(*y)))
        .sum()
}

fn border_colour(img: &RgbaImage) -> [u8; 3] {
    let (w, h) = img.dimensions();
    let mut bins: HashMap<u16, (u64, [u64; 3])> = HashMap::new();
    let mut add = |x: u32, y: u32| {
        let p = img.get_pixel(x, y).0;
        let key = (u16::from(p[0] >> 4) << 8) | (u16::from(p[1] >> 4) << 4) | u16::from(p[2] >> 4);
        let e = bins.entry(key).or_insert((0, [0; 3]));
        e.0 += 1;
        for (sum, v) in e.1.iter_mut().zip(p) {
            *sum += u64::from(v);
        }
    };
    for x in 0..w {
        add(x, 0);
        add(x, h - 1);
    }
    for y in 1..h.saturating_sub(1) {
        add(0, y);
        add(w - 1, y);
    }
    // The most frequent bin (ties broken by key, so the answer is deterministic).
    let best = bins
        .iter()
        .max_by_key(|(key, (n, _))| (*n, std::cmp::Reverse(**key)))
        .map(|(_, v)| *v);
    match best {
        Some((n, sum)) if n > 0 => [(sum[0] / n) as u8, (sum[1] / n) as u8, (sum[2] / n) as u8],
        _ => [0, 0, 0],
    }
}

impl Scene {
    pub fn analyse(img: &RgbaImage) -> Scene {
        let (w, h) = img.dimensions();
        if w == 0 || h == 0 {
            return Scene {
                width: w,
                height: h,
                background: [0; 3],
                components: Vec::new(),
                labels: Vec::new(),
            };
        }
        let background = border_colour(img);
        let far: Vec<bool> = img
            .pixels()
            .map(|p| distance([p.0[0], p.0[1], p.0[2]], background) > FAR_FROM_BACKGROUND)
            .collect();
        let (wu, hu) = (w as usize, h as usize);
        let mut labels = vec![0u32; wu * hu];
        let mut components = Vec::new();
        let mut stack = Vec::new();
        for start in 0..wu * hu {
            if !far[start] || labels[start] != 0 {
                continue;
            }
            let label = components.len() as u32 + 1;
            labels[start] = label;
            stack.push(start);
            let (mut area, mut sx, mut sy) = (0u64, 0u64, 0u64);
            let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
            while let Some(i) = stack.pop() {
                let (x, y) = (i % wu, i / wu);
                area += 1;
                sx += x as u64;
                sy += y as u64;
                x0 = x0.min(x);
                y0 = y0.min(y);
                x1 = x1.max(x + 1);
                y1 = y1.max(y + 1);
                let mut visit = |j: usize| {
                    if far[j] && labels[j] == 0 {
                        labels[j] = label;
                        stack.push(j);
                    }
                };
                if x > 0 {
                    visit(i - 1);
                }
                if x + 1 < wu {
                    visit(i + 1);
                }
                if y > 0 {
                    visit(i - wu);
                }
                if y + 1 < hu {
                    visit(i + wu);
                }
            }
            components.push(Component {
                label,
                area,
                bbox: (x0 as u32, y0 as u32, x1 as u32, y1 as u32),
                centroid: ((sx / area) as u32, (sy / area) as u32),
                touches_border: x0 == 0 || y0 == 0 || x1 == wu || y1 == hu,
            });
        }
        components.sort_by(|a, b| b.area.cmp(&a.area).then(a.label.cmp(&b.label)));
        Scene {
            width: w,
            height: h,
            background,
            components,
            labels,
        }
    }

    /// The components that count as subjects: at least 0.5% of the frame and a fifth of the
    /// largest (specks and small clutter are background).
    pub fn subjects(&self) -> Vec<&Component> {
        let frame = u64::from(self.width) * u64::from(self.height);
        let largest = self.components.first().map_or(0, |c| c.area);
        let min = (frame / 200).max(largest / 5).max(1);
        self.components.iter().filter(|c| c.area >= min).collect()
    }

    fn mask_of(&self, keep: impl Fn(u32) -> bool) -> Mask {
        let w = self.width as usize;
        Mask::from_weights(GrayImage::from_fn(self.width, self.height, |x, y| {
            let label = self.labels[y as usize * w + x as usize];
            Luma([if keep(label) { 255 } else { 0 }])
        }))
    }

    /// The pixels of one component.
    pub fn component_mask(&self, component: &Component) -> Mask {
        let label = component.label;
        self.mask_of(|l| l == label)
    }

    /// The subject a person's description names, as far as the stand-in can read one: by
    /// place ("the one on the left", "right", "centre", "middle") or by size ("bigger",
    /// "smaller"); the largest when it names neither, the only one when there is one. `None`
    /// when it names a place none of several subjects is at (or there is no subject).
    pub fn named_subject(&self, description: Option<&str>) -> Option<&Component> {
        let subjects = self.subjects();
        if let [only] = subjects[..] {
            return Some(only);
        }
        let words = description.unwrap_or_default().to_lowercase();
        let has = |w: &[&str]| w.iter().any(|w| words.contains(w));
        let place = if has(&["left"]) {
            Some("left")
        } else if has(&["right"]) {
            Some("right")
        } else if has(&["centre", "center", "middle"]) {
            Some("centre")
        } else {
            None
        };
        if let Some(place) = place {
            return subjects
                .into_iter()
                .find(|c| self.horizontal_position(c.centroid.0) == place);
        }
        if has(&["small", "little", "tiny"]) {
            return subjects.last().copied();
        }
        subjects.first().copied()
    }

    /// Where the target is, as the stand-in understands it: a pet or person is the subject
    /// the description names (the largest without one); the background is everything but the
    /// subjects; a brushed area has no meaning without its mask, so everything.
    pub fn region(&self, target: Target, description: Option<&str>) -> Mask {
        match target {
            Target::Pet | Target::Person => match self.named_subject(description) {
                Some(c) => self.component_mask(c),
                None => Mask::from_weights(GrayImage::new(self.width, self.height)),
            },
            Target::Background => {
                let subjects: Vec<u32> = self.subjects().iter().map(|c| c.label).collect();
                self.mask_of(|l| !subjects.contains(&l))
            }
            Target::Brush => Mask::full(self.width, self.height),
        }
    }

    /// Where a point lies across the frame, in words.
    pub fn horizontal_position(&self, x: u32) -> &'static str {
        let third = self.width / 3;
        if x < third {
            "left"
        } else if x >= self.width - third {
            "right"
        } else {
            "centre"
        }
    }

    pub fn vertical_position(&self, y: u32) -> &'static str {
        let third = self.height / 3;
        if y < third {
            "top"
        } else if y >= self.height - third {
            "bottom"
        } else {
            "middle"
        }
    }

    /// Per-mille of the frame an area covers.
    pub fn per_mille(&self, area: u64) -> u64 {
        let frame = (u64::from(self.width) * u64::from(self.height)).max(1);
        area * 1000 / frame
    }
}
