//! Repeated clarifications are cheap: a readiness check that answered "not ready" is
//! remembered for the rest of its UTC day, and the same check asked again by the same user is
//! answered from memory — same questions, no model call, no reservation — and refunded like
//! any NEEDS_CLARIFICATION (docs/design.md, "Repeated clarifications").
//!
//! - The key is a digest of everything the check sees: the user (answers are never shared
//!   between users), the vision model, the prompt exactly as sent (it is built from the
//!   validated request, so the description is normalised as validation normalises it, and it
//!   names the target, medium, strength, custom style and locks) and the SHA-256 of each image
//!   exactly as sent (the photo by its content: a re-upload of the same bytes under a new
//!   asset id is the same photo). Anything the check would see differently calls again.
//! - "Not ready" is remembered: it is a property of the input (the same photo and words
//!   raise the same ambiguity). A "ready" answer is remembered only from a preview, so that
//!   the edit the person then asks for draws exactly the area they were shown, without a
//!   second check; an edit's own "ready" is not reused (a user who repeats a ready request
//!   wants a fresh look). Provider failures and malformed answers are never remembered.
//! - Memory is an optimisation, never a rule: a failed read or write is logged and the check
//!   is paid as before.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::Run;
use crate::adapters::model::ImageInput;
use crate::adapters::model::{Readiness, TargetBox};
use crate::clock::{self, Instant};
use crate::domain::prompts::VisionPrompt;
use crate::domain::result::AreaBox;
use crate::domain::{JobFailure, UserId};
use crate::services::budget;
use crate::store::schema::{ReadinessMemoryItem, RememberedReady, readiness_memory_key};

/// Where a check's answer is remembered, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MemoryKey {
    /// [`readiness_memory_key`] of the day and the digest.
    pub key: String,
    /// Unix seconds of the next UTC midnight (the item's TTL).
    pub expires_at: i64,
}

/// What the digest covers; its JSON is hashed (version first, so a change of layout starts
/// afresh instead of colliding).
#[derive(Serialize)]
struct Seen<'a> {
    v: u8,
    user: &'a str,
    model: &'a str,
    system: &'a str,
    text: &'a str,
    /// `(role, SHA-256 of the PNG sent)`, in the prompt's order.
    images: Vec<(String, String)>,
}

impl MemoryKey {
    /// The key of a readiness check by `user` with `model` on `prompt` and `images`, asked
    /// at `now` (its UTC day).
    pub fn readiness(
        user: &UserId,
        model: &str,
        prompt: &VisionPrompt,
        images: &[ImageInput],
        now: Instant,
    ) -> MemoryKey {
        let seen = Seen {
            v: 1,
            user: user.as_str(),
            model,
            system: &prompt.system,
            text: &prompt.text,
            images: images
                .iter()
                .map(|i| (format!("{:?}", i.role), hex::encode(Sha256::digest(&i.png))))
                .collect(),
        };
        // Serialising strings and a list of pairs cannot fail; an empty digest input would
        // still be keyed by the day and never match a real one.
        let bytes = serde_json::to_vec(&seen).unwrap_or_default();
        let digest = hex::encode(Sha256::digest(bytes));
        let next_midnight =
            crate::clock::next_utc_midnight(now).map_or(i64::MAX, |t| t.unix_timestamp());
        MemoryKey {
            key: readiness_memory_key(&budget::day_of(now), &digest),
            expires_at: next_midnight,
        }
    }
}

/// An answer remembered for the same check.
#[derive(Debug)]
pub(super) enum Remembered {
    /// Not ready: the questions (and subjects) to ask again.
    Asked(JobFailure),
    /// A preview's ready answer: the observation and area to draw from.
    Ready(Readiness),
}

