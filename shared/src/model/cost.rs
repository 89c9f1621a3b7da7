//! What model calls cost *us* (not what a user pays: that is `crate::pricing`, in credits):
//! a versioned cost table in integer micro-dollars, the real cost
//! of a call from the provider's usage, and a conservative estimate to reserve against the
//! day's budget before the call (docs/design.md rules 8 and 9: integers only, no floats).
//!
//! The figures are illustrative of gpt-image-1-class image pricing and gpt-4.1-mini-class
//! vision pricing (per million tokens: image model text in $5, image in $10, image out $40;
//! vision model in $0.40, out $1.60). Change them by adding a new table version, so every
//! stored cost names the table it came from ([`COST_TABLE_VERSION`]).
//!
//! Estimates must never be below the real cost, so they round up and assume the largest
//! output the call may produce: the reservation is what keeps spend under the day's cap.

use super::{CallKind, Quality, Usage};
use crate::domain::Micros;

/// Version of [`COST_TABLE`]; store it beside every cost computed from it.
pub const COST_TABLE_VERSION: &str = "2026-11";

/// Output ceiling the client sets on every vision call (`max_completion_tokens`), so the
/// estimate's output part is a real bound, not a guess.
pub const VISION_MAX_OUTPUT_TOKENS: u32 = 600;

/// Prices in micro-dollars per million tokens (so fractions of a micro-dollar per token stay
/// integers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostTable {
    pub version: &'static str,
    pub image_text_input_per_mtok: u64,
    pub image_image_input_per_mtok: u64,
    pub image_output_per_mtok: u64,
    pub vision_input_per_mtok: u64,
    pub vision_output_per_mtok: u64,
}

/// The table in force.
pub const COST_TABLE: CostTable = CostTable {
    version: COST_TABLE_VERSION,
    image_text_input_per_mtok: 5_000_000,
    image_image_input_per_mtok: 10_000_000,
    image_output_per_mtok: 40_000_000,
    vision_input_per_mtok: 400_000,
    vision_output_per_mtok: 1_600_000,
};

/// Sum of tokens × price per million tokens, in micro-dollars, rounded up.
fn micros(parts: &[(u64, u64)]) -> Micros {
    let sum: u128 = parts
        .iter()
        .map(|&(tokens, per_mtok)| u128::from(tokens) * u128::from(per_mtok))
        .fold(0u128, u128::saturating_add);
    Micros::from_unsigned(sum.div_ceil(1_000_000))
}

/// The real cost of a call from the provider's usage, or `None` when the usage does not say
/// enough (the reservation then stays booked). Where the usage lacks a split, the dearer rate
/// is charged: an image call's input without its text/image split is priced as image input,
/// and a vision call with only a total is priced at the output rate.
pub fn cost_micros(kind: CallKind, usage: &Usage) -> Option<Micros> {
    cost_with(&COST_TABLE, kind, usage)
}

