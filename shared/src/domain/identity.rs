//! What the verified token says about the caller beyond who they are: whether it carries a
//! verified e-mail address, which decides the signup grant (free credits go to real
//! addresses, once per address). Only the address's keyed hash is ever kept.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// What the caller's token says about their address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmailStatus {
    /// An ID token with a verified address: the signup grant is owed once per address.
    Verified(AddressHash),
    /// An operator vouches for the user (`atelier-admin grant --create-account`): the grant
    /// once per user, no address known.
    Vouched,
    /// No verified address (an access token, `email_verified` false or absent): served,
    /// without the grant.
    Unverified,
}

impl EmailStatus {
    /// From the claims as API Gateway's authorizer context carries them (every claim a
    /// string; Cognito's `email_verified` boolean arrives as `"true"`). Verified only for an
    /// ID token (`token_use` `id`: an access token carries no e-mail claims, and one crafted
    /// to carry them is not what the grant trusts) whose verified claim is exactly `true` and
    /// whose `email` is an address.
    pub fn from_claims(
        token_use: Option<&str>,
        verified: Option<&str>,
        email: Option<&str>,
        key: &AddressKey,
    ) -> EmailStatus {
        let id_token = token_use.map(str::trim) == Some("id");
        let verified = verified.map(str::trim) == Some("true");
        match email.and_then(|e| AddressHash::of(e, key)) {
            Some(hash) if id_token && verified => EmailStatus::Verified(hash),
            _ => EmailStatus::Unverified,
        }
    }

    /// Whether the grant may be given (to this user; per address when one is known).
    pub fn may_grant(&self) -> bool {
        !matches!(self, EmailStatus::Unverified)
    }

    /// The address's hash, when the token carried a verified one.
    pub fn address(&self) -> Option<&AddressHash> {
        match self {
            EmailStatus::Verified(hash) => Some(hash),
            _ => None,
        }
    }
}

/// The secret key of [`AddressHash`]: at least 32 bytes, so the hashes of a leaked table
/// cannot be matched against a list of addresses without it.
#[derive(Clone, PartialEq, Eq)]
pub struct AddressKey(Vec<u8>);

impl std::fmt::Debug for AddressKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AddressKey(…)")
    }
}

/// Shortest accepted key, in bytes.
pub const ADDRESS_KEY_MIN_BYTES: usize = 32;

impl AddressKey {
    /// The key as configured (its UTF-8 bytes, surrounding whitespace ignored).
    pub fn parse(value: &str) -> Option<AddressKey> {
        let bytes = value.trim().as_bytes();
        (bytes.len() >= ADDRESS_KEY_MIN_BYTES).then(|| AddressKey(bytes.to_vec()))
    }
}

/// HMAC-SHA256 of a normalised address under the [`AddressKey`], hex: what the signup grant
/// is recorded under.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct AddressHash(String);

impl std::fmt::Debug for AddressHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AddressHash({}…)", &self.0[..self.0.len().min(8)])
    }
}

impl AddressHash {
    /// The hash of `address` once normalised; `None` when it is not an address.
    pub fn of(address: &str, key: &AddressKey) -> Option<AddressHash> {
        let normal = normalise(address)?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&key.0).ok()?;
        mac.update(normal.as_bytes());
        Some(AddressHash(hex::encode(mac.finalize().into_bytes())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One form per mailbox: lower case (Cognito compares addresses case-insensitively), and a
/// `+tag` sub-address dropped (`ana+2@x.org` is `ana@x.org`'s mailbox at most providers, and
/// the cheapest way to sign up twice). Dots are kept: only some providers ignore them.
fn normalise(address: &str) -> Option<String> {
    let lower = address.trim().to_lowercase();
    let (local, domain) = lower.rsplit_once('@')?;
    let local = local.split_once('+').map_or(local, |(base, _)| base);
    let valid = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !lower.chars().any(char::is_whitespace)
        && lower.len() <= 254;
    valid.then(|| format!("{local}@{domain}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> AddressKey {
        AddressKey::parse("a-test-key-of-at-least-thirty-two-bytes").expect("a key")
    }

    fn status(token_use: Option<&str>, verified: Option<&str>, email: Option<&str>) -> bool {
        EmailStatus::from_claims(token_use, verified, email, &key()).may_grant()
    }

    #[test]
    fn only_an_id_token_with_a_verified_address_may_get_the_grant() {
        type Case<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            bool,
            &'a str,
        );
        let cases: &[Case] = &[
            (
                Some("id"),
                Some("true"),
                Some("a@b.org"),
                true,
                "Cognito's ID token",
            ),
            (Some("id"), Some(" true "), Some("a@b.org"), true, "padding"),
            (
                Some("access"),
                Some("true"),
                Some("a@b.org"),
                false,
                "an access token",
            ),
            (None, Some("true"), Some("a@b.org"), false, "no token_use"),
            (Some("id"), None, Some("a@b.org"), false, "no claim"),
            (
                Some("id"),
                Some("false"),
                Some("a@b.org"),
                false,
                "not verified",
            ),
            (
                Some("id"),
                Some("TRUE"),
                Some("a@b.org"),
                false,
                "not what any issuer sends",
            ),
            (
                Some("id"),
                Some("1"),
                Some("a@b.org"),
                false,
                "a number is not a boolean",
            ),
            (Some("id"), Some("[true]"), Some("a@b.org"), false, "a list"),
            (Some("id"), Some("true"), None, false, "no address"),
            (
                Some("id"),
                Some("true"),
                Some("not-an-address"),
                false,
                "not an address",
            ),
        ];
        for (token_use, verified, email, expected, why) in cases {
            assert_eq!(status(*token_use, *verified, *email), *expected, "{why}");
        }
    }

    #[test]
    fn one_mailbox_hashes_the_same_however_it_is_written() {
        let k = key();
        let hash = |a: &str| AddressHash::of(a, &k).expect("an address");
        let same = [
            "Ana@Example.org",
            " ana@example.org",
            "ana+again@EXAMPLE.org",
        ];
        for a in same {
            assert_eq!(hash(a), hash("ana@example.org"), "{a}");
        }
        assert_ne!(hash("a.na@example.org"), hash("ana@example.org"));
        assert_ne!(hash("ana@example.org"), hash("bob@example.org"));
        assert_eq!(hash("ana@example.org").as_str().len(), 64);
    }

    #[test]
    fn the_hash_depends_on_the_key_and_never_shows_the_address() {
        let other = AddressKey::parse("another-key-of-at-least-thirty-two-bytes").expect("a key");
        let a = AddressHash::of("ana@example.org", &key()).expect("an address");
        let b = AddressHash::of("ana@example.org", &other).expect("an address");
        assert_ne!(a, b);
        assert!(!a.as_str().contains("ana"));
        assert!(AddressKey::parse("too short").is_none());
    }
}
