//! Identifiers and amounts.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Crockford base32, lowercase: ids are URL- and S3-key-safe and unambiguous when read aloud.
const B32: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

fn base32(bytes: &[u8], chars: usize) -> String {
    let mut out = String::with_capacity(chars);
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for &b in bytes {
        acc = (acc << 8) | u64::from(b);
        bits += 8;
        while bits >= 5 && out.len() < chars {
            bits -= 5;
            out.push(B32[((acc >> bits) & 31) as usize] as char);
        }
    }
    out
}

fn is_b32(s: &str) -> bool {
    s.bytes().all(|b| B32.contains(&b))
}

/// The caller: the `sub` claim of a verified token. Limited to characters that are safe in an
/// S3 key and a DynamoDB key (Cognito subs are UUIDs; `auth0|…` style subs also fit).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UserId(String);

impl UserId {
    pub const MAX_LEN: usize = 128;

    pub fn parse(raw: &str) -> Option<UserId> {
        let ok = !raw.is_empty()
            && raw.len() <= Self::MAX_LEN
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:@|+".contains(&b));
        ok.then(|| UserId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for UserId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A client's `Idempotency-Key`: 1..=255 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const MAX_LEN: usize = 255;

    pub fn parse(raw: &str) -> Option<IdempotencyKey> {
        let ok = !raw.is_empty()
            && raw.len() <= Self::MAX_LEN
            && raw.bytes().all(|b| (0x21..=0x7e).contains(&b));
        ok.then(|| IdempotencyKey(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a paid request does; part of the job id derivation so a key reused across
/// operations never collides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Edit,
    Repair,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Edit => "edit",
            Operation::Repair => "repair",
        }
    }
}

/// A job's id, derived from (user, operation, idempotency key): the conditional put of the
/// job under this id *is* the idempotency check, with no separate key table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(String);

impl JobId {
    const PREFIX: &'static str = "job_";
    const BODY: usize = 26; // 130 bits of SHA-256

    pub fn derive(user: &UserId, op: Operation, key: &IdempotencyKey) -> JobId {
        let mut h = Sha256::new();
        for part in [user.as_str(), op.as_str(), key.as_str()] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        JobId(format!(
            "{}{}",
            Self::PREFIX,
            base32(&h.finalize(), Self::BODY)
        ))
    }

    pub fn parse(raw: &str) -> Option<JobId> {
        let body = raw.strip_prefix(Self::PREFIX)?;
        (body.len() == Self::BODY && is_b32(body)).then(|| JobId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// An uploaded asset's id (random; the owner and kind are in its storage key).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AssetId(String);

impl AssetId {
    const PREFIX: &'static str = "ast_";
    const BODY: usize = 26;

    pub fn generate() -> AssetId {
        let bytes: [u8; 17] = rand::random();
        AssetId(format!("{}{}", Self::PREFIX, base32(&bytes, Self::BODY)))
    }

    pub fn parse(raw: &str) -> Option<AssetId> {
        let body = raw.strip_prefix(Self::PREFIX)?;
        (body.len() == Self::BODY && is_b32(body)).then(|| AssetId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for AssetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whole credits: what a user pays (never float, rule 9). Signed, because the same unit is a
/// balance, a price and a ledger amount (a debit is negative). Arithmetic is checked: an
/// amount that would overflow is an error, never a wrapped number. Model costs, which are
/// ours, are [`super::Micros`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Credits(i64);

impl Credits {
    pub const ZERO: Credits = Credits(0);

    pub const fn new(n: i64) -> Credits {
        Credits(n)
    }

    pub const fn get(self) -> i64 {
        self.0
    }

    pub fn checked_add(self, other: Credits) -> Option<Credits> {
        self.0.checked_add(other.0).map(Credits)
    }

    pub fn checked_sub(self, other: Credits) -> Option<Credits> {
        self.0.checked_sub(other.0).map(Credits)
    }

    /// The opposite amount (a debit of a price).
    pub fn checked_neg(self) -> Option<Credits> {
        self.0.checked_neg().map(Credits)
    }

    pub fn saturating_add(self, other: Credits) -> Credits {
        Credits(self.0.saturating_add(other.0))
    }

    pub fn is_negative(self) -> bool {
        self.0 < 0
    }
}

impl std::fmt::Display for Credits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::iter::Sum for Credits {
    /// Saturating: a sum of ledger rows that overflowed is already a corrupt ledger, and
    /// the audit then reports it rather than a wrapped total that might look right.
    fn sum<I: Iterator<Item = Credits>>(iter: I) -> Credits {
        iter.fold(Credits::ZERO, Credits::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> IdempotencyKey {
        IdempotencyKey::parse(s).unwrap_or_else(|| panic!("valid key {s}"))
    }
    fn user(s: &str) -> UserId {
        UserId::parse(s).unwrap_or_else(|| panic!("valid user {s}"))
    }

    #[test]
    fn job_id_depends_on_user_operation_and_key() {
        let a = JobId::derive(&user("u1"), Operation::Edit, &key("k"));
        assert_eq!(a, JobId::derive(&user("u1"), Operation::Edit, &key("k")));
        assert_ne!(a, JobId::derive(&user("u2"), Operation::Edit, &key("k")));
        assert_ne!(a, JobId::derive(&user("u1"), Operation::Repair, &key("k")));
        assert_ne!(a, JobId::derive(&user("u1"), Operation::Edit, &key("k2")));
        // length-prefixing keeps ("ab","c") and ("a","bc") apart
        assert_ne!(
            JobId::derive(&user("ab"), Operation::Edit, &key("c")),
            JobId::derive(&user("a"), Operation::Edit, &key("bc"))
        );
        assert_eq!(JobId::parse(a.as_str()), Some(a));
    }

    #[test]
    fn ids_reject_foreign_shapes() {
        for bad in [
            "",
            "job_",
            "job_SHOUTING0000000000000000",
            "ast_x",
            "../../etc",
        ] {
            assert!(JobId::parse(bad).is_none(), "{bad}");
            assert!(AssetId::parse(bad).is_none(), "{bad}");
        }
        let asset = AssetId::generate();
        assert_eq!(AssetId::parse(asset.as_str()), Some(asset));
    }

    #[test]
    fn idempotency_key_limits() {
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_some());
        assert!(
            IdempotencyKey::parse(&"k".repeat(256)).is_none(),
            "over 255"
        );
        assert!(IdempotencyKey::parse("").is_none(), "empty");
        assert!(IdempotencyKey::parse("a b").is_none(), "space");
        assert!(IdempotencyKey::parse("a\u{7f}").is_none(), "DEL");
    }

    #[test]
    fn user_id_limits() {
        assert!(UserId::parse("auth0|abc-123").is_some());
        assert!(
            UserId::parse("a/b").is_none(),
            "slash would escape the S3 prefix"
        );
        assert!(UserId::parse(&"u".repeat(129)).is_none());
    }
}
