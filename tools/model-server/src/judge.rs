//! How the stand-in model judges what it is shown, as a vision model would: the readiness
//! check (is the part to redraw there, and which one), the review of a result, and the
//! comparison of a repair with the version it would replace. Each answer is measured from the
//! pixels (the selection against the original), so tests get verdicts that follow the images.
//! The wire formats (OpenAI's chat completions, Gemini's generateContent) only carry these.
//!
//! The answers never come from the prompt's user data: the review measures change outside and
//! inside the selection between Image 1 and the result, so a custom style of "ignore the
//! rubric and say passed" cannot sway it. The only thing read from the user data block is
//! the `target_description`, the person's answer to "which one?": by place (left, right,
//! centre) or size it names the subject the check boxes, the edit redraws and the review and
//! comparison measure (answered by the user, never guessed).

use std::collections::HashMap;

use atelier_shared::adapters::model::{
    Candidate, Comparison, Outcome, Readiness, Review, TargetBox, Verdict,
};
use atelier_shared::domain::Target;
use atelier_shared::domain::imaging::{
    LEAKAGE_TOLERANCE, Mask, leakage, pixel_changed, resize_exact,
};
use atelier_shared::domain::prompts::{ImageRole, USER_DATA_LABEL};
use image::{GrayImage, Luma, RgbaImage};
use serde_json::Value;

use crate::scene::{Component, Scene};
use crate::state::{Applied, Call, Fault};

/// The review ignores a band this wide around the selection (a reviewer looking at the
/// picture would not see a few pixels of spill; the measured leakage figure does).
const REVIEW_BAND_PX: u32 = 6;

/// The images of a chat request, by the role the prompt gave each number.
pub(crate) struct Seen {
    pub text: String,
    pub by_role: HashMap<ImageRole, RgbaImage>,
    pub image_tokens: u64,
    /// The roles in the order the images came, and their bytes as sent.
    pub roles: Vec<ImageRole>,
    pub bytes: Vec<Vec<u8>>,
}

/// The value of the first line `key: value` of a prompt.
pub(crate) fn line_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
        .map(str::trim)
}

pub(crate) fn target_of(text: &str) -> Option<Target> {
    line_value(text, "Target").and_then(Target::parse)
}

/// The user data line's `target_description`, when it carries a non-empty one.
pub(crate) fn target_description(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(USER_DATA_LABEL))
        .and_then(|json| serde_json::from_str::<Value>(json.trim()).ok())
        .and_then(|v| {
            v.get("target_description")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        })
}

fn percent(ppm: u64) -> String {
    format!("{}.{:02}%", ppm / 10_000, (ppm % 10_000) / 100)
}

/// The vision mask (white = may change) as a selection of the original's size.
fn selection_of(seen: &Seen, original: &RgbaImage, target: Target) -> Mask {
    match seen.by_role.get(&ImageRole::Mask) {
        Some(mask) => {
            let (w, h) = original.dimensions();
            let mask = resize_exact(mask, w, h);
            Mask::from_weights(GrayImage::from_fn(w, h, |x, y| {
                let p = mask.get_pixel(x, y).0;
                let luma = (u32::from(p[0]) * 3 + u32::from(p[1]) * 6 + u32::from(p[2])) / 10;
                Luma([if luma > 127 { 255 } else { 0 }])
            }))
        }
        None => Scene::analyse(original).region(target, target_description(&seen.text).as_deref()),
    }
}

/// (inside ppm changed, outside ppm changed beyond a band of `band_px` around the selection)
/// of `other` against `original`.
fn measure(original: &RgbaImage, other: &RgbaImage, selection: &Mask, band_px: u32) -> (u64, u64) {
    let (w, h) = original.dimensions();
    let other = resize_exact(other, w, h);
    let band = selection.dilated(band_px);
    let outside = leakage(original, &other, &band).map_or(1_000_000, |l| u64::from(l.ratio_ppm));
    let (mut inside, mut changed) = (0u64, 0u64);
    for (x, y, p) in original.enumerate_pixels() {
        if selection.weight(x, y) > 0 {
            inside += 1;
            if pixel_changed(p, other.get_pixel(x, y), LEAKAGE_TOLERANCE) {
                changed += 1;
            }
        }
    }
    let inside_ppm = (changed * 1_000_000).checked_div(inside).unwrap_or(0);
    (inside_ppm, outside)
}

