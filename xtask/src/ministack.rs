//! The local AWS (ministack): installed pinned into `.venv`, started on a port, stopped when
//! dropped.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::venv::venv;
use crate::workspace::run;

/// The local AWS, pinned.
const MINISTACK: &str = "ministack==1.5.33";

/// Installs ministack into the project's virtual environment (once; a marker records the pin).
pub(crate) fn ensure_ministack() -> Result<PathBuf> {
    let venv = venv();
    let bin = venv.join("bin").join("ministack");
    let marker = venv.join(".atelier-pins");
    let pins = MINISTACK.to_owned();
    if bin.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == pins) {
        return Ok(bin);
    }
    eprintln!("xtask: installing {MINISTACK} into {}", venv.display());
    if !venv.join("bin").join("python").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))
            .context("python3 -m venv (is python3 installed?)")?;
    }
    run(Command::new(venv.join("bin").join("pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        MINISTACK,
    ]))?;
    std::fs::write(&marker, pins)?;
    Ok(bin)
}

pub(crate) fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(300))
    else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!(
        "GET /_ministack/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200") || buf.starts_with("HTTP/1.0 200")
}

/// A ministack process that is stopped when dropped.
pub(crate) struct Ministack {
    child: Option<Child>,
}

impl Drop for Ministack {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub(crate) fn start_ministack(port: u16, state: &Path) -> Result<Ministack> {
    start_ministack_with(port, state, false)
}

/// ministack with IAM enforced (`AUTH=true`; the local runner's root credentials may do
/// anything): its S3 then answers browsers by the bucket's CORS rule, as S3 does, instead of
/// allowing every origin. For the browser tests and `cargo xtask dev`.
pub(crate) fn start_ministack_strict(port: u16, state: &Path) -> Result<Ministack> {
    start_ministack_with(port, state, true)
}

fn start_ministack_with(port: u16, state: &Path, auth: bool) -> Result<Ministack> {
    let bin = ensure_ministack()?;
    if healthy(port) {
        eprintln!("xtask: ministack already answering on 127.0.0.1:{port}; using it");
        return Ok(Ministack { child: None });
    }
    std::fs::create_dir_all(state)?;
    let log = std::fs::File::create(state.join("ministack.log"))?;
    let child = Command::new(bin)
        .env("AUTH", if auth { "true" } else { "false" })
        .env("TMPDIR", state)
        .env("BIND_HOST", "127.0.0.1")
        .env("GATEWAY_PORT", port.to_string())
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        .spawn()
        .context("starting ministack")?;
    let guard = Ministack { child: Some(child) };
    let start = Instant::now();
    while !healthy(port) {
        if start.elapsed() > Duration::from_secs(30) {
            bail!(
                "ministack did not become healthy on port {port} (log: {})",
                state.join("ministack.log").display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "xtask: ministack ready on 127.0.0.1:{port} in {:?}",
        start.elapsed()
    );
    Ok(guard)
}
