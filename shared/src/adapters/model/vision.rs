//! The three vision answers: their JSON schemas (sent as a strict `json_schema` response
//! format) and their strict validation. A vision answer is trusted only after it parses into
//! one of these types: missing fields, extra fields, wrong types, over-long strings, more than
//! three questions or a self-contradicting verdict are [`super::Malformed`], never a pass.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::Malformed;

/// Schema names, agreed with the stand-in model server (it answers by them).
pub const READINESS_SCHEMA: &str = "readiness_check";
pub const REVIEW_SCHEMA: &str = "edit_review";
pub const COMPARISON_SCHEMA: &str = "repair_comparison";

/// Longest observation or notes accepted, in characters.
pub const MAX_TEXT_CHARS: usize = 1_000;
/// Longest question accepted, in characters.
pub const MAX_QUESTION_CHARS: usize = 300;
/// Most questions a not-ready answer may ask.
pub const MAX_QUESTIONS: usize = 3;
/// Most candidates a not-ready answer may outline, and the longest label of one.
pub const MAX_CANDIDATES: usize = 6;
pub const MAX_CANDIDATE_LABEL_CHARS: usize = 80;

/// A vision answer type: its schema name, its JSON schema, and its validation.
pub trait VisionAnswer: Sized {
    const SCHEMA_NAME: &'static str;
    fn schema() -> Value;
    /// Parses the model's message content (a JSON string) strictly.
    fn parse(content: &str) -> Result<Self, Malformed>;
}

/// The box around the target, in thousandths of the image's width and height.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetBox {
    pub x0: u16,
    pub y0: u16,
    pub x1: u16,
    pub y1: u16,
}

impl TargetBox {
    /// Inside the image (thousandths) and not empty.
    pub fn is_valid(self) -> bool {
        self.x1 <= 1000 && self.y1 <= 1000 && self.x0 < self.x1 && self.y0 < self.y1
    }

    /// The box in pixels of a `width`×`height` image: (x0, y0, x1, y1), x1/y1 exclusive.
    pub fn to_pixels(self, width: u32, height: u32) -> (u32, u32, u32, u32) {
        let scale =
            |v: u16, side: u32| ((u64::from(v) * u64::from(side)).div_ceil(1000) as u32).min(side);
        let floor = |v: u16, side: u32| ((u64::from(v) * u64::from(side)) / 1000) as u32;
        (
            floor(self.x0, width),
            floor(self.y0, height),
            scale(self.x1, width),
            scale(self.y1, height),
        )
    }
}

/// The readiness check's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Readiness {
    pub ready: bool,
    /// What the checker saw; fed into the edit prompt.
    pub observation: String,
    /// Empty when ready; 1 to 3 questions for the user when not.
    pub questions: Vec<String>,
    /// For a pet or person, when ready: the box around the target (a leakage basis when there
    /// is no mask). Null otherwise.
    pub target_box: Option<TargetBox>,
    /// When not ready because several subjects could be meant: each one, for the person to
    /// pick on the photo. Empty otherwise.
    pub candidates: Vec<Candidate>,
}

/// One subject the request could mean: what a person would call it and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// Short words that name it, e.g. "the grey cat on the left": sent back as the answer.
    pub label: String,
    pub target_box: TargetBox,
}

/// The reviewer's verdict as the model gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Passed,
    Failed,
}

/// The review of an edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    pub verdict: Verdict,
    pub target_reads_as_medium: bool,
    pub rest_photographic: bool,
    pub style_leaked: bool,
    pub notes: String,
}

/// How a repair candidate compares with the current version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Improved,
    Unchanged,
    Worse,
}

/// The comparison of a repair candidate with the current version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    pub outcome: Outcome,
    pub notes: String,
}

fn schema_violation(why: impl Into<String>) -> Malformed {
    Malformed::Schema(why.into())
}

/// Parses `content` as a JSON object with exactly `keys` (serde's `Option` would otherwise
/// accept a missing nullable field), then into `T` (which denies unknown fields).
fn parse_exact<T: for<'de> Deserialize<'de>>(content: &str, keys: &[&str]) -> Result<T, Malformed> {
    let value: Value = serde_json::from_str(content).map_err(Malformed::AnswerJson)?;
    let Some(object) = value.as_object() else {
        return Err(schema_violation("the answer is not a JSON object"));
    };
    for key in keys {
        if !object.contains_key(*key) {
            return Err(schema_violation(format!("missing field {key}")));
        }
    }
    serde_json::from_value(value).map_err(Malformed::AnswerJson)
}

