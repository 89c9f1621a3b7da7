//! What model calls cost *us* (not what a user pays: that is `crate::domain::pricing`, in credits):
//! the real cost of a call from the provider's usage and the prices of the model that served
//! it (its row in [`super::catalogue`]), and a conservative estimate to reserve against the
//! day's budget before the call (docs/design.md rules 8 and 9: integers only, no floats).
//!
//! Estimates must never be below the real cost, so they round up and assume the largest
//! output the call may produce: the reservation is what keeps spend under the day's cap.

use super::call::{Quality, Usage};
use super::catalogue::{self, Model, Rates};
use crate::domain::Micros;

/// Stored on every attempt: the catalogue whose rows priced its calls (each call also names
/// its model and prices version, [`Model::price_label`]).
pub const PRICE_TABLE: &str = "catalogue-2026-12-01";

/// Output ceiling the client sets on every vision call (`max_completion_tokens`, reasoning
/// tokens included), so the estimate's output part is a real bound, not a guess.
pub const VISION_MAX_OUTPUT_TOKENS: u32 = 600;

/// Sum of tokens × price per million tokens, in micro-dollars, rounded up.
fn micros(parts: &[(u64, u64)]) -> Micros {
    let sum: u128 = parts
        .iter()
        .map(|&(tokens, per_mtok)| u128::from(tokens) * u128::from(per_mtok))
        .fold(0u128, u128::saturating_add);
    Micros::from_unsigned(sum.div_ceil(1_000_000))
}

/// The real cost of a call served by `model`, from the provider's usage, or `None` when the
/// usage does not say enough (the reservation then stays booked). Where the usage lacks a
/// split, the dearer rate is charged: an image call's input without its text/image split is
/// priced as image input, and a chat call with only a total is priced at the output rate.
pub fn cost_micros(model: &Model, usage: &Usage) -> Option<Micros> {
    cost_with(&model.prices.rates, usage)
}

/// [`cost_micros`] at given rates.
pub fn cost_with(rates: &Rates, usage: &Usage) -> Option<Micros> {
    match *rates {
        Rates::ImageTokens {
            text_input_per_mtok,
            image_input_per_mtok,
            output_per_mtok,
        } => {
            let output = usage.output_tokens?;
            let mut parts = match (usage.input_text_tokens, usage.input_image_tokens) {
                (Some(text), Some(image)) => {
                    vec![(text, text_input_per_mtok), (image, image_input_per_mtok)]
                }
                _ => vec![(usage.input_tokens?, image_input_per_mtok)],
            };
            parts.push((output, output_per_mtok));
            Some(micros(&parts))
        }
        Rates::ChatTokens {
            input_per_mtok,
            output_per_mtok,
        } => match (usage.input_tokens, usage.output_tokens) {
            (Some(input), Some(output)) => Some(micros(&[
                (input, input_per_mtok),
                (output, output_per_mtok),
            ])),
            _ => Some(micros(&[(usage.total_tokens?, output_per_mtok)])),
        },
    }
}

/// Tokens a vision model bills for one image at high detail, taking the larger of the two
/// schemes providers use: 512-px tiles (85 + 170 per tile after fitting 2048 and shortening
/// to 768) and 32-px patches (capped at 1536, ×1.62 for the mini models).
pub fn vision_image_tokens(width: u32, height: u32) -> u64 {
    let (w, h) = (u64::from(width.max(1)), u64::from(height.max(1)));
    // Tiles.
    let (mut tw, mut th) = (w, h);
    let long = tw.max(th);
    if long > 2048 {
        tw = (tw * 2048).div_ceil(long);
        th = (th * 2048).div_ceil(long);
    }
    let short = tw.min(th);
    if short > 768 {
        tw = (tw * 768).div_ceil(short);
        th = (th * 768).div_ceil(short);
    }
    let tiles = tw.div_ceil(512) * th.div_ceil(512);
    let tile_tokens = 85 + 170 * tiles;
    // Patches.
    let patches = (w.div_ceil(32) * h.div_ceil(32)).min(1536);
    let patch_tokens = (patches * 162).div_ceil(100);
    tile_tokens.max(patch_tokens)
}

