//! Loading a job's images within hard limits before any paid call, and shaping them for the
//! model: downscaled PNGs for the vision calls, the edit call's images and mask.

use image::RgbaImage;
use sha2::Digest;

use super::{Run, Stop};
use crate::adapters::assets::{AssetReadError, Assets, Copied};
use crate::adapters::model::{EditCall, EditSize, ImageInput, ImageRole};
use crate::domain::imaging::{self, DecodeLimits, ImagingError, Mask};
use crate::domain::prompts::{EditPrompt, VisionPrompt};
use crate::domain::{AssetId, AssetKind, FailureCode};
use crate::error::Error;

/// Longest side of an image sent to the edit call (the model works at 1–2 MP; the result is
/// scaled back and composited at the original's size).
pub(super) const EDIT_MAX_SIDE: u32 = 1536;

/// The decoded inputs of a job but the full-size original (which [`Run::load`] hands over
/// apart, for the composite to paint into), and their downscaled PNGs for the vision calls
/// (encoded once).
pub(super) struct Inputs {
    /// The original's width and height.
    pub size: (u32, u32),
    /// The original at the edit call's size, downscaled once: the edit call's image and the
    /// vision calls' source (a 12 MP photo is read once, not three times).
    small: RgbaImage,
    pub mask: Option<Mask>,
    /// The mask at `small`'s size, shrunk once (the edit call's and the vision calls' source).
    small_mask: Option<Mask>,
    pub reference: Option<RgbaImage>,
    vision: VisionPngs,
    /// SHA-256 of the photo's bytes: the result's credentials name the photo by it alone.
    pub original_sha256: [u8; 32],
}

struct VisionPngs {
    original: Vec<u8>,
    mask: Option<Vec<u8>>,
    reference: Option<Vec<u8>>,
}

impl Inputs {
    /// The sizes of the images an edit call with these roles sends (for its estimate).
    pub fn edit_sizes(&self, roles: &[ImageRole]) -> Vec<(u32, u32)> {
        roles
            .iter()
            .map(|role| match (role, &self.reference) {
                (ImageRole::StyleReference, Some(r)) => {
                    imaging::fit_within(r.dimensions(), EDIT_MAX_SIDE)
                }
                _ => imaging::fit_within(self.size, EDIT_MAX_SIDE),
            })
            .collect()
    }

    /// The sizes of the images a vision prompt sends (each at most the vision size).
    pub fn vision_sizes(&self, prompt: &VisionPrompt) -> Vec<(u32, u32)> {
        let size = imaging::fit_within(self.size, imaging::VISION_MAX_SIDE);
        vec![size; prompt.images.len()]
    }
}

/// A prompt's length as the estimate counts it.
pub(super) fn prompt_chars(prompt: &VisionPrompt) -> usize {
    prompt.system.len() + prompt.text.len()
}

/// An image downscaled for a vision call, as PNG.
pub(super) fn vision_png(img: &RgbaImage) -> Result<Vec<u8>, Stop> {
    let size = imaging::fit_within(img.dimensions(), imaging::VISION_MAX_SIDE);
    if size == img.dimensions() {
        // Already at the vision size (a result's copy from `store_image`): no copy of it.
        return imaging::encode_png_for_model(img).map_err(internal_image);
    }
    imaging::encode_png_for_model(&imaging::downscale(img, imaging::VISION_MAX_SIDE))
        .map_err(internal_image)
}

/// The vision calls' images for `prompt`, in its order; `extra` supplies the images that are
/// not the job's inputs (the result, the current version, a candidate).
pub(super) fn vision_images(
    inputs: &Inputs,
    prompt: &VisionPrompt,
    extra: &[(ImageRole, &RgbaImage)],
) -> Result<Vec<ImageInput>, Stop> {
    let mut images = Vec::with_capacity(prompt.images.len());
    for role in &prompt.images {
        let cached = &inputs.vision;
        let source = match role {
            ImageRole::Original => Some(cached.original.clone()),
            ImageRole::StyleReference => cached.reference.clone(),
            ImageRole::Mask => cached.mask.clone(),
            _ => match extra.iter().find(|(r, _)| r == role) {
                Some((_, img)) => Some(vision_png(img)?),
                None => None,
            },
        };
        let Some(png) = source else {
            return Err(Error::corrupt(format!("the prompt wants a {role:?} image")).into());
        };
        images.push(ImageInput::png(*role, png));
    }
    Ok(images)
}

/// The edit call: images in the prompt's order (`current`, a repair's starting image, as
/// Image 1 when given), the mask at the first image's size.
pub(super) fn edit_call(
    inputs: &Inputs,
    prompt: EditPrompt,
    current: Option<&RgbaImage>,
) -> Result<EditCall, Stop> {
    let png = |img: &RgbaImage| imaging::encode_png_for_model(img).map_err(internal_image);
    let current = current.map(|c| imaging::downscale(c, EDIT_MAX_SIDE));
    let first = current.as_ref().unwrap_or(&inputs.small);
    let mut images = Vec::with_capacity(prompt.images.len());
    for role in &prompt.images {
        let bytes = match role {
            ImageRole::Current => current.as_ref().map(png).transpose()?,
            ImageRole::Original => Some(png(&inputs.small)?),
            ImageRole::StyleReference => {
                let small = inputs
                    .reference
                    .as_ref()
                    .map(|r| imaging::downscale(r, EDIT_MAX_SIDE));
                small.as_ref().map(png).transpose()?
            }
            _ => None,
        };
        let Some(bytes) = bytes else {
            return Err(Error::corrupt(format!("the edit prompt wants a {role:?} image")).into());
        };
        images.push(ImageInput::png(*role, bytes));
    }
    let mask_png = match (&inputs.small_mask, prompt.masked) {
        (Some(m), true) => {
            let (w, h) = first.dimensions();
            Some(m.resized(w, h).to_alpha_png().map_err(internal_image)?)
        }
        _ => None,
    };
    Ok(EditCall {
        size: EditSize::for_dimensions(first.width(), first.height()),
        prompt,
        images,
        mask_png,
    })
}

