//! The server's memory: call counters (per kind, per job) and the scripted faults.
//!
//! A call is counted the moment it arrives, before any fault answers it: from the client's
//! side every arrival was a paid attempt, and the tests that prove "one edit call per job"
//! must see the attempts that failed too.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Calls of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub edit: u64,
    pub check: u64,
    pub review: u64,
    pub compare: u64,
    /// Chat calls with a schema name the server does not know.
    #[serde(default)]
    pub other: u64,
}

impl Counts {
    fn bump(&mut self, kind: Call) {
        match kind {
            Call::Edit => self.edit += 1,
            Call::Check => self.check += 1,
            Call::Review => self.review += 1,
            Call::Compare => self.compare += 1,
            Call::Other => self.other += 1,
        }
    }
}

/// What `GET /_stand-in/calls` returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCounts {
    pub total: Counts,
    /// By the `X-Client-Request-Id` header (the job id); calls without it count in `total`
    /// only.
    pub by_job: BTreeMap<String, Counts>,
}

impl CallCounts {
    /// The counts for one job (zero when it made no call).
    pub fn job(&self, job: &str) -> Counts {
        self.by_job.get(job).copied().unwrap_or_default()
    }
}

/// The kind of a call, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Edit,
    Check,
    Review,
    Compare,
    Other,
}

impl Call {
    pub fn as_str(self) -> &'static str {
        match self {
            Call::Edit => "edit",
            Call::Check => "check",
            Call::Review => "review",
            Call::Compare => "compare",
            Call::Other => "other",
        }
    }
}

/// Which calls a fault rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultCall {
    Edit,
    Check,
    Review,
    Compare,
    Any,
}

impl FaultCall {
    fn matches(self, call: Call) -> bool {
        matches!(
            (self, call),
            (FaultCall::Any, _)
                | (FaultCall::Edit, Call::Edit)
                | (FaultCall::Check, Call::Check)
                | (FaultCall::Review, Call::Review)
                | (FaultCall::Compare, Call::Compare)
        )
    }
}

/// A scripted misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fault {
    /// HTTP 500 with an OpenAI-shaped error body.
    #[serde(rename = "error_500")]
    Error500,
    /// HTTP 503, the provider overloaded or down, before any output.
    #[serde(rename = "error_503")]
    Error503,
    /// HTTP 502 with a CDN's HTML page, as a gateway in front of the provider answers when
    /// its origin failed (maybe while generating): not the provider's own error.
    #[serde(rename = "html_502")]
    Html502,
    /// HTTP 524, a CDN's "origin timed out" HTML page (Cloudflare's 520–524 family): the
    /// model may still be generating.
    #[serde(rename = "error_524")]
    Error524,
    /// HTTP 500 with an empty body.
    #[serde(rename = "empty_500")]
    Empty500,
    /// HTTP 429 with `Retry-After` and `rate_limit_exceeded`.
    #[serde(rename = "error_429")]
    Error429,
    /// Hold the request (`ms`, default the server's hold time, 30 s) before answering 504:
    /// longer than any client timeout in the tests.
    #[serde(rename = "timeout")]
    Timeout,
    /// Answer normally after `ms` milliseconds.
    #[serde(rename = "latency_ms")]
    LatencyMs,
    /// A 200 whose payload is unusable: a vision answer that is not JSON, an edit whose image
    /// is not base64. The usage is still sent (the call was paid).
    #[serde(rename = "malformed_json")]
    MalformedJson,
    /// A 200 whose vision answer is valid JSON that breaks the schema (an extra field), or an
    /// edit with no image.
    #[serde(rename = "schema_violation")]
    SchemaViolation,
    /// A normal answer without `usage`.
    #[serde(rename = "missing_usage")]
    MissingUsage,
    /// The readiness check answers not ready with a question, whatever it sees.
    #[serde(rename = "not_ready")]
    NotReady,
    /// The repair comparison answers `improved`, whatever it sees.
    #[serde(rename = "compare_improved")]
    CompareImproved,
    /// The repair comparison answers `unchanged`, whatever it sees.
    #[serde(rename = "compare_unchanged")]
    CompareUnchanged,
    /// The repair comparison answers `worse`, whatever it sees.
    #[serde(rename = "compare_worse")]
    CompareWorse,
    /// The edit's image carries a provider-style C2PA manifest (`c2pa.created` by a trained
    /// model), as OpenAI signs every image its API returns ([`crate::credentials`]).
    #[serde(rename = "content_credentials")]
    ContentCredentials,
}

