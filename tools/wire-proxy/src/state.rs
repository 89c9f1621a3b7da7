//! What a proxy keeps between requests (counts, the fault plan and its sequence, the faults
//! injected, the calls recorded), and each request's count and fault draw.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Mutex, MutexGuard};

use http::Uri;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use serde::Serialize;

use crate::body::Body;
use crate::classify::{Operation, Service};
use crate::counts::Counts;
use crate::fault::{Decision, FaultKind, FaultPlan};
use crate::record::{self, Attribution, Call};

/// One injected fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InjectedFault {
    /// Order among every request the proxy answered since the last reset (from 0).
    pub request: u64,
    pub operation: Operation,
    pub kind: FaultKind,
    /// For `DropAfterForward`: the status the emulator answered before the reply was dropped
    /// (200 on a `TransactWriteItems`: a transaction committed and its caller never heard).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) counts: Counts,
    pub(crate) plan: Option<FaultPlan>,
    /// Requests per operation since the plan was set: the decision's sequence number.
    pub(crate) seen: HashMap<Operation, u64>,
    pub(crate) requests: u64,
    pub(crate) faults: Vec<InjectedFault>,
    pub(crate) recording: Option<Recording>,
    pub(crate) trip: Option<Trip>,
}

/// A tripwire ([`crate::Proxy::trip_after`]): requests left until the one never forwarded.
pub(crate) struct Trip {
    pub(crate) left: u64,
    pub(crate) fired: tokio::sync::oneshot::Sender<()>,
}

/// What happens to one request: its fault draw, its place among every request, and whether
/// it tripped the wire (then it is never forwarded).
pub(crate) struct Fate {
    pub(crate) decision: Decision,
    pub(crate) request: u64,
    pub(crate) tripped: bool,
}

/// The calls recorded so far, each with how often it was made.
pub(crate) struct Recording {
    pub(crate) attribution: Attribution,
    pub(crate) calls: BTreeMap<Call, u64>,
    /// Each call appended as a JSON line the first time it is seen.
    pub(crate) file: Option<std::fs::File>,
}

impl Recording {
    fn add(&mut self, call: Call) {
        let n = self.calls.entry(call.clone()).or_default();
        *n += 1;
        if *n > 1 {
            return;
        }
        if let Some(f) = &mut self.file {
            let line = serde_json::to_string(&call).unwrap_or_default();
            if let Err(e) = writeln!(f, "{line}") {
                tracing::warn!(error = %e, "proxy_record_write_failed");
            }
        }
    }
}

pub(crate) struct Shared {
    pub(crate) upstream: Uri,
    pub(crate) client: Client<HttpsConnector<HttpConnector>, Body>,
    pub(crate) state: Mutex<State>,
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; the counters are still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Shared {
    /// Notes what the emulator answered to request `request`, whose reply is being dropped.
    pub(crate) fn note_dropped_reply(&self, request: u64, status: u16) {
        let mut s = self.state();
        if let Some(f) = s
            .faults
            .iter_mut()
            .rev()
            .find(|f| f.request == request && f.kind == FaultKind::DropAfterForward)
        {
            f.upstream_status = Some(status);
        }
    }
}

pub(crate) fn fault_counts(faults: &[InjectedFault]) -> BTreeMap<(FaultKind, Operation), u64> {
    let mut out = BTreeMap::new();
    for f in faults {
        *out.entry((f.kind, f.operation.clone())).or_default() += 1;
    }
    out
}

impl Shared {
    /// Records the request's calls and count, and draws its fault (none for the request that
    /// trips the wire).
    pub(crate) fn record_and_decide(&self, op: &Operation, calls: Vec<record::Call>) -> Fate {
        let mut s = self.state();
        if let Some(r) = &mut s.recording {
            for c in calls {
                r.add(c);
            }
        }
        s.counts.add(op, 1);
        let request = s.requests;
        s.requests += 1;
        if let Some(trip) = &mut s.trip {
            trip.left = trip.left.saturating_sub(1);
            if trip.left == 0 {
                if let Some(trip) = s.trip.take() {
                    let _ = trip.fired.send(());
                }
                return Fate {
                    decision: Decision::default(),
                    request,
                    tripped: true,
                };
            }
        }
        let state = &mut *s;
        let decision = match &state.plan {
            Some(plan) if op.service != Service::Other => {
                let seq = state.seen.entry(op.clone()).or_insert(0);
                let n = *seq;
                *seq += 1;
                plan.decide(op, n)
            }
            _ => Decision::default(),
        };
        for kind in decision
            .error
            .into_iter()
            .chain(decision.delay.map(|_| FaultKind::Latency))
        {
            s.faults.push(InjectedFault {
                request,
                operation: op.clone(),
                kind,
                upstream_status: None,
            });
        }
        Fate {
            decision,
            request,
            tripped: false,
        }
    }
}
