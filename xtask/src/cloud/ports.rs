//! The ports and addresses of one local cloud, and the environment that points a client at
//! its AWS (and at nothing else).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};

use super::tls;
use crate::workspace::root;

const DEFAULT_PORT: u16 = 4610;
pub(super) const REGION: &str = "us-east-1";

/// Whether ministack evaluates IAM (`AUTH=true`, then over TLS) or lets every call through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Iam {
    Enforced,
    Off,
}

/// The ports of one local cloud.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ports {
    pub(super) aws: u16,
    pub(super) model: u16,
    pub(super) issuer: u16,
    pub(super) iam: Iam,
}

impl Ports {
    pub(super) fn from_env(iam: Iam) -> Result<Ports> {
        let aws = match std::env::var("ATELIER_CLOUD_PORT") {
            Ok(p) => p
                .parse()
                .with_context(|| format!("ATELIER_CLOUD_PORT is not a port: {p:?}"))?,
            Err(_) => DEFAULT_PORT,
        };
        let offset = |by: u16| {
            aws.checked_add(by)
                .with_context(|| format!("ATELIER_CLOUD_PORT {aws} leaves no room for +{by}"))
        };
        Ok(Ports {
            aws,
            model: offset(4200)?,
            issuer: offset(4201)?,
            iam,
        })
    }

    pub(super) fn endpoint(self) -> String {
        let scheme = match self.iam {
            Iam::Enforced => "https",
            Iam::Off => "http",
        };
        format!("{scheme}://127.0.0.1:{}", self.aws)
    }

    /// The state folder, wiped at every start.
    pub(super) fn state(self) -> PathBuf {
        root().join("target").join(format!("cloud-{}", self.aws))
    }

    pub(super) fn tls(self) -> Option<tls::Tls> {
        (self.iam == Iam::Enforced).then(|| tls::Tls::at(&self.state()))
    }

    pub(super) fn model_url(self) -> String {
        format!("http://127.0.0.1:{}", self.model)
    }

    pub(super) fn issuer_url(self) -> String {
        format!("http://127.0.0.1:{}/dev-issuer", self.issuer)
    }
}

fn aws_env(ports: Ports) -> Vec<(String, String)> {
    let endpoint = ports.endpoint();
    let trust = ports.tls().map(|t| t.client_env()).unwrap_or_default();
    [
        ("AWS_ACCESS_KEY_ID", "test".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
        ("AWS_REGION", REGION.to_owned()),
        ("AWS_DEFAULT_REGION", REGION.to_owned()),
        ("AWS_ENDPOINT_URL", endpoint.clone()),
        ("AWS_ENDPOINT_URL_S3", endpoint),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
    ]
    .into_iter()
    .chain(trust)
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Removes every inherited `AWS_*` variable (a developer's profile or real credentials must
/// never reach the local deploy) and sets the local cloud's.
pub(super) fn local_aws(cmd: &mut Command, ports: Ports) {
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
    }
    cmd.envs(aws_env(ports))
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
}