fn check_text(field: &str, text: &str, max: usize, allow_empty: bool) -> Result<(), Malformed> {
    if !allow_empty && text.trim().is_empty() {
        return Err(schema_violation(format!("{field} is empty")));
    }
    if text.chars().count() > max {
        return Err(schema_violation(format!(
            "{field} is over {max} characters"
        )));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(schema_violation(format!("{field} has control characters")));
    }
    Ok(())
}

/// At most [`MAX_CANDIDATES`], each labelled and boxed, and only with a question to answer.
fn check_candidates(answer: &Readiness) -> Result<(), Malformed> {
    if answer.candidates.len() > MAX_CANDIDATES {
        return Err(schema_violation(format!(
            "{} candidates; at most {MAX_CANDIDATES}",
            answer.candidates.len()
        )));
    }
    if answer.ready && !answer.candidates.is_empty() {
        return Err(schema_violation("ready, yet outlines candidates"));
    }
    for c in &answer.candidates {
        check_text(
            "candidate label",
            &c.label,
            MAX_CANDIDATE_LABEL_CHARS,
            false,
        )?;
        if !c.target_box.is_valid() {
            return Err(schema_violation(
                "a candidate's box is out of range or empty",
            ));
        }
    }
    Ok(())
}

fn string_schema(description: &str) -> Value {
    json!({ "type": "string", "description": description })
}

impl VisionAnswer for Readiness {
    const SCHEMA_NAME: &'static str = READINESS_SCHEMA;

    fn schema() -> Value {
        let coord = json!({ "type": "integer", "minimum": 0, "maximum": 1000 });
        let box_ = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["x0", "y0", "x1", "y1"],
            "properties": { "x0": coord, "y0": coord, "x1": coord, "y1": coord }
        });
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["ready", "observation", "questions", "target_box", "candidates"],
            "properties": {
                "ready": { "type": "boolean" },
                "observation": string_schema("What is visible: the target, where it is, and what sits at the selection's boundary. At most 1000 characters."),
                "questions": {
                    "type": "array",
                    "maxItems": MAX_QUESTIONS,
                    "items": string_schema("One short question for the user, at most 300 characters."),
                    "description": "Empty when ready; one to three questions when not."
                },
                "target_box": {
                    "anyOf": [
                        { "type": "null" },
                        box_.clone()
                    ]
                },
                "candidates": {
                    "type": "array",
                    "maxItems": MAX_CANDIDATES,
                    "description": "When not ready because several subjects could be meant: each of them; otherwise empty.",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["label", "target_box"],
                        "properties": {
                            "label": string_schema("Short words a person would use for this one, e.g. \"the grey cat on the left\". At most 80 characters."),
                            "target_box": box_
                        }
                    }
                }
            }
        })
    }

    fn parse(content: &str) -> Result<Self, Malformed> {
        let answer: Readiness = parse_exact(
            content,
            &[
                "ready",
                "observation",
                "questions",
                "target_box",
                "candidates",
            ],
        )?;
        check_text("observation", &answer.observation, MAX_TEXT_CHARS, false)?;
        if answer.questions.len() > MAX_QUESTIONS {
            return Err(schema_violation(format!(
                "{} questions; at most {MAX_QUESTIONS}",
                answer.questions.len()
            )));
        }
        for q in &answer.questions {
            check_text("question", q, MAX_QUESTION_CHARS, false)?;
        }
        match (answer.ready, answer.questions.is_empty()) {
            (true, false) => return Err(schema_violation("ready, yet asks questions")),
            (false, true) => return Err(schema_violation("not ready, yet asks nothing")),
            _ => {}
        }
        if answer.target_box.is_some_and(|b| !b.is_valid()) {
            return Err(schema_violation("target_box is out of range or empty"));
        }
        check_candidates(&answer)?;
        Ok(answer)
    }
}

impl VisionAnswer for Review {
    const SCHEMA_NAME: &'static str = REVIEW_SCHEMA;

