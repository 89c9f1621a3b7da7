//! A response of the router, decoded, and what tests read from it.

use http::StatusCode;
use serde_json::Value;

/// A response, decoded.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// Asserts an error response's status and problem code; `case` names it in the message.
    pub fn assert_problem(&self, status: StatusCode, code: &str, case: impl std::fmt::Display) {
        assert_eq!(self.status, status, "{case}: {self:?}");
        assert_eq!(self.code(), code, "{case}: {self:?}");
    }

    /// The problem `code` of an error response.
    pub fn code(&self) -> &str {
        self.body.get("code").and_then(Value::as_str).unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// A string field of the body; panics when it is absent, so two missing values never
    /// compare equal.
    pub fn str(&self, field: &str) -> String {
        self.body
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no string {field:?} in the reply: {self:?}"))
            .to_owned()
    }
}
