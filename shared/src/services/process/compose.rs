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
    original: RgbaImage,
    inputs: &Inputs,
    edited: &[u8],
    target_box: Option<TargetBox>,
) -> Result<(RgbaImage, Option<LeakageRecord>), Stop> {
    let edited = DecodeLimits::MODEL_OUTPUT.decode(edited).map_err(|e| {
        tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "edit_output_invalid");
        Stop::fail(FailureCode::EditFailed)
    })?;
    let edited = edited.into_rgba8();
    let (ow, oh) = inputs.size;
    // Each arm measures leakage the way its result was made: a composite copies the
    // original's bytes outside the mask's box, so only the box is compared.
    let (result, leakage) = match (&inputs.mask, job.request.target) {
        (Some(mask), Target::Brush) => {
            let (result, l) = imaging::composite_into(original, &edited, mask, FEATHER_PX)
                .map_err(internal_image)?;
            (result, Some(record(l, "mask")))
        }
        _ => {
            let result = imaging::resize_exact(&edited, ow, oh);
            let leakage = match target_box {
                Some(b) => {
                    let region = box_mask(b, ow, oh);
                    let l =
                        imaging::leakage(&original, &result, &region).map_err(internal_image)?;
                    Some(record(l, "region"))
                }
                None => None,
            };
            (result, leakage)
        }
    };
    Ok((result, leakage))
}

fn record(l: imaging::Leakage, basis: &str) -> LeakageRecord {
    LeakageRecord {
        changed_outside: l.changed_outside,
        outside: l.outside,
        ratio_ppm: l.ratio_ppm,
        basis: basis.to_owned(),
    }
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