impl Run<'_> {
    /// Loads and decodes the inputs, within hard limits, before any paid call: the decoded
    /// original, and the rest.
    pub(super) async fn load(&self) -> Result<(RgbaImage, Inputs), Stop> {
        let spec = &self.job.request;
        let original = self
            .read_upload(AssetKind::Original, &spec.original_asset_id)
            .await?;
        let original_sha256: [u8; 32] = sha2::Sha256::digest(&original).into();
        let original = DecodeLimits::for_asset(AssetKind::Original)
            .decode(&original)
            .map_err(invalid_input)?
            .into_rgba8();
        let mask = match &spec.mask_asset_id {
            Some(id) => {
                let bytes = self.read_upload(AssetKind::Mask, id).await?;
                let mask =
                    imaging::mask_from_png(&bytes, original.dimensions()).map_err(invalid_input)?;
                if mask.is_empty() {
                    tracing::info!(job_id = %self.job.job_id, "mask_empty");
                    return Err(Stop::fail(FailureCode::InvalidMask));
                }
                Some(mask)
            }
            None => None,
        };
        let reference = match &spec.style_reference_asset_id {
            Some(id) => {
                let bytes = self.read_upload(AssetKind::StyleReference, id).await?;
                let limits = DecodeLimits::for_asset(AssetKind::StyleReference);
                Some(limits.decode(&bytes).map_err(invalid_input)?.into_rgba8())
            }
            None => None,
        };
        let small = imaging::downscale(&original, EDIT_MAX_SIDE);
        let small_mask = mask
            .as_ref()
            .map(|m| m.resized(small.width(), small.height()));
        let vision = VisionPngs {
            original: vision_png(&small)?,
            // Shrunk before it is drawn: a 12 MP picture of the mask would be 48 MB.
            mask: small_mask
                .as_ref()
                .map(|m| {
                    let (w, h) = imaging::fit_within(m.dimensions(), imaging::VISION_MAX_SIDE);
                    vision_png(&m.resized(w, h).to_visual())
                })
                .transpose()?,
            reference: reference.as_ref().map(vision_png).transpose()?,
        };
        let inputs = Inputs {
            size: original.dimensions(),
            small,
            mask,
            small_mask,
            reference,
            vision,
            original_sha256,
        };
        Ok((original, inputs))
    }

    /// An input: the lineage's kept copy, made here on first use from exactly the bytes the
    /// job recorded at submit (a copy conditional on the upload's ETag). An upload deleted or
    /// overwritten since fails the job, refunded, before any paid call. A job without recorded
    /// versions was submitted when the submit made the copy: its copy, else its upload.
    async fn read_upload(&self, kind: AssetKind, id: &AssetId) -> Result<Vec<u8>, Stop> {
        let user = &self.job.user_id;
        let kept = Assets::kept_input_key(user, self.job.root_id(), kind);
        let etag = self.job.input_etag(kind);
        // An edit is claimed once, so its copy is not there yet; a repair's root made it.
        let look_first = self.job.repair.is_some() || etag.is_none();
        if look_first && let Some(bytes) = self.read_limited(kind, &kept).await? {
            return Ok(bytes);
        }
        let upload = Assets::upload_key(user, kind, id);
        let source = match etag {
            Some(etag) => {
                self.keep_input(kind, &upload, &kept, etag).await?;
                kept
            }
            None => upload,
        };
        self.read_limited(kind, &source)
            .await?
            .ok_or_else(|| Stop::fail(FailureCode::AssetMissing))
    }

    /// Copies the upload to the kept key if it still holds the bytes of `etag`.
    async fn keep_input(
        &self,
        kind: AssetKind,
        upload: &str,
        kept: &str,
        etag: &str,
    ) -> Result<(), Stop> {
        let copied = self
            .p
            .app
            .assets
            .copy_if_match(upload, kept, etag)
            .await
            .map_err(Error::from)?;
        if copied == Copied::Done {
            return Ok(());
        }
        tracing::info!(job_id = %self.job.job_id, kind = kind.as_str(), outcome = ?copied, "input_not_as_submitted");
        Err(Stop::fail(FailureCode::AssetMissing))
    }

    async fn read_limited(&self, kind: AssetKind, key: &str) -> Result<Option<Vec<u8>>, Stop> {
        let limit = DecodeLimits::for_asset(kind).max_bytes;
        match self.p.app.assets.get_limited(key, limit).await {
            Ok(found) => Ok(found),
            Err(AssetReadError::TooLarge { .. }) => Err(Stop::fail(FailureCode::InvalidImage)),
            Err(AssetReadError::Aws(e)) => Err(Error::from(e).into()),
        }
    }
}

/// An upload the user sent that cannot be used: their input, refunded.
pub(super) fn invalid_input(e: ImagingError) -> Stop {
    let code = match e {
        ImagingError::SizeMismatch { .. } => FailureCode::InvalidMask,
        _ => FailureCode::InvalidImage,
    };
    tracing::info!(code = e.code(), error = %e, "input_refused");
    Stop::fail(code)
}

/// Image work on our side failed (encoding, compositing): our fault, refunded.
pub(super) fn internal_image(e: ImagingError) -> Stop {
    tracing::error!(code = e.code(), error = %e, "image_processing_failed");
    Stop::fail(FailureCode::InternalError)
}
