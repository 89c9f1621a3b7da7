//! A checkout: the request validated against the catalogue and the return-URL allow-list, and
//! the Stripe Checkout Session opened for it.

use crate::domain::validation::FieldCode;
use sha2::{Digest, Sha256};

use crate::adapters::payments::Stripe;
use crate::adapters::payments::stripe::{NewSession, StripeError};
use crate::domain::validation::FieldErrors;
use crate::domain::{EmailStatus, IdempotencyKey, Pack, UserId};
use crate::error::Error;
use crate::services::App;
use crate::services::accounts::ensure_account;

/// A checkout request, validated: the pack and where Stripe sends the user back.
#[derive(Debug, Clone)]
pub struct CheckoutSpec {
    pub pack: Pack,
    pub success_url: String,
    pub cancel_url: String,
}

/// Longest return URL accepted.
pub const MAX_URL_LEN: usize = 2048;

impl CheckoutSpec {
    /// Validates a request against the catalogue and the return-URL allow-list.
    pub fn parse(
        app: &App,
        pack: Option<&str>,
        success_url: Option<&str>,
        cancel_url: Option<&str>,
    ) -> Result<CheckoutSpec, Error> {
        let settings = &app.config.payments;
        let mut errors = FieldErrors::default();
        let pack = match pack {
            None => {
                errors.push(
                    "pack",
                    FieldCode::Required,
                    "name a pack from GET /v1/packs",
                );
                None
            }
            Some(p) => match settings.packs.get(p) {
                Some(p) => Some(p.clone()),
                None => {
                    errors.push(
                        "pack",
                        FieldCode::UnknownPack,
                        "no such pack; see GET /v1/packs",
                    );
                    None
                }
            },
        };
        let first = settings
            .return_urls
            .first()
            .map(|u| u.as_str())
            .unwrap_or("");
        let mut url = |field: &'static str, given: Option<&str>, default: String| match given {
            None => Some(default),
            Some(u) if allowed(&settings.return_urls, u) => Some(u.to_owned()),
            Some(_) => {
                errors.push(
                    field,
                    FieldCode::NotAllowed,
                    "must start with one of the configured return URLs",
                );
                None
            }
        };
        let success = url(
            "success_url",
            success_url,
            format!("{first}?checkout=success"),
        );
        let cancel = url("cancel_url", cancel_url, format!("{first}?checkout=cancel"));
        match (pack, success, cancel) {
            (Some(pack), Some(success_url), Some(cancel_url)) if errors.0.is_empty() => {
                Ok(CheckoutSpec {
                    pack,
                    success_url,
                    cancel_url,
                })
            }
            _ => Err(Error::Validation(errors)),
        }
    }
}

/// Whether `url` is under one of the allowed prefixes: same scheme, host and port, and a
/// path that starts with the prefix's path (compared parsed, so `https://app.example.com.evil`
/// or `https://app.example.com@evil` never pass).
fn allowed(prefixes: &[reqwest::Url], url: &str) -> bool {
    if url.len() > MAX_URL_LEN {
        return false;
    }
    let Ok(u) = reqwest::Url::parse(url) else {
        return false;
    };
    u.username().is_empty()
        && u.password().is_none()
        && prefixes.iter().any(|p| {
            p.scheme() == u.scheme()
                && p.host_str() == u.host_str()
                && p.port_or_known_default() == u.port_or_known_default()
                && u.path().starts_with(p.path())
        })
}

/// A created (or replayed) checkout.
#[derive(Debug, Clone)]
pub struct Checkout {
    pub id: String,
    pub url: String,
    pub replayed: bool,
}

fn stripe(app: &App) -> Result<&Stripe, Error> {
    app.stripe.as_ref().ok_or(Error::PaymentsNotConfigured)
}

/// Creates a Checkout Session for `spec` on behalf of `user`.
pub async fn checkout(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    spec: &CheckoutSpec,
) -> Result<Checkout, Error> {
    let stripe = stripe(app)?;
    // The purchase lands on an existing account. Created here, it owes its signup grant until
    // the user's first call with a verified e-mail (payment is not e-mail verification).
    let account = ensure_account(app, user, EmailStatus::Unverified).await?;
    // A closed account takes no money (rule 14): no session is opened.
    if account.closed_at.is_some() {
        return Err(Error::AccountClosed);
    }
    let new = NewSession {
        user_id: user.as_str(),
        pack: spec.pack.id.as_str(),
        credits: spec.pack.credits.get(),
        amount: spec.pack.amount,
        currency: &spec.pack.currency,
        product_name: format!(
            "Atelier {} pack ({} credits)",
            spec.pack.id, spec.pack.credits
        ),
        success_url: &spec.success_url,
        cancel_url: &spec.cancel_url,
    };
    // Stripe's keys are per account, ours per user: two users' keys must not meet.
    let digest = Sha256::digest(format!("checkout\n{user}\n{}", key.as_str()));
    let stripe_key = format!("atelier-checkout-{}", hex::encode(digest));
    let created = stripe
        .client
        .create_session(&new, &stripe_key)
        .await
        .map_err(|e| match e {
            StripeError::IdempotencyConflict => Error::IdempotencyConflict,
            e => Error::PaymentProvider(Box::new(e)),
        })?;
    let url = created.session.url.ok_or_else(|| {
        Error::PaymentProvider(Box::new(StripeError::Refused {
            status: 200,
            message: "the session has no url".to_owned(),
        }))
    })?;
    tracing::info!(user_id = %user, pack = %spec.pack.id, session_id = %created.session.id, replayed = created.replayed, "checkout_created");
    Ok(Checkout {
        id: created.session.id,
        url,
        replayed: created.replayed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_urls_must_share_scheme_host_port_and_path_prefix() {
        let prefixes = [reqwest::Url::parse("https://app.example.com/billing/")
            .unwrap_or_else(|e| panic!("{e}"))];
        for (url, ok) in [
            ("https://app.example.com/billing/done?x=1", true),
            ("https://app.example.com:443/billing/", true),
            ("https://app.example.com/other", false),
            ("http://app.example.com/billing/", false),
            ("https://app.example.com.evil.com/billing/", false),
            ("https://app.example.com@evil.com/billing/", false),
            ("https://evil.com/?https://app.example.com/billing/", false),
            ("https://app.example.com:8443/billing/", false),
            ("javascript:alert(1)", false),
            ("not a url", false),
        ] {
            assert_eq!(allowed(&prefixes, url), ok, "{url}");
        }
    }
}
