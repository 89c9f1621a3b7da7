//! Content credentials (C2PA) of a delivered result: what its signed manifest says, as the
//! job records it for people (the API, the web app's "Edited with AI", the CLI). The manifest
//! in the file is the proof; this is its reading, made from the same facts in one place.
//!
//! Privacy (docs/api.md, "Content credentials"): the manifest names the action, the digital
//! source type, the model and provider, the medium, the kind of target and the redrawn box —
//! never the user, their e-mail, their photo's pixels (the photo is an ingredient by hash
//! only), a custom style or any other text the user wrote.

use serde::{Deserialize, Serialize};

use super::edit::Target;

/// The label every result carries where people see it.
pub const LABEL: &str = "Edited with AI";

/// The C2PA action a result records: part of an existing photo changed.
pub const ACTION_EDITED: &str = "c2pa.edited";

/// The C2PA action that opens the parent (the photo, or the version a repair started from).
pub const ACTION_OPENED: &str = "c2pa.opened";

/// IPTC's digital source type for a photo whose region an AI model redrew: a composite of
/// captured and generated media.
pub const DIGITAL_SOURCE_TYPE: &str =
    "http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia";

/// Our parameters in the `c2pa.edited` action, namespaced as the spec asks of private keys.
pub const PARAM_MEDIUM: &str = "com.atelier.medium";
pub const PARAM_TARGET: &str = "com.atelier.target";
pub const PARAM_PROVIDER: &str = "com.atelier.provider";
/// The photo's SHA-256 (hex) on `c2pa.opened`: the photo is named by it alone.
pub const PARAM_PHOTO_SHA256: &str = "com.atelier.photo_sha256";

/// What a result's credentials say, recorded on its job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentCredentials {
    /// The model that redrew the region (the manifest's software agent).
    pub model: String,
    /// Its provider (`openai`, `gemini`).
    pub provider: String,
    /// The medium chosen: a style id from `GET /v1/styles`, never a custom style's text.
    pub medium: String,
    pub target: Target,
    /// When the manifest was signed (RFC 3339, UTC).
    pub signed_at: String,
    /// The signing certificate's organisation: who vouches for the claim.
    pub issuer: String,
    /// The provider's output carried its own manifest, kept as an ingredient.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_manifest: bool,
    /// A repair: the version it started from is the parent ingredient (with its manifest).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repair: bool,
}

impl ContentCredentials {
    /// One sentence for people: what changed, with which model, when (the date).
    pub fn summary(&self) -> String {
        let what = match self.target {
            Target::Pet => "The pet",
            Target::Person => "The person",
            Target::Background => "The background",
            Target::Brush => "The brushed area",
        };
        let medium = self.medium.replace('_', " ");
        let day = self.signed_at.get(..10).unwrap_or(&self.signed_at);
        format!(
            "{what} was redrawn as {medium} by the AI model {} ({}) on {day}; signed by {}.",
            self.model,
            provider_name(&self.provider),
            self.issuer
        )
    }

    /// The manifest's description of the edit action (no user text).
    pub fn action_description(&self) -> String {
        format!(
            "The {} redrawn as {} by an AI model and composited into the photo",
            self.target.as_str(),
            self.medium.replace('_', " ")
        )
    }
}

fn provider_name(id: &str) -> &str {
    match id {
        "openai" => "OpenAI",
        "gemini" => "Google Gemini",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials() -> ContentCredentials {
        ContentCredentials {
            model: "gpt-image-1".into(),
            provider: "openai".into(),
            medium: "needle_felt".into(),
            target: Target::Pet,
            signed_at: "2026-12-07T05:00:00Z".into(),
            issuer: "Atelier".into(),
            provider_manifest: false,
            repair: false,
        }
    }

    #[test]
    fn the_summary_says_what_changed_with_which_model_and_when() {
        assert_eq!(
            credentials().summary(),
            "The pet was redrawn as needle felt by the AI model gpt-image-1 (OpenAI) on \
             2026-12-07; signed by Atelier."
        );
    }
}