/// One rule of `POST /_stand-in/faults`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRule {
    pub call: FaultCall,
    /// Only calls of this job (`X-Client-Request-Id`); any job when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    pub fault: Fault,
    /// Milliseconds, for `latency_ms` and `timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// How many calls it applies to; unlimited when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

impl FaultRule {
    /// A rule for every call of a kind.
    pub fn new(call: FaultCall, fault: Fault) -> FaultRule {
        FaultRule {
            call,
            job: None,
            fault,
            ms: None,
            times: None,
        }
    }

    pub fn for_job(mut self, job: impl Into<String>) -> FaultRule {
        self.job = Some(job.into());
        self
    }

    pub fn ms(mut self, ms: u64) -> FaultRule {
        self.ms = Some(ms);
        self
    }

    pub fn times(mut self, times: u32) -> FaultRule {
        self.times = Some(times);
        self
    }
}

/// The faults that apply to one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    pub latency: Option<Duration>,
    /// A fault that replaces the answer (error or timeout), with its hold time.
    pub failure: Option<(Fault, Duration)>,
    pub malformed: bool,
    pub schema_violation: bool,
    pub missing_usage: bool,
    pub not_ready: bool,
    /// A scripted comparison answer (`compare_improved`, …).
    pub compare: Option<Fault>,
    /// The edit's image signed with a provider-style manifest.
    pub content_credentials: bool,
}

impl Applied {
    /// Names of the faults applied, for the log.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.latency.is_some() {
            parts.push("latency_ms");
        }
        match self.failure {
            Some((Fault::Error500, _)) => parts.push("error_500"),
            Some((Fault::Error429, _)) => parts.push("error_429"),
            Some((Fault::Error503, _)) => parts.push("error_503"),
            Some((Fault::Html502, _)) => parts.push("html_502"),
            Some((Fault::Error524, _)) => parts.push("error_524"),
            Some((Fault::Empty500, _)) => parts.push("empty_500"),
            Some((Fault::Timeout, _)) => parts.push("timeout"),
            _ => {}
        }
        for (on, name) in [
            (self.malformed, "malformed_json"),
            (self.schema_violation, "schema_violation"),
            (self.missing_usage, "missing_usage"),
            (self.not_ready, "not_ready"),
            (self.content_credentials, "content_credentials"),
            (
                self.compare == Some(Fault::CompareImproved),
                "compare_improved",
            ),
            (
                self.compare == Some(Fault::CompareUnchanged),
                "compare_unchanged",
            ),
            (self.compare == Some(Fault::CompareWorse), "compare_worse"),
        ] {
            if on {
                parts.push(name);
            }
        }
        parts.join(",")
    }
}

#[derive(Debug, Default)]
struct Inner {
    counts: CallCounts,
    faults: Vec<FaultRule>,
    sequence: u64,
}

/// Shared state of one server. Cheap to clone.
#[derive(Debug, Clone)]
pub struct StandIn {
    inner: Arc<Mutex<Inner>>,
    hold: Duration,
}