impl Run<'_> {
    /// The answer remembered under `key` for this user, if any.
    pub(super) async fn recall(&self, key: &MemoryKey) -> Option<Remembered> {
        match self.p.app.store.get_readiness_memory(&key.key).await {
            // The user is in the digest; checking it again costs nothing and keeps a digest
            // collision from ever crossing accounts.
            Ok(Some(item)) if item.user_id == self.job.user_id => Some(match item.ready {
                Some(ready) => Remembered::Ready(readiness_of(ready)),
                None => Remembered::Asked(JobFailure::needs_clarification(
                    item.questions,
                    item.candidates,
                )),
            }),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(job_id = %self.job.job_id, error = %crate::error::chain(&e), "readiness_memory_read_failed");
                None
            }
        }
    }

    /// Remembers a "not ready" answer (its questions and candidates) under `key`.
    pub(super) async fn remember(&self, key: &MemoryKey, asked: &JobFailure) {
        self.put_memory(key, asked.questions.clone(), asked.candidates.clone(), None)
            .await;
    }

    /// Remembers a preview's "ready" answer (its observation and area) under `key`.
    pub(super) async fn remember_ready(&self, key: &MemoryKey, readiness: &Readiness) {
        let ready = RememberedReady {
            observation: readiness.observation.clone(),
            area: readiness.target_box.map(area_of),
        };
        self.put_memory(key, Vec::new(), Vec::new(), Some(ready))
            .await;
    }

    async fn put_memory(
        &self,
        key: &MemoryKey,
        questions: Vec<String>,
        candidates: Vec<crate::domain::Candidate>,
        ready: Option<RememberedReady>,
    ) {
        let item = ReadinessMemoryItem {
            day: key.key.clone(),
            user_id: self.job.user_id.clone(),
            questions,
            candidates,
            job_id: self.job.job_id.clone(),
            created_at: clock::format(clock::now()),
            expires_at: key.expires_at,
            ready,
        };
        if let Err(e) = self.p.app.store.put_readiness_memory(&item).await {
            tracing::warn!(job_id = %self.job.job_id, error = %crate::error::chain(&e), "readiness_memory_write_failed");
        }
    }
}

/// The checker's box as a job keeps it.
pub(super) fn area_of(b: TargetBox) -> AreaBox {
    AreaBox {
        x0: b.x0,
        y0: b.y0,
        x1: b.x1,
        y1: b.y1,
    }
}

/// A remembered preview as the readiness answer the edit draws from.
fn readiness_of(ready: RememberedReady) -> Readiness {
    Readiness {
        ready: true,
        observation: ready.observation,
        questions: Vec::new(),
        target_box: ready.area.map(|a| TargetBox {
            x0: a.x0,
            y0: a.y0,
            x1: a.x1,
            y1: a.y1,
        }),
        candidates: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::model::ImageRole;

    fn user(name: &str) -> UserId {
        UserId::parse(name).unwrap_or_else(|| panic!("user {name}"))
    }

    fn prompt(text: &str) -> VisionPrompt {
        VisionPrompt {
            system: "check".into(),
            text: text.into(),
            images: vec![ImageRole::Original],
        }
    }

    fn photo(bytes: &[u8]) -> Vec<ImageInput> {
        vec![ImageInput::png(ImageRole::Original, bytes.to_vec())]
    }

    fn key(user_name: &str, model: &str, text: &str, bytes: &[u8], now: Instant) -> String {
        MemoryKey::readiness(&user(user_name), model, &prompt(text), &photo(bytes), now).key
    }

    #[test]
    fn the_same_check_on_the_same_day_has_the_same_key_and_anything_seen_differently_another() {
        let noon = time::macros::datetime!(2026-12-01 12:00 UTC);
        let base = key("alice", "m", "two pets", b"png", noon);
        let later = time::macros::datetime!(2026-12-01 23:59:59 UTC);
        assert_eq!(key("alice", "m", "two pets", b"png", later), base);
        assert!(base.starts_with("2026-12-01#readiness#"), "{base}");
        let others = [
            ("another user", key("bob", "m", "two pets", b"png", noon)),
            ("another model", key("alice", "n", "two pets", b"png", noon)),
            ("other words", key("alice", "m", "the cat", b"png", noon)),
            ("another photo", key("alice", "m", "two pets", b"pnh", noon)),
            (
                "the next day",
                key(
                    "alice",
                    "m",
                    "two pets",
                    b"png",
                    time::macros::datetime!(2026-12-02 00:00 UTC),
                ),
            ),
        ];
        for (why, other) in others {
            assert_ne!(other, base, "{why}");
        }
    }

    #[test]
    fn a_remembered_answer_expires_at_the_next_utc_midnight() {
        let now = time::macros::datetime!(2026-12-01 12:00 +02:00);
        let k = MemoryKey::readiness(&user("alice"), "m", &prompt("t"), &photo(b"p"), now);
        let midnight = time::macros::datetime!(2026-12-02 00:00 UTC).unix_timestamp();
        assert_eq!(k.expires_at, midnight);
    }
}
