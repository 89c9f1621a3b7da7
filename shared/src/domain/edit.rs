//! The edit request: its wire form ([`EditRequest`], loose, as a client sends it) and its
//! validated canonical form ([`EditSpec`]), which is what is priced, hashed, stored and sent
//! to the models.

use crate::domain::validation::FieldCode;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ids::AssetId;
use super::style::StyleId;
use crate::domain::validation::{FieldErrors, clean_text};

/// Which part of the photo is redrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Pet,
    Person,
    Background,
    /// A brushed area, given by a mask asset.
    Brush,
}

impl Target {
    pub fn parse(raw: &str) -> Option<Target> {
        match raw {
            "pet" => Some(Target::Pet),
            "person" => Some(Target::Person),
            "background" => Some(Target::Background),
            "brush" => Some(Target::Brush),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Target::Pet => "pet",
            Target::Person => "person",
            Target::Background => "background",
            Target::Brush => "brush",
        }
    }
}

/// How far the medium may depart from the photo's forms.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Strength {
    Subtle,
    #[default]
    Balanced,
    Strong,
}

impl Strength {
    pub fn parse(raw: &str) -> Option<Strength> {
        match raw {
            "subtle" => Some(Strength::Subtle),
            "balanced" => Some(Strength::Balanced),
            "strong" => Some(Strength::Strong),
            _ => None,
        }
    }
}

/// What an uploaded asset is for; each kind has its own types and size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssetKind {
    Original,
    Mask,
    StyleReference,
}

impl AssetKind {
    /// Every kind, in the order an asset id is looked for.
    pub const ALL: [AssetKind; 3] = [
        AssetKind::Original,
        AssetKind::Mask,
        AssetKind::StyleReference,
    ];

    pub fn parse(raw: &str) -> Option<AssetKind> {
        match raw {
            "original" => Some(AssetKind::Original),
            "mask" => Some(AssetKind::Mask),
            "style_reference" => Some(AssetKind::StyleReference),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AssetKind::Original => "original",
            AssetKind::Mask => "mask",
            AssetKind::StyleReference => "style_reference",
        }
    }

    /// Largest upload accepted, in bytes (signed into the presigned PUT, so S3 enforces it).
    pub fn max_bytes(self) -> u64 {
        match self {
            AssetKind::Original => 20 * 1024 * 1024,
            AssetKind::Mask => 8 * 1024 * 1024,
            AssetKind::StyleReference => 10 * 1024 * 1024,
        }
    }

    /// Content types accepted. A mask must be lossless.
    pub fn content_types(self) -> &'static [&'static str] {
        match self {
            AssetKind::Original | AssetKind::StyleReference => {
                &["image/png", "image/jpeg", "image/webp"]
            }
            AssetKind::Mask => &["image/png"],
        }
    }
}

/// The exact bytes one input of a job was when the job was submitted: its upload's ETag as
/// S3 reported it then. The job's own copy of the input is made only from an upload that still
/// has this ETag, so a job never edits an image the user did not submit with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputVersion {
    pub kind: AssetKind,
    pub etag: String,
}

/// Hard limits on the edit request.
pub mod limits {
    pub const CUSTOM_STYLE_CHARS: usize = 200;
    pub const TARGET_DESCRIPTION_CHARS: usize = 200;
    pub const LOCKS: usize = 3;
    pub const LOCK_CHARS: usize = 80;
    pub const ID_CHARS: usize = 64;
    /// Previews (`"preview": true`) a user may submit per UTC day: each costs us a check
    /// and the user nothing (docs/design.md, "The area before paying").
    pub const PREVIEWS_PER_DAY: u32 = 10;
}

