//! Sending signed webhooks to the deployment's app backends (Standard Webhooks): which URLs an
//! endpoint may have ([`validate_url`], [`address`]) and the HTTP client that POSTs each
//! attempt ([`client`]). The events themselves are [`crate::domain::webhooks`]; the outbox is
//! [`crate::store::webhooks`]; the delivery rounds are [`crate::services::webhooks`].

pub mod address;
pub mod client;
pub mod queue;

/// The longest endpoint URL accepted.
pub const MAX_URL_LEN: usize = 2048;

pub use crate::config::PrivateAddresses;

impl PrivateAddresses {
    /// Whether an address of `class` may be sent to.
    pub fn permit(self, class: address::AddressClass) -> bool {
        self == PrivateAddresses::Allow || class == address::AddressClass::Public
    }
}

/// Why an endpoint URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("the URL is longer than {MAX_URL_LEN} characters")]
    TooLong,
    #[error("the URL does not parse")]
    Malformed,
    #[error("webhooks go to https:// URLs (http:// only to 127.0.0.1 or localhost)")]
    NotHttps,
    #[error(
        "{host} is a {} address: webhooks go to public addresses only (ATELIER_WEBHOOK_PRIVATE_ADDRESSES=allow is for local runs)",
        class.as_str()
    )]
    NotPublic {
        host: String,
        class: address::AddressClass,
    },
}

/// An endpoint's URL: https, or http to this machine for local runs; no credentials in it;
/// unless `private` allows them, no literal loopback, private or link-local address and no
/// `localhost` (a DNS name is checked again, resolved, at every send).
pub fn validate_url(raw: &str, private: PrivateAddresses) -> Result<reqwest::Url, UrlError> {
    if raw.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong);
    }
    let url = reqwest::Url::parse(raw).map_err(|_| UrlError::Malformed)?;
    if url.host_str().is_none() || !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::Malformed);
    }
    if let Some(class) = literal_class(&url).filter(|c| !private.permit(*c)) {
        let host = url.host_str().unwrap_or_default().to_owned();
        return Err(UrlError::NotPublic { host, class });
    }
    let local = matches!(url.host_str(), Some("127.0.0.1" | "localhost"));
    match url.scheme() {
        "https" => Ok(url),
        "http" if local => Ok(url),
        _ => Err(UrlError::NotHttps),
    }
}

/// The class of a URL's host when it is an IP literal or a `localhost` name; `None` for a
/// name only DNS can place.
pub fn literal_class(url: &reqwest::Url) -> Option<address::AddressClass> {
    if let Some(ip) = host_ip(url) {
        return Some(address::AddressClass::of(ip));
    }
    let name = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    (name == "localhost" || name.ends_with(".localhost")).then_some(address::AddressClass::Loopback)
}

/// The URL's host when it is an IP literal (the URL parser has already normalized IPv4 forms
/// such as `2130706433` or `0x7f.1`; IPv6 literals come bracketed).
pub fn host_ip(url: &reqwest::Url) -> Option<std::net::IpAddr> {
    let host = url.host_str()?;
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_https_or_local_http() {
        let validate_url = |url| validate_url(url, PrivateAddresses::Allow);
        for (url, ok, why) in [
            ("https://hooks.example.com/atelier", true, "https"),
            ("http://127.0.0.1:9000/hook", true, "local http"),
            ("http://localhost/hook", true, "localhost http"),
            ("http://hooks.example.com/", false, "plain http elsewhere"),
            ("ftp://example.com/", false, "other scheme"),
            (
                "https://user:pw@example.com/",
                false,
                "credentials in the URL",
            ),
            ("not a url", false, "garbage"),
        ] {
            assert_eq!(validate_url(url).is_ok(), ok, "{why}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(validate_url(&long), Err(UrlError::TooLong));
    }

    #[test]
    fn outside_local_runs_a_literal_inner_address_is_refused_at_add_time() {
        use address::AddressClass::*;
        for (url, class) in [
            ("http://127.0.0.1:9000/hook", Loopback),
            ("http://localhost/hook", Loopback),
            ("https://LOCALHOST./hook", Loopback),
            ("https://api.localhost/hook", Loopback),
            ("https://169.254.169.254/latest/meta-data/", LinkLocal),
            ("https://10.0.0.8/hook", Private),
            ("https://[::1]/hook", Loopback),
            ("https://[::ffff:192.168.0.1]/hook", Private),
            ("https://[fd00::1]/hook", UniqueLocal),
            ("https://0.0.0.0/hook", Unspecified),
            ("https://100.64.1.1/hook", SharedNat),
            ("https://2130706433/hook", Loopback),
            ("https://0x7f.1/hook", Loopback),
        ] {
            let got = validate_url(url, PrivateAddresses::Refuse);
            assert!(
                matches!(got, Err(UrlError::NotPublic { class: c, .. }) if c == class),
                "{url}: {got:?}"
            );
        }
        for url in ["https://hooks.example.com/a", "https://8.8.8.8/a"] {
            assert!(validate_url(url, PrivateAddresses::Refuse).is_ok(), "{url}");
        }
        assert_eq!(
            validate_url("http://hooks.example.com/", PrivateAddresses::Refuse),
            Err(UrlError::NotHttps)
        );
    }
}
