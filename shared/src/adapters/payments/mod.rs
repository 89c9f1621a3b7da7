//! Buying credits with Stripe and the App Store ([`apple`]: signed data verified): the webhook [`signature`], the [`event`]s that move money, the
//! [`stripe`] HTTP client that creates Checkout Sessions, and [`setup`] at cold start. The
//! use cases are in `services::purchases`; the transactions in `store::payments`.

pub mod apple;
pub mod apple_api;
pub mod event;
pub mod google;
pub mod setup;
pub mod signature;
pub mod stripe;

use self::stripe::StripeClient;

/// Stripe, configured: the client and the webhook signing secret.
#[derive(Clone)]
pub struct Stripe {
    pub client: StripeClient,
    webhook_secret: String,
}

impl std::fmt::Debug for Stripe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stripe")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl Stripe {
    pub fn new(client: StripeClient, webhook_secret: String) -> Stripe {
        Stripe {
            client,
            webhook_secret,
        }
    }

    pub(crate) fn webhook_secret(&self) -> &str {
        &self.webhook_secret
    }
}