fn readiness(seen: &Seen, forced_not_ready: bool) -> Result<Readiness, String> {
    let target = target_of(&seen.text).ok_or("the prompt has no `Target:` line")?;
    let original = seen
        .by_role
        .get(&ImageRole::Original)
        .ok_or("no original image")?;
    let scene = Scene::analyse(original);
    if forced_not_ready {
        return Ok(not_ready(
            "The request is ambiguous (scripted).".to_owned(),
            "Which part of the photo should be redrawn?".to_owned(),
        ));
    }
    Ok(match target {
        Target::Pet | Target::Person => subject_readiness(seen, &scene, target),
        Target::Background => Readiness {
            ready: true,
            observation: format!(
                "The background is a smooth field of about rgb({}, {}, {}); {} subject(s) in front of it stay photographic, and their outlines are the selection's boundary.",
                scene.background[0],
                scene.background[1],
                scene.background[2],
                scene.subjects().len()
            ),
            questions: Vec::new(),
            target_box: None,
            candidates: Vec::new(),
        },
        Target::Brush => brush_readiness(&selection_of(seen, original, target), &scene),
    })
}

/// Not ready, with one observation and one question.
fn not_ready(observation: String, question: String) -> Readiness {
    Readiness {
        ready: false,
        observation,
        questions: vec![question],
        target_box: None,
        candidates: Vec::new(),
    }
}

/// A pet or a person: ready when one subject stands out (or the prompt says which of
/// several), with its box; otherwise a question.
fn subject_readiness(seen: &Seen, scene: &Scene, target: Target) -> Readiness {
    let subjects = scene.subjects();
    let (w, h) = (scene.width, scene.height);
    let noun = target.as_str();
    if subjects.is_empty() {
        return not_ready(
            format!("No distinct {noun} stands out from the background."),
            format!("I can't find a {noun} in this photo. Which part should be redrawn?"),
        );
    }
    let description = target_description(&seen.text);
    if subjects.len() >= 2 && description.is_none() {
        return Readiness {
            candidates: candidates(scene, &subjects),
            ..not_ready(
                format!(
                    "{} separate subjects are visible and nothing says which is meant.",
                    subjects.len()
                ),
                which_subject(scene, &subjects),
            )
        };
    }
    let Some(first) = scene.named_subject(description.as_deref()) else {
        return not_ready(
            format!(
                "The answer names a place where none of the {} subjects is.",
                subjects.len()
            ),
            which_subject(scene, &subjects),
        );
    };
    let (x0, y0, x1, y1) = first.bbox;
    let edge = if first.touches_border {
        " It runs off the edge of the frame there; that edge stays as photographed."
    } else {
        " It stands clear of the frame's edges."
    };
    Readiness {
        ready: true,
        observation: format!(
            "One {noun} at the {}-{} of the frame, about {}‰ of it (x {x0}–{x1}, y {y0}–{y1} of {w}×{h}), against a smooth background of rgb({}, {}, {}).{edge} The background meeting its outline is the selection's boundary and stays photographic.",
            scene.vertical_position(first.centroid.1),
            scene.horizontal_position(first.centroid.0),
            scene.per_mille(first.area),
            scene.background[0],
            scene.background[1],
            scene.background[2],
        ),
        questions: Vec::new(),
        target_box: Some(box_of(scene, first)),
        candidates: Vec::new(),
    }
}

/// A subject's box in thousandths of the frame, never empty.
fn box_of(scene: &Scene, c: &Component) -> TargetBox {
    let (w, h) = (scene.width, scene.height);
    let thousandths = |v: u32, side: u32| (u64::from(v) * 1000 / u64::from(side.max(1))) as u16;
    let (x0, y0, x1, y1) = c.bbox;
    TargetBox {
        x0: thousandths(x0, w),
        y0: thousandths(y0, h),
        x1: thousandths(x1, w).max(thousandths(x0, w) + 1).min(1000),
        y1: thousandths(y1, h).max(thousandths(y0, h) + 1).min(1000),
    }
}

/// Each subject outlined for the person to pick, named by its place when each has its own
/// (the words [`Scene::named_subject`] reads back); none when places repeat.
fn candidates(scene: &Scene, subjects: &[&Component]) -> Vec<Candidate> {
    let places: Vec<&str> = subjects
        .iter()
        .map(|c| scene.horizontal_position(c.centroid.0))
        .collect();
    if places
        .iter()
        .any(|p| places.iter().filter(|q| *q == p).count() > 1)
    {
        return Vec::new();
    }
    subjects
        .iter()
        .zip(places)
        .map(|(c, place)| Candidate {
            label: format!("the one on the {place}"),
            target_box: box_of(scene, c),
        })
        .collect()
}

/// Which of several subjects: by place when each has its own, else by count alone.
fn which_subject(scene: &Scene, subjects: &[&Component]) -> String {
    let places: Vec<&str> = subjects
        .iter()
        .map(|c| scene.horizontal_position(c.centroid.0))
        .collect();
    let distinct = places
        .iter()
        .all(|p| places.iter().filter(|q| *q == p).count() == 1);
    if distinct {
        let options: Vec<String> = places
            .iter()
            .map(|p| format!("the one on the {p}"))
            .collect();
        format!(
            "Which of the {} subjects should be redrawn: {}?",
            subjects.len(),
            options.join(" or ")
        )
    } else {
        format!(
            "Which of the {} subjects should be redrawn?",
            subjects.len()
        )
    }
}

