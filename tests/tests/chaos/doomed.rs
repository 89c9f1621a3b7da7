//! The webhook deliverers killed mid-batch, at a call the seed picks: a killed batch runs as
//! the sweeper's role through a wire proxy of its own (the same fault kinds, its own seed), one
//! killed batch at a time, its messages one after another, and dies at the `k`-th AWS request
//! it makes: the proxy's tripwire holds that request (never forwarded) and the batch is dropped
//! where it stands, deleting nothing. So which claims, POSTs and records a killed deliverer
//! made is the seed's, not the machine's timing (until 2026-12-07 it was cut 0–60 ms in).
//! What still varies: the live batch beside it (its slots, its records) changes what the
//! killed one finds, and so how many requests it makes before the `k`-th.

use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::clock::Instant;
use atelier_shared::services::webhooks;
use atelier_tests::Harness;
use atelier_wire_proxy::Proxy;
use aws_sdk_sqs::types::Message;

/// The killed deliverer: its role's clients through its own proxy.
pub struct Doomed {
    pub harness: Harness,
    pub wire: Proxy,
    one_at_a_time: tokio::sync::Mutex<()>,
}

/// The `k` of a kill is drawn from `1..=KILL_WITHIN`: a batch of ten messages makes about ten
/// requests each, so most kills land among its first few messages and few batches end first.
pub const KILL_WITHIN: u64 = 40;

/// How a killed batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Death {
    /// At its `k`-th request, mid-batch.
    AtTheCall,
    /// Its messages all handled before the `k`-th request: it died before reporting them, so
    /// none is deleted all the same (a function that times out after its work).
    AfterTheBatch,
}

impl Doomed {
    pub fn new(harness: Harness, wire: Proxy) -> Doomed {
        Doomed {
            harness,
            wire,
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }

    /// Delivers `batch` in order at `at` until its `k`-th AWS request, which never leaves.
    pub async fn deliver(
        &self,
        http: &WebhookClient,
        batch: &[Message],
        at: Instant,
        k: u64,
    ) -> Death {
        let _alone = self.one_at_a_time.lock().await;
        let hooks = atelier_sweeper::hooks(&self.harness.app, http);
        let mut tripped = self.wire.trip_after(k);
        let work = async {
            for m in batch {
                let msg = m.body.as_deref().and_then(|b| serde_json::from_str(b).ok());
                if let Some(msg) = msg {
                    let _ = webhooks::deliver(hooks, &msg, at).await;
                }
            }
        };
        let death = tokio::select! {
            Ok(()) = &mut tripped => Death::AtTheCall,
            () = work => Death::AfterTheBatch,
        };
        self.wire.disarm();
        death
    }
}
