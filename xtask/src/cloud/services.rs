//! The processes a local cloud runs beside its stack: ministack, the stand-in model and the
//! dev issuer, each started and waited for.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::http::{aws_http, http};
use super::ports::{Ports, local_aws};
use super::procs::Proc;
use crate::ministack::healthy;
use crate::workspace::debug_bin;

/// ministack. A function gets AWS_ENDPOINT_URL only when ministack's own process has it;
/// the rest of its environment is inherited by the functions too, so it is built clean.
pub(super) fn start_cloud_ministack(ports: Ports, venv: &Path, state: &Path) -> Result<Proc> {
    let log = std::fs::File::create(state.join("ministack.log"))?;
    let mut cmd = Command::new(venv.join("bin").join("ministack"));
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("ATELIER_")) {
            cmd.env_remove(k);
        }
    }
    local_aws(&mut cmd, ports);
    cmd.env("TMPDIR", state)
        .env("BIND_HOST", "127.0.0.1")
        .env("GATEWAY_PORT", ports.aws.to_string())
        // With `cryptography` installed ministack would also open an IoT MQTT/TLS listener on
        // 8883 and an SFTP server: neither is used, and a second local cloud would fight over them.
        .env("IOT_MTLS_ENABLED", "0")
        .env("SFTP_ENABLED", "0")
        // The functions inherit this environment: webhook receivers of a local run listen on
        // the loopback, which a deployment refuses by default (docs/webhooks.md).
        .env("ATELIER_WEBHOOK_PRIVATE_ADDRESSES", "allow")
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log));
    if let Some(tls) = ports.tls() {
        // Under TLS ministack also listens on 443 when it can bind it; nothing here uses that.
        cmd.env("AUTH", "true")
            .env("USE_SSL", "1")
            .envs(tls.server_env());
    }
    let proc = Proc {
        name: "ministack",
        child: cmd.spawn().context("starting ministack")?,
    };
    wait_for("ministack", Duration::from_secs(30), || match ports.tls() {
        None => healthy(ports.aws),
        Some(_) => aws_http(ports, "GET", "/_ministack/health", &[]).is_ok_and(|(s, _)| s == 200),
    })?;
    Ok(proc)
}

pub(super) fn start_model(ports: Ports, state: &Path) -> Result<Proc> {
    let log = std::fs::File::create(state.join("model-server.log"))?;
    let proc = Proc {
        name: "the stand-in model",
        child: Command::new(debug_bin("atelier-model-server"))
            .args(["--port", &ports.model.to_string()])
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .context("starting atelier-model-server (built by `cargo build --workspace`)")?,
    };
    wait_for("the stand-in model", Duration::from_secs(30), || {
        http(ports.model, "GET", "/_stand-in/health", None).is_ok_and(|(s, _)| s == 200)
    })?;
    Ok(proc)
}

pub(super) fn start_issuer(ports: Ports, state: &Path) -> Result<Proc> {
    let log = std::fs::File::create(state.join("issuer.log"))?;
    let proc = Proc {
        name: "the dev issuer",
        child: Command::new(debug_bin("atelier-local"))
            .arg("issuer")
            .env("ATELIER_LOCAL_PORT", ports.issuer.to_string())
            .env("ATELIER_STATE_DIR", state.join("issuer"))
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .context("starting atelier-local issuer")?,
    };
    wait_for("the dev issuer", Duration::from_secs(60), || {
        http(
            ports.issuer,
            "GET",
            "/dev-issuer/.well-known/jwks.json",
            None,
        )
        .is_ok_and(|(s, body)| s == 200 && body.contains("\"kid\""))
    })?;
    Ok(proc)
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) -> Result<()> {
    let started = Instant::now();
    while !ready() {
        if started.elapsed() > limit {
            bail!("{what} did not become ready in {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}
