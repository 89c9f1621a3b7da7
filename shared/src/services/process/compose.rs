//! Only the selection changes: the edited image back at the photo's size, composited over the
//! original through the mask for a brushed area, and the leakage measured outside the
//! selection (the mask, or the checker's box around a pet or person).

use image::RgbaImage;

use super::Stop;
use super::inputs::{Inputs, internal_image};
use crate::adapters::model::TargetBox;
use crate::domain::Job;
use crate::domain::imaging::{self, DecodeLimits, Mask};
use crate::domain::{FailureCode, LeakageRecord, Target};

/// Soft edge of the composite, inside the selection only.
const FEATHER_PX: u32 = 4;

/// The edited image at the photo's size and its measured leakage, if the selection is known.
pub(super) fn compose(
    job: &Job,
    inputs: &Inputs,
    edited: &[u8],
    target_box: Option<TargetBox>,
) -> Result<(RgbaImage, Option<LeakageRecord>), Stop> {
    let edited = DecodeLimits::MODEL_OUTPUT.decode(edited).map_err(|e| {
        tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "edit_output_invalid");
        Stop::fail(FailureCode::EditFailed)
    })?;
    let edited = edited.into_rgba8();
    let (ow, oh) = inputs.original.dimensions();
    let (result, selection) = match (&inputs.mask, job.request.target) {
        (Some(mask), Target::Brush) => (
            imaging::composite(&inputs.original, &edited, mask, FEATHER_PX)
                .map_err(internal_image)?,
            Some((mask.clone(), "mask")),
        ),
        _ => {
            let result = imaging::resize_exact(&edited, ow, oh);
            let region = target_box.map(|b| (box_mask(b, ow, oh), "region"));
            (result, region)
        }
    };
    let leakage = match &selection {
        Some((mask, basis)) => {
            let l = match job.request.target {
                Target::Brush => imaging::composite_leakage(&inputs.original, &result, mask),
                _ => imaging::leakage(&inputs.original, &result, mask),
            }
            .map_err(internal_image)?;
            Some(LeakageRecord {
                changed_outside: l.changed_outside,
                outside: l.outside,
                ratio_ppm: l.ratio_ppm,
                basis: (*basis).to_owned(),
            })
        }
        None => None,
    };
    Ok((result, leakage))
}

/// A selection mask from the checker's box (255 inside).
fn box_mask(b: TargetBox, width: u32, height: u32) -> Mask {
    let (x0, y0, x1, y1) = b.to_pixels(width, height);
    let weights = image::GrayImage::from_fn(width, height, |x, y| {
        let inside = x >= x0 && x < x1 && y >= y0 && y < y1;
        image::Luma([if inside { 255 } else { 0 }])
    });
    Mask::from_weights(weights)
}
