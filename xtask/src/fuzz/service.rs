//! The local processes of a private stack (the stand-in model, `atelier-local serve`): each
//! started with its log, waited for, and stopped when dropped. The web tests use them too.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A child process stopped when dropped.
pub(crate) struct Service {
    name: &'static str,
    child: Child,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stand-in model server and the local runner (API, consumer, sweeper) of a test stack,
/// started with `env` and ready; both stopped when dropped.
pub(crate) fn start_model_and_api(
    bin_dir: &Path,
    env: &[(String, String)],
    state: &Path,
    model_port: u16,
    api_port: u16,
) -> Result<(Service, Service)> {
    let mut model = spawn(
        "stand-in model server",
        Command::new(bin_dir.join("atelier-model-server"))
            .args(["--port", &model_port.to_string()])
            .envs(env.iter().cloned()),
        &state.join("model-server.log"),
    )?;
    wait_ready(
        &mut model,
        model_port,
        "/_stand-in/calls",
        Duration::from_secs(30),
    )?;
    let mut api = spawn(
        "atelier-local serve",
        Command::new(bin_dir.join("atelier-local"))
            .arg("serve")
            .envs(env.iter().cloned()),
        &state.join("api.log"),
    )?;
    wait_ready(&mut api, api_port, "/healthz", Duration::from_secs(120))?;
    Ok((model, api))
}

pub(crate) fn spawn(name: &'static str, cmd: &mut Command, log: &Path) -> Result<Service> {
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let child = cmd
        .stdout(Stdio::from(file.try_clone()?))
        .stderr(Stdio::from(file))
        .spawn()
        .with_context(|| format!("starting {name}"))?;
    Ok(Service { name, child })
}

/// One plain HTTP/1.1 request on loopback; returns (status, body).
pub(super) fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// Waits until `GET path` answers 200, or the service exits, or `limit` passes.
pub(crate) fn wait_ready(
    service: &mut Service,
    port: u16,
    path: &str,
    limit: Duration,
) -> Result<()> {
    let start = Instant::now();
    loop {
        if let Ok((200, _)) = http(port, "GET", path, None) {
            eprintln!(
                "xtask: {} ready on 127.0.0.1:{port} in {:.1?}",
                service.name,
                start.elapsed()
            );
            return Ok(());
        }
        if let Some(status) = service.child.try_wait()? {
            bail!("{} exited with {status} before it was ready", service.name);
        }
        if start.elapsed() > limit {
            bail!(
                "{} did not answer GET {path} within {limit:?}",
                service.name
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
