//! What the verified token says about the caller beyond who they are: whether it carries a
//! verified e-mail address, which decides the signup grant (free credits go to real
//! addresses, once per address). Only the address's keyed hash is ever kept.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// What the caller's token says about their address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmailStatus {
    /// An ID token with a verified address: the signup grant is owed once per address.
    /// `legacy` is the address's hash under the normalisation before the provider table
    /// ([`AddressHash::legacy_of`]) when it differs: a grant recorded under it counts too.
    Verified {
        hash: AddressHash,
        legacy: Option<AddressHash>,
    },
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
        match email.and_then(|e| Some((e, AddressHash::of(e, key)?))) {
            Some((email, hash)) if id_token && verified => EmailStatus::Verified {
                legacy: AddressHash::legacy_of(email, key).filter(|l| *l != hash),
                hash,
            },
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
            EmailStatus::Verified { hash, .. } => Some(hash),
            _ => None,
        }
    }

    /// The address's hash as it was recorded before the provider table, when it differs.
    pub fn legacy_address(&self) -> Option<&AddressHash> {
        match self {
            EmailStatus::Verified { legacy, .. } => legacy.as_ref(),
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
    /// The hash of `address` once normalised ([`normalise`]); `None` when it is not an
    /// address.
    pub fn of(address: &str, key: &AddressKey) -> Option<AddressHash> {
        AddressHash::keyed(&normalise(address)?, key)
    }

    /// The hash of `address` as grants were recorded before the provider table (lower case,
    /// `+tag` dropped, nothing else). Stored hashes cannot be recomputed (the addresses are
    /// not kept), so a new grant is also refused when this one was claimed (docs/design.md,
    /// "Abuse model").
    pub fn legacy_of(address: &str, key: &AddressKey) -> Option<AddressHash> {
        let (local, domain) = split(address)?;
        AddressHash::keyed(&format!("{local}@{domain}"), key)
    }

    fn keyed(normal: &str, key: &AddressKey) -> Option<AddressHash> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&key.0).ok()?;
        mac.update(normal.as_bytes());
        Some(AddressHash(hex::encode(mac.finalize().into_bytes())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One well-known provider's documented addressing rules, applied on top of lower case and a
/// dropped `+tag` (which every address gets). Collapsing too much only refuses a grant to a
/// second person; collapsing too little pays one inbox twice.
struct MailProvider {
    /// Its domains. When `one_namespace`, the same local part at any of them is one mailbox,
    /// written at the first.
    domains: &'static [&'static str],
    one_namespace: bool,
    /// Characters the provider ignores in the local part.
    ignored: &'static [char],
    /// A separator after which the local part is a disposable keyword.
    keyword: Option<char>,
    /// Whether `anything@user.<domain>` is `user@<domain>`.
    subdomain_addressing: bool,
}

/// The providers' rules and their sources (also in docs/design.md, "Abuse model").
const PROVIDERS: [MailProvider; 6] = [
    // Gmail: "Dots don't matter in Gmail addresses",
    // https://support.google.com/mail/answer/7436150 ; googlemail.com is the same account
    // (Gmail's name in Germany and the UK), https://support.google.com/mail/answer/10313
    MailProvider {
        domains: &["gmail.com", "googlemail.com"],
        one_namespace: true,
        ignored: &['.'],
        keyword: None,
        subdomain_addressing: false,
    },
    // Yahoo disposable addresses are `basename-keyword@yahoo.com`, delivered to the account
    // that owns the base name (Yahoo help, AddressGuard: "Using the base name … you can
    // create new disposable addresses", http://help.yahoo.com/help/uk/bt/tutorials/mail/addressguard2.html ;
    // Yahoo IDs hold no `-`, which is what marks one). All of one base name collapse.
    MailProvider {
        domains: &["yahoo.com"],
        one_namespace: false,
        ignored: &[],
        keyword: Some('-'),
        subdomain_addressing: false,
    },
    // iCloud: one account's address has the same name at @icloud.com, @me.com and @mac.com,
    // https://support.apple.com/en-us/118230 (formerly HT201771).
    MailProvider {
        domains: &["icloud.com", "me.com", "mac.com"],
        one_namespace: true,
        ignored: &[],
        keyword: None,
        subdomain_addressing: false,
    },
    // Fastmail: plus addressing and subdomain addressing, `whateveryoulike@username.domain.tld`
    // is `username@domain.tld`, https://www.fastmail.help/hc/en-us/articles/360060591053 .
    // Its domains are separate namespaces (`ana@fastmail.com` and `ana@fastmail.fm` can be
    // two people).
    MailProvider {
        domains: &["fastmail.com", "fastmail.fm"],
        one_namespace: false,
        ignored: &[],
        keyword: None,
        subdomain_addressing: true,
    },
    // Proton: the personal address's short form `@pm.me` and `@proton.me`/`@protonmail.com`/
    // `@protonmail.ch` are one name of one account, https://proton.me/support/addresses-and-aliases .
    // Proton also delivers `first.last`, `first-last` and `first_last` to `firstlast`: not in
    // its documentation, observed and reported,
    // https://www.sindastra.de/p/1775/protonmail-dots-hyphens-and-underscores — collapsed, as
    // collapsing too much only costs a grant.
    MailProvider {
        domains: &["proton.me", "protonmail.com", "protonmail.ch", "pm.me"],
        one_namespace: true,
        ignored: &['.', '-', '_'],
        keyword: None,
        subdomain_addressing: false,
    },
    // Microsoft: an alias is another address of one account ("It uses the same inbox",
    // https://support.microsoft.com/en-us/account-billing/manage-aliases-12407), but which
    // addresses are aliases of which account cannot be read from the address, and
    // `ana@outlook.com` and `ana@hotmail.com` are distinct mailboxes, possibly two people.
    // Dots count. Nothing beyond the `+tag` (Outlook's plus addressing) collapses.
    MailProvider {
        domains: &["outlook.com", "hotmail.com", "live.com", "msn.com"],
        one_namespace: false,
        ignored: &[],
        keyword: None,
        subdomain_addressing: false,
    },
];

/// Lower case (Cognito compares addresses case-insensitively) and a `+tag` sub-address
/// dropped (`ana+2@x.org` is `ana@x.org`'s mailbox at most providers): the form before the
/// provider table, and the start of every form. `None` when it is not an address.
fn split(address: &str) -> Option<(String, String)> {
    let lower = address.trim().to_lowercase();
    let (local, domain) = lower.rsplit_once('@')?;
    let local = local.split_once('+').map_or(local, |(base, _)| base);
    let valid = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !lower.chars().any(char::is_whitespace)
        && lower.len() <= 254;
    valid.then(|| (local.to_owned(), domain.to_owned()))
}

/// One form per mailbox: [`split`], then the rules of the address's provider
/// ([`PROVIDERS`]). Elsewhere dots, hyphens and domains are kept: `a.na@example.org` may be
/// someone other than `ana@example.org`.
fn normalise(address: &str) -> Option<String> {
    let (mut local, mut domain) = split(address)?;
    let subdomain = PROVIDERS
        .iter()
        .filter(|p| p.subdomain_addressing)
        .flat_map(|p| p.domains.iter())
        .find_map(|d| domain.strip_suffix(d)?.strip_suffix('.').map(str::to_owned));
    if let Some(user) = subdomain.filter(|u| !u.is_empty() && !u.contains('.')) {
        domain = domain[user.len() + 1..].to_owned();
        local = user;
    }
    if let Some(p) = PROVIDERS
        .iter()
        .find(|p| p.domains.contains(&domain.as_str()))
    {
        if let Some((base, _)) = p.keyword.and_then(|k| local.split_once(k)) {
            local = base.to_owned();
        }
        local.retain(|c| !p.ignored.contains(&c));
        if p.one_namespace {
            domain = p.domains[0].to_owned();
        }
    }
    (!local.is_empty()).then(|| format!("{local}@{domain}"))
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
    fn each_providers_variants_of_one_inbox_collapse() {
        let groups: [&[&str]; 6] = [
            &[
                "john@gmail.com",
                "j.ohn@gmail.com",
                "J.O.H.N+promo@Gmail.com",
                "john@googlemail.com",
                "jo.hn@googlemail.com",
            ],
            &[
                "ana@yahoo.com",
                "ana-shop@yahoo.com",
                "ana-news+x@yahoo.com",
            ],
            &["ana@icloud.com", "ana@me.com", "ana+x@mac.com"],
            &[
                "ana@fastmail.com",
                "ana+shop@fastmail.com",
                "shop@ana.fastmail.com",
            ],
            &[
                "ana.user@proton.me",
                "anauser@protonmail.com",
                "ana-user@pm.me",
                "ana_user+x@protonmail.ch",
            ],
            &["ana@outlook.com", "Ana+news@Outlook.com"],
        ];
        for group in groups {
            let first = normalise(group[0]);
            assert!(first.is_some(), "{}", group[0]);
            for address in group {
                assert_eq!(normalise(address), first, "{address} is {}", group[0]);
            }
        }
        assert_eq!(
            normalise("j.ohn@googlemail.com").as_deref(),
            Some("john@gmail.com")
        );
    }

    #[test]
    fn distinct_people_at_other_providers_stay_distinct() {
        let distinct = [
            ("j.ohn@example.org", "john@example.org"),
            ("j.ohn@outlook.com", "john@outlook.com"),
            ("john@outlook.com", "john@hotmail.com"),
            ("john@live.com", "john@msn.com"),
            ("ana-b@example.org", "ana@example.org"),
            ("ana-b@gmail.com", "ana@gmail.com"),
            ("ana@fastmail.com", "ana@fastmail.fm"),
            ("a.na@icloud.com", "ana@icloud.com"),
            ("ana@gmail.com", "ana@icloud.com"),
            ("shop@ana.example.org", "ana@example.org"),
            ("ana@yahoo.co.uk", "ana@yahoo.com"),
        ];
        for (a, b) in distinct {
            assert_ne!(normalise(a), normalise(b), "{a} and {b}");
        }
        for nothing_left in ["...@gmail.com", "-x@yahoo.com", "x@.fastmail.com"] {
            assert_eq!(normalise(nothing_left), None, "{nothing_left}");
        }
    }

    #[test]
    fn the_hash_before_the_provider_table_is_kept_for_the_addresses_it_changes() {
        let k = key();
        let verified =
            |email: &str| EmailStatus::from_claims(Some("id"), Some("true"), Some(email), &k);
        let dotted = verified("J.Ohn+x@gmail.com");
        assert_eq!(
            dotted.address(),
            AddressHash::of("john@gmail.com", &k).as_ref()
        );
        assert_eq!(
            dotted.legacy_address(),
            AddressHash::legacy_of("j.ohn@gmail.com", &k).as_ref()
        );
        assert_eq!(verified("john@gmail.com").legacy_address(), None);
        assert_eq!(verified("a.na@example.org").legacy_address(), None);
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