/// Tokens an image model bills for one input image: the tile count plus the extra that high
/// input fidelity adds (6144 for a non-square image), so the estimate holds either way.
pub fn image_input_tokens(width: u32, height: u32) -> u64 {
    vision_image_tokens(width, height) + 6144
}

/// Output tokens for the largest image at a quality on `model` (`Auto` counts as high); a
/// model without a ceiling counts as the largest any catalogued model has.
pub fn image_output_tokens(model: &Model, quality: Quality) -> u64 {
    let ceiling = model.edit_output.unwrap_or(catalogue::LARGEST_EDIT_OUTPUT);
    match quality {
        Quality::Low => ceiling.low,
        Quality::Medium => ceiling.medium,
        Quality::High | Quality::Auto => ceiling.high,
    }
}

/// Text tokens for a prompt: 3 characters a token (English averages about 4) plus the
/// framing around messages, the schema and the system text.
pub fn text_tokens(prompt_chars: usize) -> u64 {
    (prompt_chars as u64).div_ceil(3) + 600
}

/// A conservative estimate of a call's cost on `model`, to reserve before making it. `images`
/// are the dimensions of the images sent; `prompt_chars` the prompt's length (system and user
/// text).
pub fn estimate_micros(
    model: &Model,
    images: &[(u32, u32)],
    prompt_chars: usize,
    quality: Quality,
) -> Micros {
    let text = text_tokens(prompt_chars);
    match model.prices.rates {
        Rates::ImageTokens {
            text_input_per_mtok,
            image_input_per_mtok,
            output_per_mtok,
        } => {
            let image_in: u64 = images.iter().map(|&(w, h)| image_input_tokens(w, h)).sum();
            micros(&[
                (text, text_input_per_mtok),
                (image_in, image_input_per_mtok),
                (image_output_tokens(model, quality), output_per_mtok),
            ])
        }
        Rates::ChatTokens {
            input_per_mtok,
            output_per_mtok,
        } => {
            let image_in: u64 = images.iter().map(|&(w, h)| vision_image_tokens(w, h)).sum();
            micros(&[
                (text + image_in, input_per_mtok),
                (u64::from(VISION_MAX_OUTPUT_TOKENS), output_per_mtok),
            ])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::model::catalogue::{CATALOGUE, find};

    fn usage(input: Option<u64>, output: Option<u64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    fn model(id: &str) -> &'static Model {
        find(id).expect("a catalogued model")
    }

    #[test]
    fn a_call_costs_what_the_row_of_its_model_says() {
        let split = Usage {
            input_tokens: Some(1_300),
            output_tokens: Some(4_160),
            total_tokens: Some(5_460),
            input_text_tokens: Some(300),
            input_image_tokens: Some(1_000),
        };
        let cases: Vec<(&str, &str, Usage, Option<i64>)> = vec![
            // 300×5 + 1000×8 + 4160×30 = 1500 + 8000 + 124800
            (
                "2.5 edit with split",
                "gpt-image-2.5-sunburst",
                split,
                Some(134_300),
            ),
            // 300×5 + 1000×10 + 4160×40 = 1500 + 10000 + 166400
            (
                "gpt-image-1 edit with split",
                "gpt-image-1",
                split,
                Some(177_900),
            ),
            // no split: 1300 at the image rate: 1300×8 + 4160×30
            (
                "edit without split",
                "gpt-image-2.5-flare",
                usage(Some(1_300), Some(4_160)),
                Some(135_200),
            ),
            (
                "edit without output",
                "gpt-image-2.5-sunburst",
                usage(Some(1_300), None),
                None,
            ),
            // 2000×0.75 + 150×4.5 = 1500 + 675
            (
                "review",
                "gpt-5.4-mini",
                usage(Some(2_000), Some(150)),
                Some(2_175),
            ),
            // 2000×0.4 + 150×1.6 = 800 + 240
            (
                "review on gpt-4.1-mini",
                "gpt-4.1-mini",
                usage(Some(2_000), Some(150)),
                Some(1_040),
            ),
            // rounds up: 1×0.75 → 1
            (
                "tiny check",
                "gpt-5.4-mini",
                usage(Some(1), Some(0)),
                Some(1),
            ),
            (
                "total only, at the output rate",
                "gpt-5.4-mini",
                Usage {
                    total_tokens: Some(1_000),
                    ..Usage::default()
                },
                Some(4_500),
            ),
            ("nothing", "gpt-5.4-mini", Usage::default(), None),
        ];
        for (why, id, u, want) in cases {
            assert_eq!(cost_micros(model(id), &u), want.map(Micros::new), "{why}");
        }
    }

    #[test]
    fn estimates_cover_the_largest_real_cost_on_every_model() {
        for m in CATALOGUE {
            match m.prices.rates {
                Rates::ImageTokens { .. } => {
                    // A 1024×768 original with a long prompt, high quality.
                    let est = estimate_micros(m, &[(1024, 768)], 3_000, Quality::High);
                    let image_in = image_input_tokens(1024, 768);
                    let worst = Usage {
                        input_tokens: Some(1_600 + image_in),
                        output_tokens: Some(image_output_tokens(m, Quality::High)),
                        total_tokens: None,
                        input_text_tokens: Some(1_600),
                        input_image_tokens: Some(image_in),
                    };
                    let real = cost_micros(m, &worst).expect("a full usage has a cost");
                    assert!(est >= real, "{}: estimate {est} < real {real}", m.id);
                }
                Rates::ChatTokens { .. } => {
                    let est = estimate_micros(m, &[(1024, 768), (1024, 768)], 3_000, Quality::Auto);
                    let input = 1_600 + 2 * vision_image_tokens(1024, 768);
                    let worst = usage(Some(input), Some(u64::from(VISION_MAX_OUTPUT_TOKENS)));
                    let real = cost_micros(m, &worst).expect("a full usage has a cost");
                    assert!(est >= real, "{}: estimate {est} < real {real}", m.id);
                }
            }
        }
    }

    #[test]
    fn vision_tokens_follow_the_documented_schemes() {
        // 1024×1024: tiles → 768×768 → 4 tiles → 765; patches → 1024 ×1.62 → 1659.
        assert_eq!(vision_image_tokens(1024, 1024), 1_659);
        // 512×384: 1 tile → 255; 16×12 = 192 patches → 312.
        assert_eq!(vision_image_tokens(512, 384), 312);
        // Very large images are capped by patches at 1536 → 2489 and tiles at 4×… (765 or so).
        assert_eq!(vision_image_tokens(8000, 6000), 2_489);
    }

    #[test]
    fn what_an_edit_reserves_on_each_provider_is_what_the_docs_say() {
        // docs/costs.md and docs/operations.md: a 1024×768 original, a 3,000-character prompt.
        let edit = |id: &str, q| estimate_micros(model(id), &[(1024, 768)], 3_000, q);
        let one = &[(1024, 768)];
        let two = &[(1024, 768), (1024, 768)];
        let vision = |id: &str, images: &[(u32, u32)]| {
            estimate_micros(model(id), images, 3_000, Quality::Medium)
        };
        assert_eq!(
            edit("gpt-image-2.5-sunburst", Quality::Medium),
            Micros::new(138_392)
        );
        assert_eq!(
            edit("gemini-3.1-flash-image", Quality::Medium),
            Micros::new(191_695)
        );
        assert_eq!(
            edit("gemini-3.1-flash-image", Quality::High),
            Micros::new(191_695)
        );
        assert_eq!(vision("gpt-5.4-mini", one), Micros::new(4_834));
        assert_eq!(vision("gpt-5.4-mini", two), Micros::new(5_768));
        assert_eq!(vision("gemini-3.1-flash-lite", one), Micros::new(1_612));
        assert_eq!(vision("gemini-3.1-flash-lite", two), Micros::new(1_923));
    }
}
