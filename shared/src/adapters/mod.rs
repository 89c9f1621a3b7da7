//! The world outside the process: AWS, the model and payments providers, webhook receivers,
//! metrics and logs. Adapters translate; they import `domain`, `config`, `error` and `clock`,
//! never `store` or `services`.

pub mod address_key;
pub mod assets;
pub mod aws;
pub mod cors;
pub mod credentials;
pub mod jwt;
pub mod metrics;
pub mod model;
pub mod payments;
pub mod push;
pub mod queue;
pub mod service_account;
pub mod telemetry;
pub mod tls;
pub mod webhooks;
