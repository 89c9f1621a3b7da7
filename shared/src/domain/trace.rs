//! One trace id per job, from the submit through the queue to the consumer and the sweeper.
//!
//! The format is X-Ray's (`1-{8 hex: epoch seconds}-{24 hex}`), so the id the API's Lambda
//! invocation carries (`Root=…` of `_X_AMZN_TRACE_ID` / `X-Amzn-Trace-Id`) is kept as is, SQS
//! propagates it as the `AWSTraceHeader` system attribute, and X-Ray joins the segments of a
//! deployment that turns tracing on. Without an incoming one (local runs, tests), the id is
//! derived from the job id: stable across a replayed submit, distinct between jobs.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// An X-Ray trace id, valid by construction.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TraceId(String);

/// Not an X-Ray trace id.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not an X-Ray trace id (1-{{8 hex}}-{{24 hex}})")]
pub struct TraceIdError;

impl TraceId {
    /// Parses `1-5759e988-bd862e3fe1be46a994272793`.
    pub fn parse(s: &str) -> Result<TraceId, TraceIdError> {
        let mut parts = s.split('-');
        let well_formed = parts.next() == Some("1")
            && parts.next().is_some_and(|t| is_hex(t, 8))
            && parts.next().is_some_and(|r| is_hex(r, 24))
            && parts.next().is_none();
        match well_formed {
            true => Ok(TraceId(s.to_ascii_lowercase())),
            false => Err(TraceIdError),
        }
    }

    /// The `Root` of an X-Ray trace header (`Root=1-…;Parent=…;Sampled=1`), if well formed.
    pub fn from_header(header: &str) -> Option<TraceId> {
        header
            .split(';')
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| k.eq_ignore_ascii_case("Root"))
            .and_then(|(_, v)| TraceId::parse(v).ok())
    }

    /// The id of a job submitted without an incoming trace: its time, then 96 bits of a hash
    /// of its id.
    pub fn for_job(job_id: &str, unix_secs: i64) -> TraceId {
        let digest = Sha256::digest(job_id.as_bytes());
        let secs = u32::try_from(unix_secs.max(0)).unwrap_or(u32::MAX);
        TraceId(format!("1-{secs:08x}-{}", hex::encode(&digest[..12])))
    }

    /// The header SQS carries as `AWSTraceHeader`.
    pub fn header(&self) -> String {
        format!("Root={}", self.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl std::fmt::Display for TraceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for TraceId {
    type Error = TraceIdError;
    fn try_from(s: String) -> Result<TraceId, TraceIdError> {
        TraceId::parse(&s)
    }
}

impl From<TraceId> for String {
    fn from(t: TraceId) -> String {
        t.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_of_a_lambda_trace_header_is_the_trace_id() {
        let h = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
        let t = TraceId::from_header(h).map(|t| t.to_string());
        assert_eq!(t.as_deref(), Some("1-5759e988-bd862e3fe1be46a994272793"));
        assert_eq!(
            TraceId::from_header("Parent=1;Sampled=0").map(|t| t.to_string()),
            None
        );
    }

    #[test]
    fn malformed_ids_are_refused() {
        for bad in [
            "",
            "2-5759e988-bd862e3fe1be46a994272793",
            "1-5759e98-bd862e3fe1be46a994272793",
            "1-5759e988-bd862e3fe1be46a99427279z",
            "1-5759e988-bd862e3fe1be46a994272793-00",
        ] {
            assert_eq!(TraceId::parse(bad), Err(TraceIdError), "{bad}");
        }
    }

    #[test]
    fn a_jobs_own_id_is_well_formed_stable_and_its_own() {
        let a = TraceId::for_job("job_a", 1_764_633_600);
        assert_eq!(TraceId::parse(a.as_str()), Ok(a.clone()));
        assert_eq!(a, TraceId::for_job("job_a", 1_764_633_600));
        assert_ne!(a, TraceId::for_job("job_b", 1_764_633_600));
        assert_eq!(TraceId::from_header(&a.header()), Some(a));
    }
}
