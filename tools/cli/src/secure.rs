//! Where a token may be sent: over https, or plain http to this machine only.

use anyhow::Context;

/// Refuses to send a token where others can read it: `url` (the API, an issuer or one of its
/// endpoints, called `what` in the error) must be `https`, or plain `http` to this machine
/// only (`127.0.0.1`, `[::1]`, `localhost`: a local run).
pub fn require_secure(what: &str, url: &str) -> anyhow::Result<()> {
    let parsed =
        reqwest::Url::parse(url).with_context(|| format!("{what} {url:?} is not a URL"))?;
    // The parser writes addresses canonically (`127.1` is `127.0.0.1`, `[0::1]` is `[::1]`).
    let loopback = matches!(parsed.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => anyhow::bail!(
            "{what} {url} is not https: tokens go only over https (plain http only to 127.0.0.1, [::1] or localhost)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_go_over_https_or_to_this_machine_only() {
        let cases = [
            ("https://api.example.com", true, "https"),
            ("http://127.0.0.1:8787", true, "IPv4 loopback"),
            ("http://[::1]:8787", true, "IPv6 loopback"),
            ("http://localhost:8787/dev-issuer", true, "localhost"),
            ("http://api.example.com", false, "plain http elsewhere"),
            (
                "http://127.0.0.1.example.com",
                false,
                "a loopback-looking name",
            ),
            (
                "http://localhost:@evil.example",
                false,
                "user info before another host",
            ),
            (
                "http://10.0.0.5:8787",
                false,
                "a private address is not this machine",
            ),
            ("ftp://127.0.0.1", false, "another scheme"),
            ("api.example.com", false, "not a URL"),
        ];
        for (url, ok, why) in cases {
            assert_eq!(require_secure("the API", url).is_ok(), ok, "{why}: {url}");
        }
    }
}
