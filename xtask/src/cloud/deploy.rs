//! Deploying a local cloud: the zips, the tools beside ministack, the processes, the stack,
//! and the check that the deployed API answers for real.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::cdk::{after_deploy, cdk_deploy};
use super::deployed::Cloud;
use super::http::{api_id, aws_http, http, json_string_field, parse_outputs};
use super::ports::{Iam, Ports};
use super::services::{start_cloud_ministack, start_issuer, start_model};
use crate::infra::ensure_node_modules;
use crate::ministack::ensure_ministack;
use crate::package::{self, Arch};
use crate::workspace::{root, run};

/// The JWT authorizer of ministack verifies RS256 signatures with this package; without it
/// every token is refused (401). Installed beside ministack in `.venv`.
const CLOUD_PINS: &[&str] = &["cryptography==46.0.3", "cffi==2.0.0", "pycparser==2.23"];

/// Builds the zips (`prebuilt: None`) or takes them from a folder of
/// `<function>/bootstrap.zip` as `cargo xtask package` left them (the benchmark measures
/// those), starts ministack, the stand-in model and the dev issuer, deploys the stack, stores
/// the dummy provider key, and checks that the deployed API answers for real.
pub(crate) fn deploy_zips(prebuilt: Option<PathBuf>, iam: Iam) -> Result<Cloud> {
    let ports = Ports::from_env(iam)?;
    ensure_ports_free(ports)?;
    let dist = release_zips(prebuilt)?;
    let venv = root().join(".venv");
    ensure_ministack()?;
    ensure_cloud_pins(&venv)?;
    ensure_node_modules(&root().join("infra"))?;

    let state = ports.state();
    if state.exists() {
        std::fs::remove_dir_all(&state)
            .with_context(|| format!("removing the old state {}", state.display()))?;
    }
    std::fs::create_dir_all(&state)?;
    if let Some(tls) = ports.tls() {
        tls.create()?;
    }
    let procs = vec![
        start_cloud_ministack(ports, &venv, &state)?,
        start_model(ports, &state)?,
        start_issuer(ports, &state)?,
    ];

    let deploy_started = Instant::now();
    let outputs_file = cdk_deploy(ports, &state, &dist)?;
    let deploy_time = deploy_started.elapsed();

    let outputs = parse_outputs(
        &std::fs::read_to_string(&outputs_file)
            .with_context(|| format!("reading the stack outputs {}", outputs_file.display()))?,
    );
    let api_url_output = outputs
        .iter()
        .find(|(k, _)| k == "ApiUrl")
        .map(|(_, v)| v.clone())
        .context("the stack has no ApiUrl output")?;
    let api_id = api_id(&api_url_output)
        .with_context(|| format!("no API id in the ApiUrl output {api_url_output:?}"))?;
    let api_url = format!("{}/_aws/execute-api/{api_id}", ports.endpoint());
    let cloud = Cloud {
        ports,
        state,
        api_url,
        outputs_file,
        outputs,
        deploy_time,
        procs,
    };
    after_deploy(&cloud, &venv)?;
    check_deployed(&cloud)?;
    eprintln!(
        "xtask: cloud: deployed in {:.1} s",
        cloud.deploy_time.as_secs_f64()
    );
    Ok(cloud)
}

/// Fails, naming the variable to change, when a port the local cloud needs is taken.
fn ensure_ports_free(ports: Ports) -> Result<()> {
    for (what, port) in [
        ("ministack", ports.aws),
        ("the stand-in model", ports.model),
        ("the dev issuer", ports.issuer),
    ] {
        if TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(300))
            .is_ok()
        {
            bail!(
                "port {port} (for {what}) is in use: another local cloud? Stop it, or pick other \
                 ports with ATELIER_CLOUD_PORT (the model and issuer use +4200 and +4201)"
            );
        }
    }
    Ok(())
}

/// The release artifacts' folder, exactly as `cargo xtask package` makes them.
fn release_zips(prebuilt: Option<PathBuf>) -> Result<PathBuf> {
    match prebuilt {
        Some(dist) => Ok(dist),
        None => package::build(Arch::X86_64)?
            .first()
            .and_then(|z| z.parent())
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .context("no zips were built"),
    }
}

/// The deployed functions answer with their own code, and the authorizer verifies the dev
/// issuer's tokens. ministack answers "Mock response - no code deployed" with a 200 when a
/// code asset is missing, so a status alone proves nothing.
fn check_deployed(cloud: &Cloud) -> Result<()> {
    let path = |p: &str| {
        let prefix = cloud.api_url.trim_start_matches(&cloud.ports.endpoint());
        format!("{prefix}{p}")
    };
    let (status, body) = aws_http(cloud.ports, "GET", &path("/healthz"), &[])?;
    if status != 200 || !body.contains("\"status\":\"ok\"") {
        bail!("GET /healthz on the deployed API: {status} {body:?} (not the API function)");
    }
    let (status, _) = aws_http(cloud.ports, "GET", &path("/v1/account"), &[])?;
    if status != 401 {
        bail!("GET /v1/account without a token answered {status}, not 401");
    }
    let (status, body) = http(
        cloud.ports.issuer,
        "POST",
        "/dev-issuer/token",
        Some(r#"{"user":"cloud-smoke"}"#),
    )?;
    let token = json_string_field(&body, "token")
        .with_context(|| format!("dev issuer token: {status} {body:?}"))?;
    let (status, body) = aws_http(
        cloud.ports,
        "GET",
        &path("/v1/account"),
        &[("authorization", &format!("Bearer {token}"))],
    )?;
    if status != 200 || !body.contains("\"user_id\":\"cloud-smoke\"") {
        bail!(
            "GET /v1/account with a dev token: {status} {body:?} (is `cryptography` installed \
             beside ministack? the JWT authorizer refuses every token without it)"
        );
    }
    Ok(())
}

/// Installs `cryptography` (pinned) beside ministack; a marker records the pins.
fn ensure_cloud_pins(venv: &Path) -> Result<()> {
    let marker = venv.join(".atelier-cloud-pins");
    let wanted = CLOUD_PINS.join("\n");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return Ok(());
    }
    eprintln!(
        "xtask: installing {} into {}",
        CLOUD_PINS.join(" "),
        venv.display()
    );
    run(Command::new(venv.join("bin").join("pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(CLOUD_PINS))?;
    std::fs::write(&marker, wanted)?;
    Ok(())
}
