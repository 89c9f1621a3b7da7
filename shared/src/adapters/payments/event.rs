//! Stripe events as this code understands them: the raw (verified) body becomes one
//! [`PaymentEvent`]; anything not ours or not about money is [`PaymentEvent::Ignored`] with
//! the reason, and a body that is not an event at all is an [`EventError`].

use serde::Deserialize;

use crate::domain::{Credits, Packs, UserId};

/// What an event asks of the books.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentEvent {
    /// A Checkout Session was paid: grant its credits once.
    Paid(PaidSession),
    /// A payment was refunded or disputed: take its credits back once.
    Reversed {
        payment_id: String,
        cause: ReversalCause,
    },
    /// A dispute was closed in the seller's favour: give back what its reversal took.
    DisputeWon {
        payment_id: String,
        dispute_id: String,
    },
    /// Not about money we track (another event type, an unpaid session, a lost dispute, …).
    Ignored { kind: String, why: &'static str },
}

/// Why a payment is taken back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReversalCause {
    Refund {
        charge_id: String,
    },
    Dispute {
        dispute_id: String,
    },
    /// An App Store Server Notification (`REFUND` or `REVOKE`), by its UUID.
    AppStore {
        kind: String,
        notification: String,
    },
    /// A Google Play voided purchase notification, by its Pub/Sub message id.
    GooglePlayVoided {
        message_id: String,
    },
}

impl ReversalCause {
    /// Recorded as the reversal row's reason.
    pub fn reason(&self) -> String {
        match self {
            ReversalCause::Refund { charge_id } => format!("refund:{charge_id}"),
            ReversalCause::Dispute { dispute_id } => format!("dispute:{dispute_id}"),
            ReversalCause::AppStore { kind, notification } => {
                format!("app_store_{}:{notification}", kind.to_ascii_lowercase())
            }
            ReversalCause::GooglePlayVoided { message_id } => {
                format!("google_play_voided:{message_id}")
            }
        }
    }
}

/// A paid session of ours: who, what, and the payment that refunds will name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaidSession {
    pub session_id: String,
    pub payment_id: String,
    pub user: UserId,
    pub pack: String,
    pub credits: Credits,
}