/// [`cost_micros`] against a given table.
pub fn cost_with(prices: &CostTable, kind: CallKind, usage: &Usage) -> Option<Micros> {
    match kind {
        CallKind::Edit => {
            let output = usage.output_tokens?;
            let input = match (usage.input_text_tokens, usage.input_image_tokens) {
                (Some(text), Some(image)) => vec![
                    (text, prices.image_text_input_per_mtok),
                    (image, prices.image_image_input_per_mtok),
                ],
                _ => vec![(usage.input_tokens?, prices.image_image_input_per_mtok)],
            };
            let mut parts = input;
            parts.push((output, prices.image_output_per_mtok));
            Some(micros(&parts))
        }
        CallKind::Check | CallKind::Review | CallKind::Compare => {
            match (usage.input_tokens, usage.output_tokens) {
                (Some(input), Some(output)) => Some(micros(&[
                    (input, prices.vision_input_per_mtok),
                    (output, prices.vision_output_per_mtok),
                ])),
                _ => Some(micros(&[(
                    usage.total_tokens?,
                    prices.vision_output_per_mtok,
                )])),
            }
        }
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

/// Output tokens for the largest image (1536×1024) at a quality; `Auto` counts as high.
pub fn image_output_tokens(quality: Quality) -> u64 {
    match quality {
        Quality::Low => 408,
        Quality::Medium => 1584,
        Quality::High | Quality::Auto => 6240,
    }
}

/// Text tokens for a prompt: 3 characters a token (English averages about 4) plus the
/// framing around messages, the schema and the system text.
pub fn text_tokens(prompt_chars: usize) -> u64 {
    (prompt_chars as u64).div_ceil(3) + 600
}

/// A conservative estimate of a call's cost, to reserve before making it. `images` are the
/// dimensions of the images sent; `prompt_chars` the prompt's length (system and user text).
pub fn estimate_micros(
    kind: CallKind,
    images: &[(u32, u32)],
    prompt_chars: usize,
    quality: Quality,
) -> Micros {
    let text = text_tokens(prompt_chars);
    match kind {
        CallKind::Edit => {
            let image_in: u64 = images.iter().map(|&(w, h)| image_input_tokens(w, h)).sum();
            micros(&[
                (text, COST_TABLE.image_text_input_per_mtok),
                (image_in, COST_TABLE.image_image_input_per_mtok),
                (
                    image_output_tokens(quality),
                    COST_TABLE.image_output_per_mtok,
                ),
            ])
        }
        CallKind::Check | CallKind::Review | CallKind::Compare => {
            let image_in: u64 = images.iter().map(|&(w, h)| vision_image_tokens(w, h)).sum();
            micros(&[
                (text + image_in, COST_TABLE.vision_input_per_mtok),
                (
                    u64::from(VISION_MAX_OUTPUT_TOKENS),
                    COST_TABLE.vision_output_per_mtok,
                ),
            ])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: Option<u64>, output: Option<u64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    #[test]
    fn costs_from_usage() {
        let split = Usage {
            input_tokens: Some(1_300),
            output_tokens: Some(4_160),
            total_tokens: Some(5_460),
            input_text_tokens: Some(300),
            input_image_tokens: Some(1_000),
        };
        let cases: Vec<(&str, CallKind, Usage, Option<i64>)> = vec![
            // 300×5 + 1000×10 + 4160×40 = 1500 + 10000 + 166400
            ("edit with split", CallKind::Edit, split, Some(177_900)),
            // no split: 1300 at the image rate
            (
                "edit without split",
                CallKind::Edit,
                usage(Some(1_300), Some(4_160)),
                Some(179_400),
            ),
            (
                "edit without output",
                CallKind::Edit,
                usage(Some(1_300), None),
                None,
            ),
            // 2000×0.4 + 150×1.6 = 800 + 240
            (
                "review",
                CallKind::Review,
                usage(Some(2_000), Some(150)),
                Some(1_040),
            ),
            // rounds up: 1×0.4 → 1
            (
                "tiny check",
                CallKind::Check,
                usage(Some(1), Some(0)),
                Some(1),
            ),
            (
                "total only",
                CallKind::Compare,
                Usage {
                    total_tokens: Some(1_000),
                    ..Usage::default()
                },
                Some(1_600),
            ),
            ("nothing", CallKind::Check, Usage::default(), None),
        ];
        for (why, kind, u, want) in cases {
            assert_eq!(cost_micros(kind, &u), want.map(Micros::new), "{why}");
        }
    }

    #[test]
    fn estimates_cover_the_largest_real_cost() {
        // A 1024×768 original with a long prompt, high quality.
        let est = estimate_micros(CallKind::Edit, &[(1024, 768)], 3_000, Quality::High);
        let worst = Usage {
            input_tokens: Some(2_000 + 6_144 + 765),
            output_tokens: Some(6_240),
            total_tokens: None,
            input_text_tokens: Some(2_000),
            input_image_tokens: Some(6_144 + 765),
        };
        let real = cost_micros(CallKind::Edit, &worst).expect("a full usage has a cost");
        assert!(est >= real, "estimate {est} < real {real}");
        let vision = estimate_micros(
            CallKind::Review,
            &[(1024, 768), (1024, 768)],
            3_000,
            Quality::Auto,
        );
        let real = cost_micros(
            CallKind::Review,
            &usage(Some(1_000 + 2 * vision_image_tokens(1024, 768)), Some(600)),
        )
        .expect("a full usage has a cost");
        assert!(vision >= real, "vision estimate {vision} < real {real}");
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
}
