//! The 12 MP rows: the image path against its codec floor, peak memory, result size per format
//! and Lambda's cost of the image work.

use crate::limits;
use crate::table::{Row, row};

/// The 12 MP rows: the path against its codec floor, peak memory, result sizes, and Lambda's
/// cost of the image work.
pub async fn image_rows(runs: usize) -> Vec<Row> {
    let how = "the same example's `measure` (release build): decode 4032×3024 JPEG, mask, downscale and the model's and vision calls' PNGs, restyle at 1536 px, composite with its leakage, PNG, JPEG and thumbnail encode, the review's PNG; VmHWM";
    let limits::ImagePath {
        mut rows,
        measured,
        path_ms,
    } = limits::image_path(runs).await;
    if let Some(text) = measured {
        rows.push(memory_row(&text, how));
        rows.extend(result_sizes(&text));
    }
    rows.extend(path_ms.map(limits::cost_row));
    rows
}

/// The peak by step from the example's `NAME  … peak N MiB` lines.
fn memory_row(text: &str, how: &str) -> Row {
    let mut steps = Vec::new();
    let mut peak = 0u64;
    for line in text.lines() {
        let Some((name, rest)) = line.split_once("  ") else {
            continue;
        };
        let Some(mib) = rest
            .split("peak")
            .nth(1)
            .and_then(|p| p.trim().trim_end_matches("MiB").trim().parse::<u64>().ok())
        else {
            continue;
        };
        peak = peak.max(mib);
        steps.push(format!("{} {mib}", name.trim()));
    }
    row(
        "consumer peak memory, 12 MP photo, brushed mask",
        limits::peak_verdict(peak),
        format!("{how} (by step, MiB: {})", steps.join(", ")),
    )
}

/// The 12 MP result's download size per format, from the example's `sizes: png N jpeg N`.
fn result_sizes(text: &str) -> Option<Row> {
    let line = text.lines().find_map(|l| l.strip_prefix("sizes: "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let size = |name: &str| -> Option<f64> {
        let at = words.iter().position(|w| *w == name)?;
        Some(words.get(at + 1)?.parse::<f64>().ok()? / 1_000_000.0)
    };
    let (png, jpeg) = (size("png")?, size("jpeg")?);
    Some(row(
        "12 MP result size, per format",
        format!(
            "JPEG (default download) {jpeg:.2} MB · PNG master {png:.2} MB ({:.1}× smaller)",
            png / jpeg
        ),
        "the same example's composite (a noisy synthetic photo, 4032×3024) encoded as the consumer stores it: JPEG quality 85, PNG fast compression",
    ))
}
