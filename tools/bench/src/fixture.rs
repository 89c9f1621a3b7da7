//! What the measurements submit: a new user with a photo, the pet edit, a job's id.

use anyhow::{Context, Result};
use atelier_model_server::samples;
use atelier_shared::domain::{JobId, UserId};
use atelier_tests::Harness;
use serde_json::{Value, json};

pub fn pet() -> Value {
    json!({ "style": "embroidery", "target": "pet" })
}

pub fn job_id(id: &str) -> Result<JobId> {
    JobId::parse(id).with_context(|| format!("job id {id:?}"))
}

pub async fn new_user_with_photo(h: &Harness) -> (UserId, String) {
    let user = h.user();
    let _ = h.balance(&user).await;
    let asset = h.upload(&user, "original", samples::single_pet()).await;
    (user, asset)
}
