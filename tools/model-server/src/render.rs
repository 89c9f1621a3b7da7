//! The image edit both providers answer: the request's fields, and the restyled image with the
//! tokens it bills.

use atelier_shared::adapters::model::cost::vision_image_tokens;
use atelier_shared::domain::StyleId;
use atelier_shared::domain::imaging::{
    DecodeLimits, encode_png, fit_within, mask_from_png, resize_exact,
};
use axum::body::Bytes;

use crate::judge::{line_value, target_description, target_of};
use crate::restyle::{MASK_SPILL_PX, REGION_SPILL_PX, restyle};
use crate::scene::Scene;

/// Longest side the stand-in answers an edit with when asked for `auto` (real models answer
/// in their own sizes; the consumer resizes back).
const AUTO_MAX_SIDE: u32 = 1536;

pub(crate) struct EditForm {
    pub model: Option<String>,
    pub prompt: String,
    pub images: Vec<Bytes>,
    pub mask: Option<Bytes>,
    pub size: String,
    pub quality: String,
}

pub(crate) struct Edited {
    pub png: Vec<u8>,
    pub text_tokens: u64,
    pub image_tokens: u64,
    pub output_tokens: u64,
}

fn output_size(size: &str, input: (u32, u32)) -> Result<(u32, u32), String> {
    if size == "auto" {
        return Ok(fit_within(input, AUTO_MAX_SIDE));
    }
    let parsed = size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)));
    match parsed {
        Some((w, h)) if (64..=4096).contains(&w) && (64..=4096).contains(&h) => Ok((w, h)),
        _ => Err(format!("unsupported size {size}")),
    }
}

pub(crate) fn render_edit(form: &EditForm) -> Result<Edited, String> {
    let style = line_value(&form.prompt, "Medium")
        .and_then(StyleId::parse)
        .ok_or("the stand-in needs a `Medium: <style id>` line in the prompt")?;
    let target = target_of(&form.prompt)
        .ok_or("the stand-in needs a `Target: <target>` line in the prompt")?;
    let mut images = Vec::new();
    for bytes in &form.images {
        let img = DecodeLimits::PHOTO
            .decode(bytes)
            .map_err(|e| format!("image could not be read: {e}"))?;
        images.push(img.into_rgba8());
    }
    let Some(original) = images.first() else {
        return Err("image is required".to_owned());
    };
    let dims = original.dimensions();
    let region = match &form.mask {
        Some(bytes) => mask_from_png(bytes, dims)
            .map_err(|e| format!("invalid mask: {e}"))?
            .dilated(MASK_SPILL_PX),
        None => Scene::analyse(original)
            .region(target, target_description(&form.prompt).as_deref())
            .dilated(REGION_SPILL_PX),
    };
    let mut out = original.clone();
    restyle(&mut out, &region, style);
    let (w, h) = output_size(&form.size, dims)?;
    let out = resize_exact(&out, w, h);
    let png = encode_png(&out).map_err(|e| format!("encoding failed: {e}"))?;
    // Output tokens as gpt-image-1 bills them for a 1024×1024 image, scaled by area.
    let per_megapixel = match form.quality.as_str() {
        "low" => 272,
        "high" => 4160,
        _ => 1056,
    };
    let output_tokens = (per_megapixel * u64::from(w) * u64::from(h)).div_ceil(1024 * 1024);
    Ok(Edited {
        png,
        text_tokens: (form.prompt.chars().count() as u64).div_ceil(4),
        image_tokens: images
            .iter()
            .map(|i| vision_image_tokens(i.width(), i.height()))
            .sum(),
        output_tokens,
    })
}