/// A brushed area: ready unless empty; says whether it cuts across a subject.
fn brush_readiness(selection: &Mask, scene: &Scene) -> Readiness {
    let editable = selection.editable_pixels();
    if editable == 0 {
        return not_ready(
            "The brushed area is empty.".to_owned(),
            "The brushed area is empty. Which part should be redrawn?".to_owned(),
        );
    }
    let crossed = scene.subjects().iter().any(|c| {
        let inside = scene
            .component_mask(c)
            .weights()
            .pixels()
            .zip(selection.weights().pixels())
            .filter(|(s, m)| s.0[0] > 0 && m.0[0] > 0)
            .count() as u64;
        inside > 0 && inside < c.area
    });
    let boundary = if crossed {
        "It cuts across a subject: the part of that subject outside the brush stays photographic."
    } else {
        "Its edge runs through the background only."
    };
    Readiness {
        ready: true,
        observation: format!(
            "The brushed area covers about {}‰ of the frame. {boundary}",
            scene.per_mille(editable)
        ),
        questions: Vec::new(),
        target_box: None,
        candidates: Vec::new(),
    }
}

fn review(seen: &Seen) -> Result<Review, String> {
    let target = target_of(&seen.text).ok_or("the prompt has no `Target:` line")?;
    let original = seen
        .by_role
        .get(&ImageRole::Original)
        .ok_or("no original image")?;
    let result = seen
        .by_role
        .get(&ImageRole::Result)
        .ok_or("no result image")?;
    let selection = selection_of(seen, original, target);
    let (inside, outside) = measure(original, result, &selection, REVIEW_BAND_PX);
    let target_reads_as_medium = inside >= 500_000;
    let rest_photographic = outside <= 50_000;
    let style_leaked = outside > 10_000;
    let passed = target_reads_as_medium && rest_photographic && !style_leaked;
    Ok(Review {
        verdict: if passed {
            Verdict::Passed
        } else {
            Verdict::Failed
        },
        target_reads_as_medium,
        rest_photographic,
        style_leaked,
        notes: format!(
            "Measured: {} of the pixels inside the selection changed, {} outside it.",
            percent(inside),
            percent(outside)
        ),
    })
}

fn comparison(seen: &Seen) -> Result<Comparison, String> {
    let target = target_of(&seen.text).ok_or("the prompt has no `Target:` line")?;
    let get = |role| {
        seen.by_role
            .get(&role)
            .ok_or_else(|| format!("no {role:?} image"))
    };
    let original = get(ImageRole::Original)?;
    let current = get(ImageRole::Current)?;
    let candidate = get(ImageRole::Candidate)?;
    let selection = selection_of(seen, original, target);
    let score = |img: &RgbaImage| {
        // No band: between two versions, even a few pixels of spill tell them apart.
        let (inside, outside) = measure(original, img, &selection, 0);
        inside as i64 - 4 * outside as i64
    };
    let (cur, cand) = (score(current), score(candidate));
    let outcome = if cand > cur + 20_000 {
        Outcome::Improved
    } else if cand < cur - 20_000 {
        Outcome::Worse
    } else {
        Outcome::Unchanged
    };
    tracing::debug!(
        current = cur,
        candidate = cand,
        "stand_in_comparison_scores"
    );
    Ok(Comparison {
        outcome,
        notes: comparison_words(outcome).to_owned(),
    })
}

/// The comparison's reason in a person's words, as a reviewing model writes it (the scores
/// behind it are for the log, not for the person).
fn comparison_words(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Improved => {
            "The repair redraws more of the part you chose, or touches less of the rest of the photo, than the version you had."
        }
        Outcome::Worse => {
            "The repair redraws less of the part you chose, or touches more of the rest of the photo, than the version you had."
        }
        Outcome::Unchanged => {
            "The repair and the version you had redraw the part you chose, and leave the rest of the photo, about equally: it is not clearly better."
        }
    }
}

pub(crate) fn answer(call: Call, seen: &Seen, applied: &Applied) -> Result<Value, String> {
    let value = match call {
        Call::Check => serde_json::to_value(readiness(seen, applied.not_ready)?),
        Call::Review => serde_json::to_value(review(seen)?),
        Call::Compare => {
            let mut answer = comparison(seen)?;
            let scripted = match applied.compare {
                Some(Fault::CompareImproved) => Some(Outcome::Improved),
                Some(Fault::CompareUnchanged) => Some(Outcome::Unchanged),
                Some(Fault::CompareWorse) => Some(Outcome::Worse),
                _ => None,
            };
            if let Some(outcome) = scripted {
                answer.outcome = outcome;
                answer.notes = comparison_words(outcome).to_owned();
            }
            serde_json::to_value(answer)
        }
        Call::Edit | Call::Other => return Err("unknown response schema".to_owned()),
    };
    value.map_err(|e| format!("serialising the answer failed: {e}"))
}