/// The edit request as a client sends it. Unknown fields are refused (a typo must not be
/// silently ignored on a paid request); a `422` names every bad field at once.
// The fields are loose strings so that `validate` can report every bad field in one `422`;
// the `schema` attributes state what it requires, so generated clients are strict.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    /// A style id from `GET /v1/styles`.
    #[schema(value_type = StyleId, required = true, example = "embroidery")]
    pub style: Option<String>,
    /// Which part of the photo is redrawn; `brush` needs `mask_asset_id`.
    #[schema(value_type = Target, required = true, example = "pet")]
    pub target: Option<String>,
    /// `balanced` when absent.
    #[schema(value_type = Option<Strength>)]
    pub strength: Option<String>,
    /// The photo (an `original` asset).
    #[schema(value_type = String, required = true, max_length = 64)]
    pub original_asset_id: Option<String>,
    /// Required for `brush`: a PNG mask (a `mask` asset) the size of the original.
    pub mask_asset_id: Option<String>,
    /// Optional: an image whose medium (never identity) is borrowed.
    pub style_reference_asset_id: Option<String>,
    /// Optional refinement of the medium, e.g. "in pastel wool". Treated as data.
    pub custom_style: Option<String>,
    /// Optional: which pet or person is meant, e.g. "the grey cat on the left".
    pub target_description: Option<String>,
    /// Up to 3 things to keep unchanged, e.g. "the red collar".
    #[serde(default)]
    pub locks: Vec<String>,
    /// `true`: only look — the checker outlines the area it would redraw, nothing is drawn
    /// and the charge comes back whole (`PREVIEWED`). The same request without it then draws
    /// that very area without a second check. At most 10 a day per user; not for `brush`,
    /// whose area is the one painted.
    pub preview: Option<bool>,
}

/// A validated edit: every field checked, text trimmed, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditSpec {
    pub style: StyleId,
    pub target: Target,
    pub strength: Strength,
    pub original_asset_id: AssetId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask_asset_id: Option<AssetId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style_reference_asset_id: Option<AssetId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_style: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_description: Option<String>,
    #[serde(default)]
    pub locks: Vec<String>,
    /// Only look: check, outline the area, draw nothing, refund (docs/design.md, "The area
    /// before paying"). Absent from the stored form when false, so older hashes stand.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
}

