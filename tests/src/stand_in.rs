//! The stand-in model server in-process: its call counters, scripted faults and clients, and
//! processors (the consumer's core) talking to it.

use serde_json::Value;

use crate::harness::Harness;

/// The stand-in model server, started in-process on a free port for one test.
pub struct StandIn {
    pub base_url: String,
    http: reqwest::Client,
    _server: atelier_model_server::ServerHandle,
}

/// Calls of each kind that one job made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCalls {
    pub check: u64,
    pub edit: u64,
    pub review: u64,
    pub compare: u64,
}

impl StandIn {
    pub async fn start() -> StandIn {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let (_, server) = atelier_model_server::spawn(addr)
            .await
            .unwrap_or_else(|e| panic!("stand-in: {e}"));
        StandIn {
            base_url: server.base_url(),
            http: reqwest::Client::new(),
            _server: server,
        }
    }

    /// The calls a job made, from the server's counters. A counters request that fails or
    /// answers anything but its own shape panics: "no model call" must never be read from a
    /// failed request (a job absent from the counters made no call).
    pub async fn calls(&self, job: &str) -> JobCalls {
        let c = self.counts().await.job(job);
        JobCalls {
            check: c.check,
            edit: c.edit,
            review: c.review,
            compare: c.compare,
        }
    }

    /// Every call the server counted (`GET /_stand-in/calls`, its status checked and its body
    /// parsed strictly); panics otherwise.
    pub async fn counts(&self) -> atelier_model_server::CallCounts {
        atelier_model_server::Control::new(self.base_url.clone())
            .calls()
            .await
            .unwrap_or_else(|e| panic!("stand-in counters at {}: {e}", self.base_url))
    }

    /// Removes every scripted fault (the stand-in answers normally again).
    pub async fn clear_faults(&self) {
        let res = self
            .http
            .delete(format!("{}/_stand-in/faults", self.base_url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            res.status().is_success(),
            "faults not cleared: {}",
            res.status()
        );
    }

    /// A client of this stand-in over Gemini's wire, with the catalogue's Gemini models.
    pub fn gemini_client(&self) -> atelier_shared::adapters::model::ModelClient {
        use atelier_shared::adapters::model::catalogue::{self, find};
        let mut config = atelier_shared::adapters::model::ModelConfig::new(self.base_url.clone());
        config.image_model =
            find(catalogue::DEFAULT_GEMINI_IMAGE_MODEL).unwrap_or_else(|| panic!("row"));
        config.vision_model =
            find(catalogue::DEFAULT_GEMINI_VISION_MODEL).unwrap_or_else(|| panic!("row"));
        atelier_shared::adapters::model::ModelClient::new(config).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A client of this stand-in over OpenAI's wire whose calls time out after `timeout`.
    pub fn openai_client(
        &self,
        timeout: std::time::Duration,
    ) -> atelier_shared::adapters::model::ModelClient {
        let mut config = atelier_shared::adapters::model::ModelConfig::new(self.base_url.clone());
        config.vision_timeout = timeout;
        config.edit_timeout = timeout;
        atelier_shared::adapters::model::ModelClient::new(config).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Scripts a fault (`{"call": …, "fault": …, "job": …}`).
    pub async fn fault(&self, rule: Value) {
        let res = self
            .http
            .post(format!("{}/_stand-in/faults", self.base_url))
            .json(&Value::Array(vec![rule]))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(res.status().is_success(), "fault refused: {}", res.status());
    }
}

impl Harness {
    /// A processor (the consumer's core) talking to `model`.
    pub fn processor(&self, model: &StandIn) -> atelier_shared::services::process::Processor {
        self.processor_with_timeout(model, std::time::Duration::from_secs(60))
    }

    /// A processor whose model calls time out after `timeout`.
    pub fn processor_with_timeout(
        &self,
        model: &StandIn,
        timeout: std::time::Duration,
    ) -> atelier_shared::services::process::Processor {
        atelier_shared::services::process::Processor::new(
            self.app.clone(),
            model.openai_client(timeout),
            crate::credentials::signing(),
        )
    }

    /// A processor with two providers for every call: `first` over OpenAI's wire (its calls
    /// timing out after `timeout`), then `second` over Gemini's (docs/design.md rule 15).
    pub fn processor_with_failover(
        &self,
        first: &StandIn,
        second: &StandIn,
        timeout: std::time::Duration,
    ) -> atelier_shared::services::process::Processor {
        use atelier_shared::services::process::{Processor, Providers};
        let order = vec![first.openai_client(timeout), second.gemini_client()];
        let providers = Providers::new(order.clone(), order).unwrap_or_else(|| panic!("providers"));
        Processor::with_providers(self.app.clone(), providers, crate::credentials::signing())
    }
}
