//! Use cases. Each takes validated domain values and the [`App`]'s adapters, applies the
//! money rules and returns a domain outcome; the functions only translate.

pub mod accounts;
pub mod adopt;
pub mod app_store;
pub mod audit;
pub mod breaker;
pub mod budget;
pub mod cancel;
pub mod closed_payments;
pub mod delivery;
pub mod devices;
pub mod google_play;
pub mod guard;
pub mod jobs;
pub mod lineage;
pub mod payment_outcome;
pub mod payments;
pub mod privacy;
pub mod process;
pub mod purchase_binding;
pub mod push;
pub mod rate_limit;
pub mod submit;
pub mod support;
pub mod sweep;
pub mod uploads;
pub mod user_share;
pub mod watch;
pub mod webhooks;

use crate::adapters::assets::Assets;
use crate::adapters::aws::Clients;
use crate::adapters::payments::Stripe;
use crate::adapters::queue::Queue;
use crate::config::Config;
use crate::store::Store;

/// The adapters every use case needs, built once per process.
#[derive(Clone, Debug)]
pub struct App {
    pub config: Config,
    pub store: Store,
    pub queue: Queue,
    /// The webhook delivery queue.
    pub hooks_queue: crate::adapters::webhooks::queue::DeliveryQueue,
    pub assets: Assets,
    /// Stripe, when buying credits is configured (the API only).
    pub stripe: Option<Stripe>,
    /// Google Play, when its purchases are configured (the API only).
    pub google_play: Option<std::sync::Arc<crate::adapters::payments::google::GooglePlay>>,
    /// The App Store Server API, when consumption answers are configured (the API only).
    pub app_store_api: Option<std::sync::Arc<crate::adapters::payments::apple_api::AppStoreApi>>,
    /// The push services' client, when push is configured (the sweeper only).
    pub pusher: Option<std::sync::Arc<crate::adapters::push::Pusher>>,
}

impl App {
    pub fn new(config: Config, clients: &Clients) -> App {
        let r = &config.resources;
        App {
            store: Store::new(clients.dynamodb.clone(), r.clone()),
            queue: Queue::new(clients.sqs.clone(), r.queue_url.clone()),
            hooks_queue: crate::adapters::webhooks::queue::DeliveryQueue::new(
                clients.sqs.clone(),
                r.webhook_queue_url.clone(),
            ),
            assets: Assets::new(clients.s3.clone(), r.bucket.clone()),
            config,
            stripe: None,
            google_play: None,
            app_store_api: None,
            pusher: None,
        }
    }

    /// The same adapters with push configured (or not).
    pub fn with_pusher(mut self, pusher: Option<crate::adapters::push::Pusher>) -> App {
        self.pusher = pusher.map(std::sync::Arc::new);
        self
    }

    /// The same adapters with Google Play configured (or not).
    pub fn with_google_play(
        mut self,
        play: Option<crate::adapters::payments::google::GooglePlay>,
    ) -> App {
        self.google_play = play.map(std::sync::Arc::new);
        self
    }

    /// The same adapters with the App Store Server API configured (or not).
    pub fn with_app_store_api(
        mut self,
        api: Option<crate::adapters::payments::apple_api::AppStoreApi>,
    ) -> App {
        self.app_store_api = api.map(std::sync::Arc::new);
        self
    }

    /// The same adapters with Stripe configured (or not).
    pub fn with_stripe(mut self, stripe: Option<Stripe>) -> App {
        self.stripe = stripe;
        self
    }
}