    fn schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["verdict", "target_reads_as_medium", "rest_photographic", "style_leaked", "notes"],
            "properties": {
                "verdict": { "type": "string", "enum": ["passed", "failed"] },
                "target_reads_as_medium": { "type": "boolean" },
                "rest_photographic": { "type": "boolean" },
                "style_leaked": { "type": "boolean" },
                "notes": string_schema("Evidence from the images, at most 1000 characters.")
            }
        })
    }

    fn parse(content: &str) -> Result<Self, Malformed> {
        let answer: Review = parse_exact(
            content,
            &[
                "verdict",
                "target_reads_as_medium",
                "rest_photographic",
                "style_leaked",
                "notes",
            ],
        )?;
        check_text("notes", &answer.notes, MAX_TEXT_CHARS, true)?;
        let earned =
            answer.target_reads_as_medium && answer.rest_photographic && !answer.style_leaked;
        if answer.verdict == Verdict::Passed && !earned {
            return Err(schema_violation(
                "verdict passed contradicts the reviewer's own findings",
            ));
        }
        Ok(answer)
    }
}

impl VisionAnswer for Comparison {
    const SCHEMA_NAME: &'static str = COMPARISON_SCHEMA;

    fn schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["outcome", "notes"],
            "properties": {
                "outcome": { "type": "string", "enum": ["improved", "unchanged", "worse"] },
                "notes": string_schema("Evidence from the images, at most 1000 characters.")
            }
        })
    }

    fn parse(content: &str) -> Result<Self, Malformed> {
        let answer: Comparison = parse_exact(content, &["outcome", "notes"])?;
        check_text("notes", &answer.notes, MAX_TEXT_CHARS, true)?;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_answers_parse() {
        let r = Readiness::parse(
            r#"{"ready":true,"observation":"A cat.","questions":[],"target_box":{"x0":10,"y0":20,"x1":500,"y1":900},"candidates":[]}"#,
        );
        assert_eq!(
            r.map(|r| r.target_box.map(|b| b.to_pixels(1000, 500))).ok(),
            Some(Some((10, 10, 500, 450)))
        );
        let r = Readiness::parse(
            r#"{"ready":false,"observation":"Two cats.","questions":["Which cat?"],"target_box":null,"candidates":[]}"#,
        );
        assert!(r.is_ok(), "{r:?}");
        let r = Readiness::parse(
            r#"{"ready":false,"observation":"Two cats.","questions":["Which cat?"],"target_box":null,"candidates":[{"label":"the cat on the left","target_box":{"x0":100,"y0":300,"x1":380,"y1":700}}]}"#,
        );
        assert_eq!(
            r.map(|r| r
                .candidates
                .into_iter()
                .map(|c| c.label)
                .collect::<Vec<_>>())
                .ok(),
            Some(vec!["the cat on the left".to_owned()])
        );
        let v = Review::parse(
            r#"{"verdict":"failed","target_reads_as_medium":true,"rest_photographic":false,"style_leaked":true,"notes":"leaks"}"#,
        );
        assert_eq!(v.map(|v| v.verdict).ok(), Some(Verdict::Failed));
        let c = Comparison::parse(r#"{"outcome":"worse","notes":""}"#);
        assert_eq!(c.map(|c| c.outcome).ok(), Some(Outcome::Worse));
    }

    #[test]
    fn bad_answers_are_malformed_never_a_pass() {
        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        let long_q = "q".repeat(MAX_QUESTION_CHARS + 1);
        let one = r#"{"label":"the cat","target_box":{"x0":0,"y0":0,"x1":10,"y1":10}}"#;
        let seven = [one; MAX_CANDIDATES + 1].join(",");
        let readiness_cases: Vec<(&str, String)> = vec![
            ("not json", "{\"ready\": tru".into()),
            ("not an object", "[true]".into()),
            ("missing field", r#"{"ready":true,"observation":"ok","questions":[]}"#.into()),
            ("extra field", r#"{"ready":true,"observation":"ok","questions":[],"target_box":null,"candidates":[],"verdict":"passed"}"#.into()),
            ("wrong type", r#"{"ready":"yes","observation":"ok","questions":[],"target_box":null,"candidates":[]}"#.into()),
            ("four questions", r#"{"ready":false,"observation":"?","questions":["a","b","c","d"],"target_box":null,"candidates":[]}"#.into()),
            ("long observation", format!(r#"{{"ready":true,"observation":"{long}","questions":[],"target_box":null,"candidates":[]}}"#)),
            ("long question", format!(r#"{{"ready":false,"observation":"?","questions":["{long_q}"],"target_box":null,"candidates":[]}}"#)),
            ("empty observation", r#"{"ready":true,"observation":" ","questions":[],"target_box":null,"candidates":[]}"#.into()),
            ("ready with questions", r#"{"ready":true,"observation":"ok","questions":["why?"],"target_box":null,"candidates":[]}"#.into()),
            ("not ready without questions", r#"{"ready":false,"observation":"hm","questions":[],"target_box":null,"candidates":[]}"#.into()),
            ("inverted box", r#"{"ready":true,"observation":"ok","questions":[],"target_box":{"x0":500,"y0":0,"x1":100,"y1":10},"candidates":[]}"#.into()),
            ("box past the edge", r#"{"ready":true,"observation":"ok","questions":[],"target_box":{"x0":0,"y0":0,"x1":1001,"y1":10},"candidates":[]}"#.into()),
            ("control character", r#"{"ready":true,"observation":"a\u0007b","questions":[],"target_box":null,"candidates":[]}"#.into()),
            ("missing candidates", r#"{"ready":false,"observation":"?","questions":["Which?"],"target_box":null}"#.into()),
            ("ready with candidates", format!(r#"{{"ready":true,"observation":"ok","questions":[],"target_box":null,"candidates":[{one}]}}"#)),
            ("seven candidates", format!(r#"{{"ready":false,"observation":"?","questions":["Which?"],"target_box":null,"candidates":[{seven}]}}"#)),
            ("unlabelled candidate", r#"{"ready":false,"observation":"?","questions":["Which?"],"target_box":null,"candidates":[{"label":" ","target_box":{"x0":0,"y0":0,"x1":10,"y1":10}}]}"#.into()),
            ("candidate box past the edge", r#"{"ready":false,"observation":"?","questions":["Which?"],"target_box":null,"candidates":[{"label":"the cat","target_box":{"x0":0,"y0":0,"x1":1001,"y1":10}}]}"#.into()),
        ];
        for (why, content) in readiness_cases {
            assert!(
                Readiness::parse(&content).is_err(),
                "readiness {why}: accepted"
            );
        }
        let review_cases: Vec<(&str, &str)> = vec![
            (
                "unknown verdict",
                r#"{"verdict":"pass","target_reads_as_medium":true,"rest_photographic":true,"style_leaked":false,"notes":""}"#,
            ),
            (
                "passed with a leak",
                r#"{"verdict":"passed","target_reads_as_medium":true,"rest_photographic":true,"style_leaked":true,"notes":""}"#,
            ),
            (
                "passed without the medium",
                r#"{"verdict":"passed","target_reads_as_medium":false,"rest_photographic":true,"style_leaked":false,"notes":""}"#,
            ),
            (
                "missing notes",
                r#"{"verdict":"failed","target_reads_as_medium":true,"rest_photographic":true,"style_leaked":false}"#,
            ),
            (
                "extra field",
                r#"{"verdict":"failed","target_reads_as_medium":true,"rest_photographic":true,"style_leaked":false,"notes":"","score":1}"#,
            ),
        ];
        for (why, content) in review_cases {
            assert!(Review::parse(content).is_err(), "review {why}: accepted");
        }
        for (why, content) in [
            ("unknown outcome", r#"{"outcome":"better","notes":""}"#),
            (
                "extra field",
                r#"{"outcome":"improved","notes":"","why":"x"}"#,
            ),
            ("missing notes", r#"{"outcome":"improved"}"#),
        ] {
            assert!(
                Comparison::parse(content).is_err(),
                "comparison {why}: accepted"
            );
        }
    }

    #[test]
    fn schemas_are_strict_objects_requiring_every_property() {
        for schema in [Readiness::schema(), Review::schema(), Comparison::schema()] {
            assert_eq!(schema["additionalProperties"], false);
            let props = schema["properties"]
                .as_object()
                .map(|m| m.len())
                .unwrap_or(0);
            let required = schema["required"].as_array().map(Vec::len).unwrap_or(0);
            assert_eq!(props, required);
        }
    }
}
