//! The API's JSON, as far as the client reads it (unknown fields are ignored).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
pub struct Upload {
    pub asset_id: String,
    pub upload_url: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
pub struct Job {
    pub id: String,
    #[serde(default)]
    pub operation: String,
    pub status: String,
    #[serde(default)]
    pub credits: i64,
    #[serde(default)]
    pub settings: Value,
    #[serde(default)]
    pub created_at: String,
    pub failure: Option<Failure>,
    pub result: Option<JobResult>,
    /// On `GET /v1/edits/{id}` of an edit with repairs, or of a repair.
    pub lineage: Option<Lineage>,
}

#[derive(Debug, Deserialize)]
pub struct Failure {
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub questions: Vec<String>,
    /// The subjects a question offers, or a preview's one area.
    #[serde(default)]
    pub candidates: Vec<Candidate>,
}

#[derive(Debug, Deserialize)]
pub struct Candidate {
    pub label: String,
    pub area: Area,
}

/// A box in thousandths of the photo's width and height.
#[derive(Debug, Deserialize)]
pub struct Area {
    pub x0: u16,
    pub y0: u16,
    pub x1: u16,
    pub y1: u16,
}

#[derive(Debug, Deserialize)]
pub struct JobResult {
    pub url: String,
    pub width: u32,
    pub height: u32,
    pub review: Review,
    pub leakage: Option<Leakage>,
    /// A repair: how its candidate compared with the version the user held.
    pub comparison: Option<Comparison>,
    /// A repair that did not improve: `url` is the previous version, kept.
    #[serde(default)]
    pub retained_previous: bool,
    /// What the image's content credentials (C2PA) say; absent on results delivered before
    /// signing existed.
    pub content_credentials: Option<Credentials>,
}

/// A result's content credentials as the API reads them: the label to show ("Edited with AI")
/// and one sentence saying what changed, with which model, when and who signed it.
#[derive(Debug, Deserialize)]
pub struct Credentials {
    pub label: String,
    pub summary: String,
}

#[derive(Debug, Deserialize)]
pub struct Comparison {
    pub outcome: String,
    #[serde(default)]
    pub notes: String,
}

#[derive(Debug, Deserialize)]
pub struct Lineage {
    pub repairs_left: u32,
    pub current_job_id: String,
}

#[derive(Debug, Deserialize)]
pub struct Review {
    pub verdict: String,
    #[serde(default)]
    pub notes: String,
}

#[derive(Debug, Deserialize)]
pub struct Leakage {
    pub changed_outside: u64,
    pub outside: u64,
    pub ratio_ppm: u64,
    pub basis: String,
}

#[derive(Debug, Deserialize)]
pub struct Quote {
    pub credits: u32,
    #[serde(default)]
    pub lines: Vec<QuoteLine>,
}

#[derive(Debug, Deserialize)]
pub struct QuoteLine {
    pub item: String,
    pub credits: u32,
}

#[derive(Debug, Deserialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Style {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub blurb: String,
}

#[derive(Debug, Deserialize)]
pub struct Account {
    pub user_id: String,
    pub balance: i64,
    pub in_flight: i64,
    pub max_in_flight: u32,
}

#[derive(Debug, Deserialize)]
pub struct LedgerRow {
    pub amount: i64,
    pub kind: String,
    pub reference: String,
    #[serde(default)]
    pub reason: Option<String>,
    pub created_at: String,
}
