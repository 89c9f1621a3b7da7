//! A deployed local cloud ([`Cloud`]): its addresses, its stack outputs, and its processes,
//! stopped when it is dropped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::ports::{Ports, local_aws};
use super::procs::Proc;

/// A deployed local cloud; dropping it stops every process.
pub struct Cloud {
    pub(super) ports: Ports,
    pub(super) state: PathBuf,
    pub(super) api_url: String,
    pub(super) outputs_file: PathBuf,
    pub(super) outputs: Vec<(String, String)>,
    pub(super) deploy_time: Duration,
    pub(super) procs: Vec<Proc>,
}

impl Drop for Cloud {
    fn drop(&mut self) {
        // The issuer and the model first, ministack (started first) last.
        while let Some(p) = self.procs.pop() {
            drop(p);
        }
    }
}

impl Cloud {
    /// The deployed HTTP API's base URL (API Gateway on ministack).
    pub(crate) fn api_url(&self) -> &str {
        &self.api_url
    }

    pub(crate) fn aws_port(&self) -> u16 {
        self.ports.aws
    }

    pub(crate) fn endpoint(&self) -> String {
        self.ports.endpoint()
    }

    pub(crate) fn model_url(&self) -> String {
        self.ports.model_url()
    }

    pub(crate) fn issuer_url(&self) -> String {
        self.ports.issuer_url()
    }

    pub(crate) fn outputs_file(&self) -> &Path {
        &self.outputs_file
    }

    /// The state folder (logs, stack outputs), wiped at every start.
    pub(crate) fn state(&self) -> &Path {
        &self.state
    }

    /// Points `cmd` at this local cloud's AWS, and at nothing else.
    pub(crate) fn aws(&self, cmd: &mut Command) {
        local_aws(cmd, self.ports);
    }

    pub(super) fn output(&self, key: &str) -> Result<&str> {
        self.outputs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .with_context(|| format!("stack output {key} missing"))
    }
}