impl StandIn {
    /// `hold` is how long a `timeout` fault holds a request when its rule gives no `ms`.
    pub fn new(hold: Duration) -> StandIn {
        StandIn {
            inner: Arc::new(Mutex::new(Inner::default())),
            hold,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves counters that are still meaningful.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a call and takes the faults that apply to it (using up counted rules). Returns
    /// the call's sequence number (for `x-request-id`) and the faults.
    pub fn arrive(&self, call: Call, job: Option<&str>) -> (u64, Applied) {
        let mut inner = self.lock();
        inner.sequence += 1;
        let sequence = inner.sequence;
        inner.counts.total.bump(call);
        if let Some(job) = job {
            inner
                .counts
                .by_job
                .entry(job.to_owned())
                .or_default()
                .bump(call);
        }
        let mut applied = Applied::default();
        for rule in inner.faults.iter_mut() {
            let job_matches = match (&rule.job, job) {
                (None, _) => true,
                (Some(want), Some(got)) => want == got,
                (Some(_), None) => false,
            };
            if !rule.call.matches(call) || !job_matches || rule.times == Some(0) {
                continue;
            }
            if let Some(t) = rule.times.as_mut() {
                *t -= 1;
            }
            let ms = rule.ms.map(Duration::from_millis);
            match rule.fault {
                Fault::LatencyMs => {
                    applied.latency =
                        Some(applied.latency.unwrap_or_default() + ms.unwrap_or_default());
                }
                Fault::Error500
                | Fault::Error503
                | Fault::Error429
                | Fault::Html502
                | Fault::Error524
                | Fault::Empty500
                | Fault::Timeout
                    if applied.failure.is_none() =>
                {
                    applied.failure = Some((rule.fault, ms.unwrap_or(self.hold)));
                }
                Fault::Error500
                | Fault::Error503
                | Fault::Error429
                | Fault::Html502
                | Fault::Error524
                | Fault::Empty500
                | Fault::Timeout => {}
                Fault::MalformedJson => applied.malformed = true,
                Fault::SchemaViolation => applied.schema_violation = true,
                Fault::MissingUsage => applied.missing_usage = true,
                Fault::NotReady => applied.not_ready = true,
                Fault::ContentCredentials => applied.content_credentials = true,
                Fault::CompareImproved | Fault::CompareUnchanged | Fault::CompareWorse => {
                    applied.compare = Some(rule.fault);
                }
            }
        }
        inner.faults.retain(|r| r.times != Some(0));
        (sequence, applied)
    }

    pub fn calls(&self) -> CallCounts {
        self.lock().counts.clone()
    }

    /// Clears the counters (faults stay).
    pub fn reset(&self) {
        self.lock().counts = CallCounts::default();
    }

    /// Adds rules (after those already set).
    pub fn add_faults(&self, rules: Vec<FaultRule>) {
        self.lock().faults.extend(rules);
    }

    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    pub fn faults(&self) -> Vec<FaultRule> {
        self.lock().faults.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_rules_run_out_and_job_rules_stay_with_their_job() {
        let s = StandIn::new(Duration::from_secs(30));
        s.add_faults(vec![
            FaultRule::new(FaultCall::Edit, Fault::Error500).times(1),
            FaultRule::new(FaultCall::Any, Fault::MissingUsage).for_job("job_a"),
        ]);
        let (_, first) = s.arrive(Call::Edit, Some("job_b"));
        assert!(matches!(first.failure, Some((Fault::Error500, _))));
        assert!(!first.missing_usage);
        let (_, second) = s.arrive(Call::Edit, Some("job_a"));
        assert_eq!(second.failure, None);
        assert!(second.missing_usage);
        let counts = s.calls();
        assert_eq!(counts.total.edit, 2);
        assert_eq!(counts.job("job_a").edit, 1);
        assert_eq!(counts.job("nobody"), Counts::default());
    }

    #[test]
    fn rules_parse_from_the_documented_json() {
        let rules: Vec<FaultRule> = serde_json::from_str(
            r#"[{"call":"edit","fault":"timeout","ms":500},{"call":"any","job":"job_x","fault":"latency_ms","ms":10,"times":2}]"#,
        )
        .unwrap_or_default();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].fault, Fault::Timeout);
        assert_eq!(rules[1].times, Some(2));
    }
}
