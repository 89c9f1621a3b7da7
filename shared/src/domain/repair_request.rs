//! The repair REQUEST as a client sends it and its validated form: only an instruction. The
//! settings of the edit (style, target, strength, assets, locks) are the original's and cannot
//! change (naming one is `settings_locked`); a different style is a new edit. Its hash names
//! the lineage and the words, so a replay must repeat both. Also the lineage's limits.

use crate::domain::validation::FieldCode;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::edit::EditRequest;
use super::ids::JobId;
use crate::domain::validation::{FieldErrors, clean_text};

/// Longest repair instruction, in characters.
pub const INSTRUCTION_CHARS: usize = 300;

/// Repairs per original edit (rule 7).
pub const MAX_REPAIRS: u32 = 2;

/// Repair attempts per original edit, counting refunded ones: a lineage whose repairs keep
/// failing stops costing model calls.
pub const MAX_REPAIR_ATTEMPTS: u32 = 4;

/// How many more repairs a lineage accepts: none once stopped, else the fewer of the repairs
/// left (`MAX_REPAIRS` minus those charged and not refunded) and the attempts left
/// (`MAX_REPAIR_ATTEMPTS` minus every accepted submission, refunded ones included). The
/// submit's condition (`store::lineage`) takes its slot exactly while this is above zero
/// (`used < MAX_REPAIRS AND attempts < MAX_REPAIR_ATTEMPTS AND NOT stopped`, with no repair
/// in flight) and classifies its refusal from this, and the lineage view shows it, so the
/// two cannot disagree.
pub fn repairs_left(used: u32, attempts: u32, stopped: bool) -> u32 {
    if stopped {
        return 0;
    }
    MAX_REPAIRS
        .saturating_sub(used)
        .min(MAX_REPAIR_ATTEMPTS.saturating_sub(attempts))
}

/// The repair body as a client sends it.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct RepairRequest {
    /// What to improve, e.g. "make the stitches on the ears finer". Treated as data.
    #[schema(value_type = String, required = true, example = "make the stitches on the ears finer")]
    pub instruction: Option<String>,
    /// Anything else is refused: a repair keeps the edit's settings.
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// A validated repair instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairSpec {
    pub instruction: String,
}

impl RepairRequest {
    pub fn validate(&self) -> Result<RepairSpec, FieldErrors> {
        let mut errors = FieldErrors::default();
        for field in self.other.keys() {
            if EditRequest::FIELDS.contains(&field.as_str()) {
                errors.push(
                    field.clone(),
                    FieldCode::SettingsLocked,
                    "a repair keeps the edit's settings; for a different one, start a new edit (POST /v1/edits)",
                );
            } else {
                errors.push(
                    field.clone(),
                    FieldCode::UnknownField,
                    "is not a field of a repair",
                );
            }
        }
        let instruction = match self.instruction.as_deref() {
            None => {
                errors.push("instruction", FieldCode::Required, "is required");
                None
            }
            Some(raw) if raw.trim().is_empty() => {
                errors.push("instruction", FieldCode::Required, "is required");
                None
            }
            Some(raw) => match clean_text(raw, INSTRUCTION_CHARS) {
                Ok(t) => Some(t),
                Err(e) => {
                    errors.push("instruction", e.code(), e.message());
                    None
                }
            },
        };
        match instruction {
            Some(instruction) if errors.is_empty() => Ok(RepairSpec { instruction }),
            _ => Err(errors),
        }
    }
}

impl RepairSpec {
    /// The canonical hash of a repair of `root`: a replay must name the same lineage and say
    /// the same thing.
    pub fn request_hash(&self, root: &JobId) -> String {
        #[derive(Serialize)]
        struct Canonical<'a> {
            v: u8,
            op: &'static str,
            root: &'a JobId,
            instruction: &'a str,
        }
        let bytes = serde_json::to_vec(&Canonical {
            v: 1,
            op: "repair",
            root,
            instruction: &self.instruction,
        })
        .unwrap_or_default();
        hex::encode(Sha256::digest(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<RepairSpec, FieldErrors> {
        serde_json::from_str::<RepairRequest>(json)
            .map_err(|_| FieldErrors::default())
            .and_then(|r| r.validate())
    }

    #[test]
    fn an_instruction_alone_is_a_repair() {
        let spec = parse(r#"{"instruction": "  finer stitches  "}"#);
        assert_eq!(
            spec.ok().map(|s| s.instruction),
            Some("finer stitches".to_owned())
        );
    }

    #[test]
    fn a_repair_that_tries_to_change_the_style_is_refused_naming_the_field() {
        let errors = parse(r#"{"instruction": "x", "style": "origami"}"#).err();
        let errors = errors.map(|e| e.0).unwrap_or_default();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "style");
        assert_eq!(errors[0].code.as_str(), "settings_locked");
    }

    #[test]
    fn missing_blank_or_long_instructions_are_refused() {
        for body in [
            "{}".to_owned(),
            r#"{"instruction": "   "}"#.to_owned(),
            format!(
                r#"{{"instruction": "{}"}}"#,
                "a".repeat(INSTRUCTION_CHARS + 1)
            ),
        ] {
            let errors = parse(&body).err().map(|e| e.0).unwrap_or_default();
            assert_eq!(errors.len(), 1, "{body}");
            assert_eq!(errors[0].field, "instruction");
        }
    }

    #[test]
    fn repairs_left_is_above_zero_exactly_when_the_submit_condition_holds() {
        for used in 0..=MAX_REPAIRS + 1 {
            for attempts in used..=MAX_REPAIR_ATTEMPTS + 1 {
                for stopped in [false, true] {
                    // The condition of `create_repair_with_debit`, in Rust.
                    let accepted = used < MAX_REPAIRS && attempts < MAX_REPAIR_ATTEMPTS && !stopped;
                    let left = repairs_left(used, attempts, stopped);
                    assert_eq!(left > 0, accepted, "used {used}, attempts {attempts}");
                    assert!(left <= MAX_REPAIRS - used.min(MAX_REPAIRS));
                }
            }
        }
        assert_eq!(repairs_left(0, 0, false), MAX_REPAIRS);
        assert_eq!(
            repairs_left(0, 3, false),
            1,
            "three refunded attempts leave one"
        );
        assert_eq!(repairs_left(1, 4, false), 0);
    }

    #[test]
    fn the_hash_names_the_lineage_and_the_words() {
        let a = JobId::parse("job_aaaaaaaaaaaaaaaaaaaaaaaaaa");
        let b = JobId::parse("job_bbbbbbbbbbbbbbbbbbbbbbbbbb");
        let (Some(a), Some(b)) = (a, b) else {
            panic!("test ids must parse");
        };
        let x = RepairSpec {
            instruction: "finer".into(),
        };
        let y = RepairSpec {
            instruction: "coarser".into(),
        };
        assert_eq!(x.request_hash(&a), x.clone().request_hash(&a));
        assert_ne!(x.request_hash(&a), x.request_hash(&b));
        assert_ne!(x.request_hash(&a), y.request_hash(&a));
    }
}
