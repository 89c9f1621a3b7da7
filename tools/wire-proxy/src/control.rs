//! The control endpoints under `/_proxy/`, for a proxy run as its own process.

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use crate::body::{Body, json_response, simple};
use crate::counts::Counts;
use crate::fault::FaultPlan;
use crate::state::{Shared, fault_counts};

pub(crate) async fn control(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    match (req.method().as_str(), path.as_str()) {
        ("GET", "/_proxy/counts") => json_response(&shared.state().counts),
        ("GET", "/_proxy/calls") => {
            let s = shared.state();
            let calls: Vec<serde_json::Value> = s
                .recording
                .iter()
                .flat_map(|r| r.calls.iter())
                .map(|(call, n)| serde_json::json!({ "call": call, "count": n }))
                .collect();
            json_response(&calls)
        }
        ("GET", "/_proxy/faults") => {
            let s = shared.state();
            let summary: Vec<serde_json::Value> = fault_counts(&s.faults)
                .into_iter()
                .map(|((kind, op), n)| serde_json::json!({ "kind": kind, "operation": op, "count": n }))
                .collect();
            json_response(&serde_json::json!({ "by_kind": summary, "injected": s.faults }))
        }
        ("POST", "/_proxy/reset") => {
            let mut s = shared.state();
            s.counts = Counts::default();
            s.seen.clear();
            s.requests = 0;
            s.faults.clear();
            if let Some(r) = &mut s.recording {
                r.calls.clear();
            }
            simple(StatusCode::NO_CONTENT, "text/plain", Bytes::new())
        }
        ("PUT", "/_proxy/plan") => {
            let body = match Limited::new(req.into_body(), 64 * 1024).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return simple(StatusCode::BAD_REQUEST, "text/plain", e.to_string()),
            };
            match serde_json::from_slice::<Option<FaultPlan>>(&body) {
                Ok(plan) => {
                    let mut s = shared.state();
                    s.plan = plan;
                    s.seen.clear();
                    simple(StatusCode::NO_CONTENT, "text/plain", Bytes::new())
                }
                Err(e) => simple(StatusCode::BAD_REQUEST, "text/plain", e.to_string()),
            }
        }
        _ => simple(
            StatusCode::NOT_FOUND,
            "text/plain",
            "unknown proxy endpoint",
        ),
    }
}
