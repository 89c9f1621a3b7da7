//! Standard Webhooks signatures (the symmetric `v1` scheme), as the specification defines them
//! and its official libraries verify them: the receiver gets `webhook-id` (the event's id, the
//! same on every retry, so receivers dedupe by it), `webhook-timestamp` (unix seconds of this
//! attempt) and `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256>` over
//! `"{id}.{timestamp}.{body}"`, one per active secret (two while a secret is rotated). Secrets
//! are random bytes shown as `whsec_<base64>`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The header names the specification fixes.
pub const ID_HEADER: &str = "webhook-id";
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// The prefix that marks a serialized secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// Bytes of a new secret (the specification allows 24 to 64).
pub const SECRET_BYTES: usize = 32;
/// How far a timestamp may be from the receiver's clock (the official libraries' tolerance).
pub const TOLERANCE_SECS: i64 = 300;

type HmacSha256 = Hmac<Sha256>;

/// Why a secret or a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error("a webhook secret is whsec_ followed by base64 of 24 to 64 bytes")]
    BadSecret,
    #[error("a webhook-id must be non-empty and contain no '.'")]
    BadId,
    #[error("a webhook header is missing or malformed")]
    Malformed,
    #[error("no v1 signature matches the body")]
    NoMatch,
    #[error("the timestamp is {skew} s away from now; at most {TOLERANCE_SECS} s are accepted")]
    Stale { skew: i64 },
}

/// A signing secret: its raw bytes. Displayed only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// A new random secret.
    pub fn generate() -> Secret {
        let bytes: [u8; SECRET_BYTES] = rand::random();
        Secret(bytes.to_vec())
    }

    /// Parses `whsec_<base64>` (the prefix is optional, as the official libraries allow).
    pub fn parse(text: &str) -> Result<Secret, SignError> {
        let b64 = text.strip_prefix(SECRET_PREFIX).unwrap_or(text);
        let bytes = STANDARD.decode(b64).map_err(|_| SignError::BadSecret)?;
        if !(24..=64).contains(&bytes.len()) {
            return Err(SignError::BadSecret);
        }
        Ok(Secret(bytes))
    }

    /// The serialized form, `whsec_<base64>`: what the operator hands to the receiver once.
    pub fn expose(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.0))
    }

    fn mac(&self, id: &str, timestamp: i64, body: &[u8]) -> Option<HmacSha256> {
        let mut mac = HmacSha256::new_from_slice(&self.0).ok()?;
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        Some(mac)
    }

    /// `v1,<base64>` for one message.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let digest = self
            .mac(id, timestamp, body)
            .map(|m| STANDARD.encode(m.finalize().into_bytes()))
            .unwrap_or_default();
        format!("v1,{digest}")
    }
}

/// The three headers of one delivery attempt, signed with every active secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
}

impl SignedHeaders {
    /// As `(name, value)` pairs, in the specification's order.
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            (ID_HEADER, &self.id),
            (TIMESTAMP_HEADER, &self.timestamp),
            (SIGNATURE_HEADER, &self.signature),
        ]
    }
}

/// Signs `body` as message `id` at `timestamp` with each of `secrets` (at least one).
pub fn sign(
    id: &str,
    timestamp: i64,
    body: &[u8],
    secrets: &[Secret],
) -> Result<SignedHeaders, SignError> {
    if id.is_empty() || id.contains('.') || secrets.is_empty() {
        return Err(SignError::BadId);
    }
    let signature = secrets
        .iter()
        .map(|s| s.sign(id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(SignedHeaders {
        id: id.to_owned(),
        timestamp: timestamp.to_string(),
        signature,
    })
}

/// Verifies a delivery as a receiver would (our tests' receiver): any `v1` signature matching
/// in constant time, and a timestamp within [`TOLERANCE_SECS`] of `now`.
pub fn verify(
    secret: &Secret,
    headers: &SignedHeaders,
    body: &[u8],
    now: i64,
) -> Result<(), SignError> {
    let timestamp: i64 = headers
        .timestamp
        .parse()
        .map_err(|_| SignError::Malformed)?;
    let expected = secret
        .mac(&headers.id, timestamp, body)
        .ok_or(SignError::Malformed)?;
    let matches = headers.signature.split(' ').any(|part| {
        part.strip_prefix("v1,")
            .and_then(|b64| STANDARD.decode(b64).ok())
            .is_some_and(|bytes| expected.clone().verify_slice(&bytes).is_ok())
    });
    if !matches {
        return Err(SignError::NoMatch);
    }
    let skew = (now - timestamp).abs();
    if skew > TOLERANCE_SECS {
        return Err(SignError::Stale { skew });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The specification's libraries share this vector (their Go and C# tests: TestWebhookSign).
    const VECTOR_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const VECTOR_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const VECTOR_TS: i64 = 1_614_265_330;
    const VECTOR_BODY: &str = r#"{"test": 2432232314}"#;
    const VECTOR_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn vector_secret() -> Secret {
        Secret::parse(VECTOR_SECRET).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn signs_the_published_test_vector() {
        let h = sign(
            VECTOR_ID,
            VECTOR_TS,
            VECTOR_BODY.as_bytes(),
            &[vector_secret()],
        );
        assert_eq!(h.map(|h| h.signature).as_deref(), Ok(VECTOR_SIG));
    }

    #[test]
    fn rotation_sends_one_signature_per_secret_and_each_verifies() {
        let (old, new) = (vector_secret(), Secret::generate());
        let h = sign(VECTOR_ID, VECTOR_TS, b"{}", &[new.clone(), old.clone()])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(h.signature.split(' ').count(), 2);
        assert_eq!(verify(&old, &h, b"{}", VECTOR_TS), Ok(()));
        assert_eq!(verify(&new, &h, b"{}", VECTOR_TS + 10), Ok(()));
    }

    #[test]
    fn verify_refuses_tampered_body_wrong_secret_and_stale_timestamp() {
        let secret = vector_secret();
        let h = sign(VECTOR_ID, VECTOR_TS, b"{}", std::slice::from_ref(&secret))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            verify(&secret, &h, b"{ }", VECTOR_TS),
            Err(SignError::NoMatch)
        );
        assert_eq!(
            verify(&Secret::generate(), &h, b"{}", VECTOR_TS),
            Err(SignError::NoMatch)
        );
        assert_eq!(
            verify(&secret, &h, b"{}", VECTOR_TS + 301),
            Err(SignError::Stale { skew: 301 })
        );
    }

    #[test]
    fn secrets_round_trip_and_bad_ones_are_refused() {
        let s = Secret::generate();
        assert_eq!(Secret::parse(&s.expose()), Ok(s));
        for (bad, why) in [
            ("whsec_", "empty"),
            ("whsec_c2hvcnQ=", "too short"),
            ("whsec_not base64!", "not base64"),
        ] {
            assert_eq!(Secret::parse(bad), Err(SignError::BadSecret), "{why}");
        }
    }

    #[test]
    fn ids_with_dots_are_refused() {
        assert_eq!(
            sign("a.b", 1, b"{}", &[vector_secret()]),
            Err(SignError::BadId)
        );
    }
}