/// A required field naming one of a fixed set: `required` when absent or blank, `unknown.0`
/// when it names none of them.
fn required_choice<T>(
    errors: &mut FieldErrors,
    field: &'static str,
    raw: Option<&str>,
    parse: impl Fn(&str) -> Option<T>,
    unknown: (FieldCode, &'static str),
) -> Option<T> {
    match raw.map(str::trim) {
        None | Some("") => {
            errors.push(field, FieldCode::Required, "is required");
            None
        }
        Some(v) => parse(v).or_else(|| {
            errors.push(field, unknown.0, unknown.1);
            None
        }),
    }
}

/// The strength, the default when absent.
fn strength_field(errors: &mut FieldErrors, raw: Option<&str>) -> Option<Strength> {
    match raw.map(str::trim) {
        None | Some("") => Some(Strength::default()),
        Some(s) => Strength::parse(s).or_else(|| {
            errors.push(
                "strength",
                FieldCode::UnknownStrength,
                "must be one of subtle, balanced, strong",
            );
            None
        }),
    }
}

/// A mask exactly when the target is a brushed area.
fn mask_rule(errors: &mut FieldErrors, target: Option<Target>, has_mask: bool) {
    match (target, has_mask) {
        (Some(Target::Brush), false) => errors.push(
            "mask_asset_id",
            FieldCode::Required,
            "is required when target is brush",
        ),
        (Some(t), true) if t != Target::Brush => errors.push(
            "mask_asset_id",
            FieldCode::NotAllowed,
            "is only used when target is brush",
        ),
        _ => {}
    }
}

/// At most `limits::LOCKS` clean, distinct (case-insensitively) locks.
fn lock_list(errors: &mut FieldErrors, raw: &[String]) -> Vec<String> {
    if raw.len() > limits::LOCKS {
        errors.push(
            "locks",
            FieldCode::TooMany,
            format!("at most {} locks", limits::LOCKS),
        );
    }
    let mut locks: Vec<String> = Vec::new();
    for (i, raw) in raw.iter().take(limits::LOCKS).enumerate() {
        match clean_text(raw, limits::LOCK_CHARS) {
            Ok(t) if locks.iter().any(|l| l.eq_ignore_ascii_case(&t)) => errors.push(
                format!("locks[{i}]"),
                FieldCode::Duplicate,
                "repeats an earlier lock",
            ),
            Ok(t) => locks.push(t),
            Err(e) => errors.push(format!("locks[{i}]"), e.code(), e.message()),
        }
    }
    locks
}

fn asset_field(errors: &mut FieldErrors, field: &str, raw: Option<&str>) -> Option<AssetId> {
    let raw = raw?;
    let id = AssetId::parse(raw.trim());
    if id.is_none() {
        errors.push(
            field,
            FieldCode::InvalidAssetId,
            "is not an asset id from POST /v1/uploads",
        );
    }
    id
}

fn optional_text(
    errors: &mut FieldErrors,
    field: &str,
    raw: Option<&str>,
    max: usize,
) -> Option<String> {
    let raw = raw?;
    if raw.trim().is_empty() {
        return None; // an empty form field means "not given"
    }
    match clean_text(raw, max) {
        Ok(t) => Some(t),
        Err(e) => {
            errors.push(field, e.code(), e.message());
            None
        }
    }
}

impl EditRequest {
    /// The request's fields as a client names them (a repair refuses each by name).
    pub const FIELDS: [&'static str; 9] = [
        "style",
        "target",
        "strength",
        "original_asset_id",
        "mask_asset_id",
        "style_reference_asset_id",
        "custom_style",
        "target_description",
        "locks",
    ];

    /// Parses into an [`EditSpec`], reporting every problem at once.
    pub fn validate(&self) -> Result<EditSpec, FieldErrors> {
        let mut errors = FieldErrors::default();
        let style = required_choice(
            &mut errors,
            "style",
            self.style.as_deref(),
            StyleId::parse,
            (
                FieldCode::UnknownStyle,
                "is not a style from GET /v1/styles",
            ),
        );
        let target = required_choice(
            &mut errors,
            "target",
            self.target.as_deref(),
            Target::parse,
            (
                FieldCode::UnknownTarget,
                "must be one of pet, person, background, brush",
            ),
        );
        let strength = strength_field(&mut errors, self.strength.as_deref());
        let original = match self.original_asset_id.as_deref() {
            None => {
                errors.push("original_asset_id", FieldCode::Required, "is required");
                None
            }
            raw => asset_field(&mut errors, "original_asset_id", raw),
        };
        let mask = asset_field(&mut errors, "mask_asset_id", self.mask_asset_id.as_deref());
        let style_reference = asset_field(
            &mut errors,
            "style_reference_asset_id",
            self.style_reference_asset_id.as_deref(),
        );
        mask_rule(&mut errors, target, self.mask_asset_id.is_some());
        let preview = self.preview.unwrap_or(false);
        if preview && target == Some(Target::Brush) {
            errors.push(
                "preview",
                FieldCode::NotAllowed,
                "is not used with brush: the area is the one painted",
            );
        }
        let custom_style = optional_text(
            &mut errors,
            "custom_style",
            self.custom_style.as_deref(),
            limits::CUSTOM_STYLE_CHARS,
        );
        let target_description = optional_text(
            &mut errors,
            "target_description",
            self.target_description.as_deref(),
            limits::TARGET_DESCRIPTION_CHARS,
        );
        let locks = lock_list(&mut errors, &self.locks);

        match (style, target, strength, original) {
            (Some(style), Some(target), Some(strength), Some(original_asset_id))
                if errors.is_empty() =>
            {
                Ok(EditSpec {
                    style,
                    target,
                    strength,
                    original_asset_id,
                    mask_asset_id: mask,
                    style_reference_asset_id: style_reference,
                    custom_style,
                    target_description,
                    locks,
                    preview,
                })
            }
            _ => Err(errors),
        }
    }
}

impl EditSpec {
    /// SHA-256 (hex) over the canonical JSON of the validated request. Two bodies that differ
    /// only in formatting, key order, whitespace around text or an explicit default hash the
    /// same; any difference in meaning hashes differently.
    pub fn request_hash(&self) -> String {
        #[derive(Serialize)]
        struct Canonical<'a> {
            v: u8,
            op: &'static str,
            spec: &'a EditSpec,
        }
        let bytes = serde_json::to_vec(&Canonical {
            v: 1,
            op: "edit",
            spec: self,
        })
        .unwrap_or_default();
        hex::encode(Sha256::digest(bytes))
    }

    /// Every asset the edit reads, with the kind it must have.
    pub fn assets(&self) -> Vec<(&'static str, AssetKind, &AssetId)> {
        let mut out = vec![(
            "original_asset_id",
            AssetKind::Original,
            &self.original_asset_id,
        )];
        if let Some(m) = &self.mask_asset_id {
            out.push(("mask_asset_id", AssetKind::Mask, m));
        }
        if let Some(r) = &self.style_reference_asset_id {
            out.push(("style_reference_asset_id", AssetKind::StyleReference, r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_lists_exactly_what_the_request_accepts() {
        let all: serde_json::Map<String, serde_json::Value> = EditRequest::FIELDS
            .iter()
            .map(|f| {
                let v = if *f == "locks" {
                    serde_json::json!([])
                } else {
                    serde_json::json!("x")
                };
                ((*f).to_owned(), v)
            })
            .collect();
        assert!(serde_json::from_value::<EditRequest>(all.clone().into()).is_ok());
        let mut extra = all;
        extra.insert("colour".into(), serde_json::json!("x"));
        assert!(serde_json::from_value::<EditRequest>(extra.into()).is_err());
    }

    fn asset() -> String {
        AssetId::generate().as_str().to_owned()
    }

    fn valid() -> EditRequest {
        EditRequest {
            style: Some("embroidery".into()),
            target: Some("pet".into()),
            original_asset_id: Some(asset()),
            ..Default::default()
        }
    }

    #[test]
    fn a_minimal_request_gets_the_default_strength() {
        let spec = valid().validate().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spec.strength, Strength::Balanced);
        assert!(spec.locks.is_empty());
    }

    #[test]
    fn invalid_requests_name_the_field() {
        let cases: Vec<(&str, EditRequest, &str, &str)> = vec![
            (
                "unknown style",
                EditRequest {
                    style: Some("oil".into()),
                    ..valid()
                },
                "style",
                "unknown_style",
            ),
            (
                "missing style",
                EditRequest {
                    style: None,
                    ..valid()
                },
                "style",
                "required",
            ),
            (
                "unknown target",
                EditRequest {
                    target: Some("car".into()),
                    ..valid()
                },
                "target",
                "unknown_target",
            ),
            (
                "brush without mask",
                EditRequest {
                    target: Some("brush".into()),
                    ..valid()
                },
                "mask_asset_id",
                "required",
            ),
            (
                "mask without brush",
                EditRequest {
                    mask_asset_id: Some(asset()),
                    ..valid()
                },
                "mask_asset_id",
                "not_allowed",
            ),
            (
                "bad asset id",
                EditRequest {
                    original_asset_id: Some("x".into()),
                    ..valid()
                },
                "original_asset_id",
                "invalid_asset_id",
            ),
            (
                "long custom style",
                EditRequest {
                    custom_style: Some("a".repeat(201)),
                    ..valid()
                },
                "custom_style",
                "too_long",
            ),
            (
                "control char",
                EditRequest {
                    target_description: Some("a\u{0}b".into()),
                    ..valid()
                },
                "target_description",
                "control_character",
            ),
            (
                "tag characters",
                EditRequest {
                    target_description: Some("the cat\u{E0041}\u{E0042}".into()),
                    ..valid()
                },
                "target_description",
                "invisible_character",
            ),
            (
                "too many locks",
                EditRequest {
                    locks: vec!["a".into(), "b".into(), "c".into(), "d".into()],
                    ..valid()
                },
                "locks",
                "too_many",
            ),
            (
                "duplicate lock",
                EditRequest {
                    locks: vec!["Collar".into(), "collar".into()],
                    ..valid()
                },
                "locks[1]",
                "duplicate",
            ),
            (
                "blank lock",
                EditRequest {
                    locks: vec![" ".into()],
                    ..valid()
                },
                "locks[0]",
                "empty",
            ),
            (
                "bad strength",
                EditRequest {
                    strength: Some("max".into()),
                    ..valid()
                },
                "strength",
                "unknown_strength",
            ),
        ];
        for (why, req, field, code) in cases {
            let errs = req
                .validate()
                .err()
                .unwrap_or_else(|| panic!("{why}: accepted"));
            assert!(
                errs.0
                    .iter()
                    .any(|e| e.field == field && e.code.as_str() == code),
                "{why}: wanted {field}/{code}, got {errs:?}"
            );
        }
    }

    #[test]
    fn formatting_differences_hash_the_same() {
        let a = valid();
        let b = EditRequest {
            style: Some(" embroidery ".into()),
            strength: Some("balanced".into()),
            custom_style: Some("   ".into()),
            ..a.clone()
        };
        let (sa, sb) = (a.validate(), b.validate());
        assert_eq!(
            sa.as_ref().map(EditSpec::request_hash).ok(),
            sb.as_ref().map(EditSpec::request_hash).ok()
        );
        let c = EditRequest {
            strength: Some("strong".into()),
            ..a.clone()
        };
        assert_ne!(
            sa.map(|s| s.request_hash()).ok(),
            c.validate().map(|s| s.request_hash()).ok()
        );
    }
}
