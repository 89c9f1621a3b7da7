//! A client for the control endpoints, for tests and tools that run the server out of
//! process (the local runner, the integration harness).

use crate::state::{CallCounts, FaultRule};

/// Talks to `/_stand-in/…` on a running server.
#[derive(Debug, Clone)]
pub struct Control {
    http: reqwest::Client,
    base: String,
}

impl Control {
    /// `base` as given to the model client, e.g. `http://127.0.0.1:8788`.
    pub fn new(base: impl Into<String>) -> Control {
        Control {
            http: reqwest::Client::new(),
            base: base.into().trim_end_matches('/').to_owned(),
        }
    }

    pub async fn calls(&self) -> Result<CallCounts, reqwest::Error> {
        self.http
            .get(format!("{}/_stand-in/calls", self.base))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await
    }

    /// Clears counters and faults.
    pub async fn reset(&self) -> Result<(), reqwest::Error> {
        self.http
            .post(format!("{}/_stand-in/reset", self.base))
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    /// Adds fault rules after those already set.
    pub async fn add_faults(&self, rules: &[FaultRule]) -> Result<(), reqwest::Error> {
        self.http
            .post(format!("{}/_stand-in/faults", self.base))
            .json(rules)
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    pub async fn clear_faults(&self) -> Result<(), reqwest::Error> {
        self.http
            .delete(format!("{}/_stand-in/faults", self.base))
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }
}
