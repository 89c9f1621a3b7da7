//! What a browser page on an allowed origin may send to the API and to the bucket, and read
//! back: ONE definition. `atelier-admin cors` exports it (committed as `infra/cors.json` and
//! `infra/terraform/cors.json`); CDK and Terraform deploy it (API Gateway's CORS and the
//! bucket's CORS rule), the local runner answers with it, and the tests hold each of them to
//! it. Which origins are allowed is a deployment parameter, not part of it.

use serde::Serialize;

/// One CORS policy, in the words API Gateway and S3 configure it (header names lowercase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rules {
    pub allow_methods: &'static [&'static str],
    pub allow_headers: &'static [&'static str],
    pub expose_headers: &'static [&'static str],
    pub max_age_secs: u32,
}

/// The API: every method a route has (DELETE for the privacy routes, PUT for a device's
/// registration), the request headers the
/// app sends, and the response headers it reads.
pub const API: Rules = Rules {
    allow_methods: &["GET", "POST", "PUT", "DELETE", "OPTIONS"],
    allow_headers: &[
        "authorization",
        "content-type",
        "idempotency-key",
        "if-none-match",
        "prefer",
    ],
    expose_headers: &[
        "etag",
        "idempotent-replayed",
        "location",
        "preference-applied",
        "retry-after",
    ],
    max_age_secs: 3600,
};

/// The bucket: the browser PUTs uploads and GETs results on presigned URLs. The signature
/// (length and type included) is the credential; CORS only decides which pages may read the
/// answer.
pub const BUCKET: Rules = Rules {
    allow_methods: &["GET", "HEAD", "PUT"],
    allow_headers: &["content-length", "content-type"],
    expose_headers: &["etag"],
    max_age_secs: 3600,
};

/// What `atelier-admin cors` prints.
#[derive(Debug, Serialize)]
pub struct Export {
    pub api: Rules,
    pub bucket: Rules,
}

pub fn export() -> Export {
    Export {
        api: API,
        bucket: BUCKET,
    }
}

impl Rules {
    pub fn allows_method(&self, method: &str) -> bool {
        self.allow_methods.contains(&method)
    }

    /// Whether every header a request names is allowed (names compare case-insensitively).
    pub fn allows_headers<'a>(&self, mut names: impl Iterator<Item = &'a str>) -> bool {
        names.all(|n| {
            self.allow_headers
                .iter()
                .any(|a| a.eq_ignore_ascii_case(n.trim()))
        })
    }
}

/// Browser origins (`scheme://host[:port]`, no path), a deployment parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origins(Vec<String>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not an origin (scheme://host[:port], no path, no trailing slash)")]
pub struct BadOrigin(String);

impl Origins {
    /// Comma-separated origins; an empty list allows no page.
    pub fn parse(list: &str) -> Result<Origins, BadOrigin> {
        let mut origins = Vec::new();
        for o in list.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let rest = o
                .strip_prefix("https://")
                .or_else(|| o.strip_prefix("http://"));
            match rest {
                Some(host) if !host.is_empty() && !host.contains(['/', '?', '#', ' ']) => {
                    origins.push(o.to_owned());
                }
                _ => return Err(BadOrigin(o.to_owned())),
            }
        }
        Ok(Origins(origins))
    }

    /// Whole-origin match (ASCII case-insensitive), as API Gateway compares an origin.
    pub fn allows(&self, origin: &str) -> bool {
        self.0.iter().any(|o| o.eq_ignore_ascii_case(origin))
    }

    pub fn as_slice(&self) -> &[String] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_allows_delete_for_the_privacy_routes_and_put_for_devices() {
        assert!(API.allows_method("DELETE"));
        assert!(API.allows_method("PUT"));
        assert!(!API.allows_method("PATCH"));
    }

    #[test]
    fn a_header_is_allowed_whatever_its_case_and_an_unknown_one_is_not() {
        assert!(API.allows_headers(["Idempotency-Key", " If-None-Match"].into_iter()));
        assert!(!API.allows_headers(["x-amz-date"].into_iter()));
    }

    #[test]
    fn origins_are_exact_and_a_path_is_refused() {
        let o = Origins::parse("http://127.0.0.1:5173, https://app.example.com").unwrap();
        assert!(o.allows("https://app.example.com"));
        assert!(!o.allows("http://localhost:5173"));
        assert!(Origins::parse("https://app.example.com/").is_err());
        assert!(Origins::parse("app.example.com").is_err());
        assert_eq!(Origins::parse("").unwrap().as_slice(), &[] as &[String]);
    }
}