/// A body that is not a Stripe event.
#[derive(Debug, thiserror::Error)]
#[error("not a Stripe event")]
pub struct EventError(#[source] pub serde_json::Error);

#[derive(Deserialize)]
struct Envelope {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    data: Data,
}

#[derive(Deserialize)]
struct Data {
    object: serde_json::Value,
}

#[derive(Deserialize)]
struct SessionObject {
    id: String,
    #[serde(default)]
    payment_status: Option<String>,
    #[serde(default)]
    payment_intent: Option<String>,
    #[serde(default)]
    client_reference_id: Option<String>,
    #[serde(default)]
    metadata: std::collections::HashMap<String, String>,
}

#[derive(Deserialize)]
struct ChargeObject {
    id: String,
    #[serde(default)]
    payment_intent: Option<String>,
}

#[derive(Deserialize)]
struct DisputeObject {
    id: String,
    #[serde(default)]
    payment_intent: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

/// A Stripe object id: 1-255 characters of letters, digits and `_`.
fn stripe_id(raw: &str) -> Option<String> {
    let ok = !raw.is_empty()
        && raw.len() <= 255
        && raw.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then(|| raw.to_owned())
}

impl PaymentEvent {
    /// The event's id and what it asks for.
    pub fn parse(body: &[u8]) -> Result<(String, PaymentEvent), EventError> {
        let env: Envelope = serde_json::from_slice(body).map_err(EventError)?;
        let event = match env.kind.as_str() {
            "checkout.session.completed" | "checkout.session.async_payment_succeeded" => {
                session(env.kind.clone(), env.data.object)
            }
            "charge.refunded" => match serde_json::from_value::<ChargeObject>(env.data.object) {
                Ok(c) => match (
                    c.payment_intent.as_deref().and_then(stripe_id),
                    stripe_id(&c.id),
                ) {
                    (Some(payment_id), Some(charge_id)) => PaymentEvent::Reversed {
                        payment_id,
                        cause: ReversalCause::Refund { charge_id },
                    },
                    _ => ignored(env.kind, "no payment intent"),
                },
                Err(_) => ignored(env.kind, "not a charge"),
            },
            "charge.dispute.created" | "charge.dispute.closed" => {
                match serde_json::from_value::<DisputeObject>(env.data.object) {
                    Ok(d) => dispute(env.kind, d),
                    Err(_) => ignored(env.kind, "not a dispute"),
                }
            }
            _ => ignored(env.kind, "event type not handled"),
        };
        Ok((env.id, event))
    }
}

fn ignored(kind: String, why: &'static str) -> PaymentEvent {
    PaymentEvent::Ignored { kind, why }
}

fn session(kind: String, object: serde_json::Value) -> PaymentEvent {
    let Ok(s) = serde_json::from_value::<SessionObject>(object) else {
        return ignored(kind, "not a checkout session");
    };
    if s.payment_status.as_deref() != Some("paid") {
        // An async payment completes later (`async_payment_succeeded`).
        return ignored(kind, "session not paid");
    }
    let user = s
        .metadata
        .get("user_id")
        .or(s.client_reference_id.as_ref())
        .and_then(|u| UserId::parse(u));
    let credits = s
        .metadata
        .get("credits")
        .and_then(|c| c.parse::<i64>().ok())
        .filter(|c| (1..=Packs::MAX_CREDITS).contains(c));
    let pack = s
        .metadata
        .get("pack")
        .filter(|p| crate::domain::PackId::parse(p).is_some());
    match (
        stripe_id(&s.id),
        s.payment_intent.as_deref().and_then(stripe_id),
        user,
        pack,
        credits,
    ) {
        (Some(session_id), Some(payment_id), Some(user), Some(pack), Some(credits)) => {
            PaymentEvent::Paid(PaidSession {
                session_id,
                payment_id,
                user,
                pack: pack.clone(),
                credits: Credits::new(credits),
            })
        }
        _ => ignored(kind, "not an Atelier session"),
    }
}

fn dispute(kind: String, d: DisputeObject) -> PaymentEvent {
    let (Some(payment_id), Some(dispute_id)) = (
        d.payment_intent.as_deref().and_then(stripe_id),
        stripe_id(&d.id),
    ) else {
        return ignored(kind, "no payment intent");
    };
    if kind == "charge.dispute.created" {
        return PaymentEvent::Reversed {
            payment_id,
            cause: ReversalCause::Dispute { dispute_id },
        };
    }
    if d.status.as_deref() == Some("won") {
        PaymentEvent::DisputeWon {
            payment_id,
            dispute_id,
        }
    } else {
        ignored(kind, "dispute not won")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> PaymentEvent {
        let bytes = v.to_string().into_bytes();
        PaymentEvent::parse(&bytes)
            .map(|(_, e)| e)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn session_event(kind: &str, status: &str) -> serde_json::Value {
        json!({"id": "evt_1", "type": kind, "data": {"object": {
            "id": "cs_test_1", "object": "checkout.session", "payment_status": status,
            "payment_intent": "pi_1", "client_reference_id": "alice",
            "metadata": {"user_id": "alice", "pack": "starter", "credits": "50"}}}})
    }

    #[test]
    fn a_paid_session_grants_the_credits_bound_to_it() {
        for kind in [
            "checkout.session.completed",
            "checkout.session.async_payment_succeeded",
        ] {
            let PaymentEvent::Paid(p) = parse(session_event(kind, "paid")) else {
                panic!("{kind} should be a purchase");
            };
            assert_eq!(
                (p.session_id.as_str(), p.payment_id.as_str()),
                ("cs_test_1", "pi_1")
            );
            assert_eq!((p.user.as_str(), p.credits), ("alice", Credits::new(50)));
        }
    }

    #[test]
    fn an_unpaid_or_foreign_session_is_ignored() {
        let unpaid = parse(session_event("checkout.session.completed", "unpaid"));
        assert!(matches!(
            unpaid,
            PaymentEvent::Ignored {
                why: "session not paid",
                ..
            }
        ));
        let mut foreign = session_event("checkout.session.completed", "paid");
        foreign["data"]["object"]["metadata"] = json!({});
        assert!(matches!(
            parse(foreign),
            PaymentEvent::Ignored {
                why: "not an Atelier session",
                ..
            }
        ));
    }

    #[test]
    fn refunds_and_disputes_name_the_payment_and_a_won_dispute_restores() {
        let refund = json!({"id": "evt_2", "type": "charge.refunded",
            "data": {"object": {"id": "ch_1", "payment_intent": "pi_1", "refunded": true}}});
        assert_eq!(
            parse(refund),
            PaymentEvent::Reversed {
                payment_id: "pi_1".into(),
                cause: ReversalCause::Refund {
                    charge_id: "ch_1".into()
                },
            }
        );
        let dispute = |kind: &str, status: &str| {
            json!({"id": "evt_3", "type": kind,
            "data": {"object": {"id": "dp_1", "charge": "ch_1", "payment_intent": "pi_1", "status": status}}})
        };
        assert_eq!(
            parse(dispute("charge.dispute.created", "needs_response")),
            PaymentEvent::Reversed {
                payment_id: "pi_1".into(),
                cause: ReversalCause::Dispute {
                    dispute_id: "dp_1".into()
                },
            }
        );
        assert_eq!(
            parse(dispute("charge.dispute.closed", "won")),
            PaymentEvent::DisputeWon {
                payment_id: "pi_1".into(),
                dispute_id: "dp_1".into(),
            }
        );
        assert!(matches!(
            parse(dispute("charge.dispute.closed", "lost")),
            PaymentEvent::Ignored { .. }
        ));
    }

    #[test]
    fn unknown_types_are_ignored_and_non_events_are_errors() {
        let other = json!({"id": "evt_4", "type": "customer.created", "data": {"object": {}}});
        assert!(matches!(
            parse(other),
            PaymentEvent::Ignored {
                why: "event type not handled",
                ..
            }
        ));
        assert!(PaymentEvent::parse(b"{}").is_err());
        assert!(PaymentEvent::parse(b"not json").is_err());
    }
}
