//! A vision request's images by the role its text gives each, read from `data:` URLs (both
//! providers' requests come down to these).

use std::collections::HashMap;

use atelier_shared::adapters::model::cost::vision_image_tokens;
use atelier_shared::domain::imaging::DecodeLimits;
use atelier_shared::domain::prompts::ImageRole;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::judge::Seen;

/// The images of a request by the role its text gives each number (`Image N: <role>`), from
/// `data:` URLs in order.
pub(crate) fn seen_from(text: String, urls: &[String]) -> Result<Seen, String> {
    let mut numbered: HashMap<usize, ImageRole> = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("Image ") else {
            continue;
        };
        let Some((n, label)) = rest.split_once(": ") else {
            continue;
        };
        if let (Ok(n), Some(role)) = (n.parse::<usize>(), ImageRole::from_label(label)) {
            numbered.entry(n).or_insert(role);
        }
    }
    let mut by_role = HashMap::new();
    let (mut roles, mut sent) = (Vec::new(), Vec::new());
    let mut image_tokens = 0;
    for (i, url) in urls.iter().enumerate() {
        let b64 = url
            .strip_prefix("data:")
            .and_then(|rest| rest.split_once(";base64,"))
            .map(|(_, b64)| b64)
            .ok_or("the stand-in reads data: URLs only")?;
        let bytes = BASE64
            .decode(b64.as_bytes())
            .map_err(|e| format!("image {} is not base64: {e}", i + 1))?;
        let img = DecodeLimits::PHOTO
            .decode(&bytes)
            .map_err(|e| format!("image {} could not be read: {e}", i + 1))?
            .into_rgba8();
        image_tokens += vision_image_tokens(img.width(), img.height());
        let role = numbered
            .get(&(i + 1))
            .copied()
            .ok_or_else(|| format!("image {} has no role in the prompt", i + 1))?;
        by_role.insert(role, img);
        roles.push(role);
        sent.push(bytes);
    }
    Ok(Seen {
        text,
        by_role,
        image_tokens,
        roles,
        bytes: sent,
    })
}
