//! Stripe's webhook signature, as Stripe specifies it and its official libraries check it:
//! the `Stripe-Signature` header is `t=<unix seconds>,v1=<hex>[,v1=<hex>…][,v0=…]`; each `v1`
//! is HMAC-SHA256, keyed with the endpoint's signing secret (`whsec_…`, used as it is), of
//! `"<t>.<raw body>"`. The event is accepted when any `v1` matches (several appear while a
//! secret is rolled), compared in constant time, and when `t` is not older than the tolerance.
//! Other schemes (`v0`) are ignored, as the libraries do.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Stripe's default tolerance: an event signed longer ago than this is refused (replays).
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// The header Stripe signs with.
pub const HEADER: &str = "stripe-signature";

/// Why a signature was refused. Nothing is written for any of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no Stripe-Signature header")]
    Missing,
    #[error("the Stripe-Signature header has no timestamp or no v1 signature")]
    Malformed,
    #[error("no v1 signature matches the body")]
    NoMatch,
    #[error("the signature is {age} s old; at most {tolerance} s are accepted")]
    Stale { age: i64, tolerance: i64 },
}

type HmacSha256 = Hmac<Sha256>;

/// The MAC of `"<timestamp>.<payload>"`; `None` never happens (HMAC takes keys of any
/// length) but is not unwrapped.
fn mac(secret: &str, timestamp: i64, payload: &[u8]) -> Option<HmacSha256> {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    Some(mac)
}

/// Checks `header` against the raw `payload` at `now` (unix seconds).
pub fn verify(
    payload: &[u8],
    header: Option<&str>,
    secret: &str,
    now: i64,
    tolerance: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => timestamp = v.parse::<i64>().ok(),
            Some(("v1", v)) => signatures.push(v),
            _ => {}
        }
    }
    let (Some(timestamp), false) = (timestamp, signatures.is_empty()) else {
        return Err(SignatureError::Malformed);
    };
    let expected = mac(secret, timestamp, payload).ok_or(SignatureError::NoMatch)?;
    // `verify_slice` compares in constant time.
    let matches = signatures.iter().any(|sig| {
        hex::decode(sig).is_ok_and(|bytes| expected.clone().verify_slice(&bytes).is_ok())
    });
    if !matches {
        return Err(SignatureError::NoMatch);
    }
    let age = now.saturating_sub(timestamp);
    if tolerance > 0 && age > tolerance {
        return Err(SignatureError::Stale { age, tolerance });
    }
    Ok(())
}

/// The header Stripe would send for `payload` signed at `timestamp` (the stand-in's
/// deliveries and tests; the official library's helper makes the same).
pub fn header(payload: &[u8], secret: &str, timestamp: i64) -> String {
    let sig = mac(secret, timestamp, payload)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default();
    format!("t={timestamp},v1={sig}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_secret";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"checkout.session.completed"}"#;
    const NOW: i64 = 1_767_225_600;

    #[test]
    fn a_signature_made_with_the_secret_is_accepted() {
        let h = header(BODY, SECRET, NOW);
        assert_eq!(verify(BODY, Some(&h), SECRET, NOW, 300), Ok(()));
    }

    #[test]
    fn the_known_vector_matches_hmac_sha256_of_timestamp_dot_body() {
        // `printf '%s' '1.{}' | openssl dgst -sha256 -hmac whsec_x`
        assert_eq!(
            header(b"{}", "whsec_x", 1),
            "t=1,v1=36ee2f7498f0c1777d1312b2a7361947fe5ad31223be30d0c62421f4ca753401"
        );
    }

    #[test]
    fn any_of_several_v1_signatures_may_match_and_v0_is_ignored() {
        let good = header(BODY, SECRET, NOW);
        let sig = good.rsplit_once("v1=").map(|(_, s)| s).unwrap_or("");
        let h = format!("t={NOW},v0=abc,v1={},v1={sig}", "00".repeat(32));
        assert_eq!(verify(BODY, Some(&h), SECRET, NOW, 300), Ok(()));
    }

    #[test]
    fn forged_stale_changed_or_malformed_signatures_are_refused() {
        let good = header(BODY, SECRET, NOW);
        let mut changed = BODY.to_vec();
        changed[10] ^= 1;
        let cases: [(&[u8], Option<String>, i64, SignatureError); 7] = [
            (BODY, None, NOW, SignatureError::Missing),
            (BODY, Some("garbage".into()), NOW, SignatureError::Malformed),
            (
                BODY,
                Some(format!("t={NOW}")),
                NOW,
                SignatureError::Malformed,
            ),
            (
                BODY,
                Some(header(BODY, "whsec_other", NOW)),
                NOW,
                SignatureError::NoMatch,
            ),
            (&changed, Some(good.clone()), NOW, SignatureError::NoMatch),
            (
                BODY,
                Some(format!("t={},{}", NOW + 1, &good[good.len() - 67..])),
                NOW,
                SignatureError::NoMatch,
            ),
            (
                BODY,
                Some(good.clone()),
                NOW + 301,
                SignatureError::Stale {
                    age: 301,
                    tolerance: 300,
                },
            ),
        ];
        for (body, h, now, want) in cases {
            assert_eq!(
                verify(body, h.as_deref(), SECRET, now, 300),
                Err(want),
                "{h:?}"
            );
        }
    }
}
