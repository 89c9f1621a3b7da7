//! The local cloud: the Lambda zips `cargo xtask package` makes, deployed by the CDK app in
//! `infra/` (unchanged but for parameters) to a private ministack, with the stand-in model
//! server as the model and the dev issuer as the JWT authorizer's issuer.
//!
//! - `cargo xtask cloud` — build, deploy, check, print the API URL, and keep it all running
//!   until Ctrl-C.
//! - `cargo xtask cloud-test` — the same deploy, then the end-to-end test
//!   (`tests/tests/cloud_e2e.rs`, ignored by default) through the deployed HTTP API only.
//!
//! Ports: ministack on `ATELIER_CLOUD_PORT` (4610), the stand-in model on that + 4200 (8810),
//! the dev issuer on that + 4201 (8811). State lives in `target/cloud-<port>/`, wiped at every
//! start: ministack replaces a retained table when a stack is created again, so a deploy onto
//! old state would not be a clean deploy.
//!
//! IAM is enforced ([`Iam::Enforced`], ministack's `AUTH=true`): the deployer is the account's
//! root (key `test`), and each deployed function runs with its own role's assumed-role
//! credentials, so a call its role does not allow is refused as AWS refuses it. ministack then
//! serves HTTPS ([`tls`]). The benchmark deploys with [`Iam::Off`], over plain HTTP, as before.

mod tls;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{cargo, debug_bin, ensure_ministack, healthy, root, run};
use crate::infra::ensure_node_modules;
use crate::package::{self, Arch};

/// The JWT authorizer of ministack verifies RS256 signatures with this package; without it
/// every token is refused (401). Installed beside ministack in `.venv`.
const CLOUD_PINS: &[&str] = &["cryptography==46.0.3", "cffi==2.0.0", "pycparser==2.23"];
const DEFAULT_PORT: u16 = 4610;
const REGION: &str = "us-east-1";
const ACCOUNT: &str = "000000000000";
/// The dev issuer's audience (`atelier_local::AUDIENCE`).
const AUDIENCE: &str = "atelier";
/// `Atelier-<stage>` with the default stage, as a real first deploy names it.
pub(crate) const STACK: &str = "Atelier-dev";
/// What the consumer reads from the provider-key secret; the stand-in ignores it.
const DUMMY_KEY: &str = "sk-local-cloud-dummy-key";
/// The Stripe keys the API reads at cold start: the webhook's signing secret is real (the
/// end-to-end test signs events with it); the secret key reaches no Stripe from here.
const STRIPE_KEYS: &str =
    r#"{"secret_key": "sk_test_local_cloud", "webhook_secret": "whsec_local_cloud_e2e"}"#;
pub const STRIPE_WEBHOOK_SECRET: &str = "whsec_local_cloud_e2e";

/// Whether ministack evaluates IAM (`AUTH=true`, then over TLS) or lets every call through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Iam {
    Enforced,
    Off,
}

/// The ports of one local cloud.
#[derive(Debug, Clone, Copy)]
struct Ports {
    aws: u16,
    model: u16,
    issuer: u16,
    iam: Iam,
}

impl Ports {
    fn from_env(iam: Iam) -> Result<Ports> {
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

    fn endpoint(self) -> String {
        let scheme = match self.iam {
            Iam::Enforced => "https",
            Iam::Off => "http",
        };
        format!("{scheme}://127.0.0.1:{}", self.aws)
    }

    /// The state folder, wiped at every start.
    fn state(self) -> PathBuf {
        root().join("target").join(format!("cloud-{}", self.aws))
    }

    fn tls(self) -> Option<tls::Tls> {
        (self.iam == Iam::Enforced).then(|| tls::Tls::at(&self.state()))
    }

    fn model_url(self) -> String {
        format!("http://127.0.0.1:{}", self.model)
    }

    fn issuer_url(self) -> String {
        format!("http://127.0.0.1:{}/dev-issuer", self.issuer)
    }
}

/// A process of the local cloud, stopped when dropped.
struct Proc {
    name: &'static str,
    child: Child,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let pid = self.child.id();
        // ministack runs each function as a child process of its own (warm workers): collect
        // them first, because once ministack is gone they are reparented and out of reach.
        let descendants = descendants(pid);
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        for d in descendants {
            let _ = Command::new("kill")
                .args(["-KILL", &d.to_string()])
                .stderr(Stdio::null())
                .status();
        }
        eprintln!("xtask: cloud: stopped {} (pid {pid})", self.name);
    }
}

/// Every process below `pid`, from `/proc` (Linux; elsewhere none are found).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parent_of.push((child, ppid));
            }
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// A deployed local cloud; dropping it stops every process.
pub struct Cloud {
    ports: Ports,
    state: PathBuf,
    api_url: String,
    outputs_file: PathBuf,
    outputs: Vec<(String, String)>,
    deploy_time: Duration,
    procs: Vec<Proc>,
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

    fn output(&self, key: &str) -> Result<&str> {
        self.outputs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .with_context(|| format!("stack output {key} missing"))
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
fn local_aws(cmd: &mut Command, ports: Ports) {
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
    }
    cmd.envs(aws_env(ports))
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
}

/// `cargo xtask cloud`: deploy and keep running.
pub fn cloud() -> Result<std::process::ExitCode> {
    build_host_tools()?;
    let cloud = deploy_zips(None, Iam::Enforced)?;
    print_summary(&cloud)?;
    eprintln!("xtask: cloud: running; Ctrl-C stops ministack, the stand-in and the issuer");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// The debug binaries the local cloud runs beside ministack (stand-in, issuer, admin), with
/// the same build `cargo xtask test` makes, so neither compiles the other's work again.
pub fn build_host_tools() -> Result<()> {
    run(cargo()
        .current_dir(root())
        .args(["build", "--workspace", "--all-targets"]))
}

/// `cargo xtask cloud-test`: deploy, then the end-to-end test through the deployed API.
/// `tools_built`: the caller already ran [`build_host_tools`].
pub fn cloud_test(tools_built: bool) -> Result<()> {
    let started = Instant::now();
    if !tools_built {
        build_host_tools()?;
    }
    let mut cloud = deploy_zips(None, Iam::Enforced)?;
    let recordings = crate::iam_calls_dir();
    record_function_calls(&mut cloud, &recordings)?;
    let test_started = Instant::now();
    let mut cmd = cargo();
    cmd.current_dir(root())
        .args(["test", "--workspace", "--test", "cloud_e2e", "--"])
        .args(["--ignored", "--nocapture", "--test-threads=1"]);
    local_aws(&mut cmd, cloud.ports);
    cmd.env("CLOUD_E2E_API_URL", &cloud.api_url)
        .env("CLOUD_E2E_ISSUER_URL", cloud.ports.issuer_url())
        .env("CLOUD_E2E_STAND_IN_URL", cloud.ports.model_url())
        .env("CLOUD_E2E_OUTPUTS", &cloud.outputs_file)
        .env("CLOUD_E2E_STACK", STACK)
        .env("CLOUD_E2E_ADMIN_BIN", debug_bin("atelier-admin"))
        .env("CLOUD_E2E_STRIPE_WEBHOOK_SECRET", STRIPE_WEBHOOK_SECRET)
        .env("CLOUD_E2E_STATE", &cloud.state);
    let result = run(&mut cmd).context("the end-to-end test against the local cloud failed");
    let test_time = test_started.elapsed();
    eprintln!(
        "xtask: cloud-test: deploy {:.1} s, end-to-end test {:.1} s, total {:.1} s (logs in {})",
        cloud.deploy_time.as_secs_f64(),
        test_time.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        cloud.state.display()
    );
    if result.is_err() {
        eprintln!(
            "xtask: cloud-test: function output is in {}",
            cloud.state.join("ministack.log").display()
        );
    }
    drop(cloud);
    result
}

/// Puts a recording wire proxy (`tools/wire-proxy`) between each deployed function and
/// ministack, for the IAM check of `infra/iam`: the proxy records every AWS call the function
/// makes (action, resource) into `<dir>/cloud-<function>.jsonl`. Each function is pointed at its
/// own proxy by the SDK's per-service endpoint variables in its configuration
/// (`AWS_ENDPOINT_URL_DYNAMODB` …): ministack sets `AWS_ENDPOINT_URL` of a function's process
/// after the function's own variables, so that one always names ministack, but the SDK takes a
/// service's own variable first. A call is attributed by the proxy it came through, whatever
/// credentials ministack gives the function. The deployer and the test keep talking to
/// ministack directly.
/// Also leaves there the stack's outputs and the functions' names (`cloud.outputs.json`,
/// `cloud.names.json`), which the check maps the physical names back with.
fn record_function_calls(cloud: &mut Cloud, dir: &Path) -> Result<()> {
    use std::io::BufRead;
    std::fs::create_dir_all(dir)?;
    let mut urls = Vec::new();
    for function in ["api", "consumer", "sweeper"] {
        let file = dir.join(format!("cloud-{function}.jsonl"));
        let _ = std::fs::remove_file(&file);
        let mut proxy = Command::new(debug_bin("atelier-wire-proxy"));
        // It trusts the run's CA like every other client here (an https upstream).
        local_aws(&mut proxy, cloud.ports);
        let mut child = proxy
            .args(["--upstream", &cloud.endpoint(), "--listen", "127.0.0.1:0"])
            .args(["--principal", function, "--record"])
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting atelier-wire-proxy (built by `cargo build --workspace`)")?;
        // The first line names the URL: `wire proxy on http://127.0.0.1:PORT -> …`; the rest
        // is drained so the proxy never writes into a closed pipe.
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let mut out = std::io::BufReader::new(out);
            out.read_line(&mut line)?;
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        }
        cloud.procs.push(Proc {
            name: "a recording wire proxy",
            child,
        });
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .with_context(|| format!("no URL in the wire proxy's first line {line:?}"))?;
        urls.push(format!("{function}={url}"));
    }
    let template = cloud
        .state
        .join("cdk.out")
        .join(format!("{STACK}.template.json"));
    let mut py = Command::new(root().join(".venv").join("bin").join("python"));
    py.args(["-c", POINT_AT_PROXIES, &cloud.endpoint(), STACK])
        .arg(&template)
        .arg(dir.join("cloud.names.json"))
        .args(&urls);
    local_aws(&mut py, cloud.ports);
    run(&mut py).context("pointing the functions at their recording proxies")?;
    std::fs::copy(&cloud.outputs_file, dir.join("cloud.outputs.json"))?;
    Ok(())
}

/// For [`record_function_calls`], with botocore: each function of the template (by its CDK
/// path, `…/Api/Resource`) gets its proxy as the endpoint of every service the functions call
/// (`AWS_ENDPOINT_URL_<SERVICE>`, the SDK's names); writes `{"lambda": {physical name: function}}`.
const POINT_AT_PROXIES: &str = r#"
import json, sys, time, botocore.session
endpoint, stack, template, names_file = sys.argv[1:5]
proxies = dict(a.split("=", 1) for a in sys.argv[5:])
SERVICES = ("DYNAMODB", "SQS", "S3", "SECRETS_MANAGER", "LAMBDA")
session = botocore.session.get_session()
client = lambda name: session.create_client(name, endpoint_url=endpoint, region_name="us-east-1")
cfn, lam = client("cloudformation"), client("lambda")
resources = json.load(open(template))["Resources"]
names = {}
for logical, r in resources.items():
    path = (r.get("Metadata") or {}).get("aws:cdk:path", "")
    function = path.rsplit("/", 2)[-2].lower() if path.endswith("/Resource") and "/" in path else ""
    if r["Type"] != "AWS::Lambda::Function" or function not in proxies:
        continue
    name = cfn.describe_stack_resource(StackName=stack, LogicalResourceId=logical)["StackResourceDetail"]["PhysicalResourceId"]
    env = lam.get_function_configuration(FunctionName=name).get("Environment", {}).get("Variables", {})
    # AWS_ENDPOINT_URL itself is overwritten by ministack when it starts the process.
    env.update({f"AWS_ENDPOINT_URL_{s}": proxies[function] for s in SERVICES})
    lam.update_function_configuration(FunctionName=name, Environment={"Variables": env})
    for _ in range(100):
        if lam.get_function_configuration(FunctionName=name).get("LastUpdateStatus", "Successful") == "Successful":
            break
        time.sleep(0.1)
    names[name] = function
missing = set(proxies) - set(names.values())
assert not missing, f"no function in {template} for {sorted(missing)}"
json.dump({"lambda": names}, open(names_file, "w"))
print(f"xtask: cloud: functions recorded through their proxies: {names}", file=sys.stderr)
"#;

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

/// ministack. A function gets AWS_ENDPOINT_URL only when ministack's own process has it;
/// the rest of its environment is inherited by the functions too, so it is built clean.
fn start_cloud_ministack(ports: Ports, venv: &Path, state: &Path) -> Result<Proc> {
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

fn start_model(ports: Ports, state: &Path) -> Result<Proc> {
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

fn start_issuer(ports: Ports, state: &Path) -> Result<Proc> {
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

/// The CDK app, unchanged: only parameters (as a real deploy with its own issuer passes
/// them) and the zips' folder. Returns the stack outputs' file.
fn cdk_deploy(ports: Ports, state: &Path, dist: &Path) -> Result<PathBuf> {
    let infra = root().join("infra");
    let cdk_out = state.join("cdk.out");
    let cdk_log = state.join("cdk.log");
    let cdk = |args: &[&str]| -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&cdk_log)?;
        let mut cmd = Command::new(infra.join("node_modules").join(".bin").join("cdk"));
        cmd.current_dir(&infra)
            .env("CDK_DISABLE_VERSION_CHECK", "1")
            .env("CDK_DISABLE_CLI_TELEMETRY", "true")
            .args(args)
            // `bootstrap` synthesizes the app too, so every call names the zips.
            .arg("--context")
            .arg(format!("atelier:distDir={}", dist.display()))
            // ministack has no CloudFront: the web app is served by `cargo xtask dev` instead.
            .args(["--context", "atelier:site=false"])
            .args(["--no-notices", "--no-version-reporting", "--output"])
            .arg(&cdk_out)
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log));
        local_aws(&mut cmd, ports);
        run(&mut cmd).with_context(|| {
            format!(
                "cdk {} failed; its output:\n{}",
                args.first().copied().unwrap_or_default(),
                tail(&cdk_log, 40)
            )
        })
    };
    eprintln!("xtask: cloud: cdk bootstrap + deploy of {STACK} to ministack");
    cdk(&["bootstrap", &format!("aws://{ACCOUNT}/{REGION}")])?;
    let outputs_file = state.join("outputs.json");
    let issuer = format!("JwtIssuer={}", ports.issuer_url());
    let audience = format!("JwtAudience={AUDIENCE}");
    let model = format!("ModelBaseUrl={}", ports.model_url());
    let outputs_arg = outputs_file.display().to_string();
    cdk(&[
        "deploy",
        STACK,
        "--require-approval",
        "never",
        "--parameters",
        &issuer,
        "--parameters",
        &audience,
        "--parameters",
        &model,
        "--outputs-file",
        &outputs_arg,
    ])?;
    Ok(outputs_file)
}

/// The provider key, as a real deploy sets it after the first deploy (infra/README.md),
/// and the one ministack gap that needs a hand after deploying (see AFTER_DEPLOY).
fn after_deploy(cloud: &Cloud, venv: &Path) -> Result<()> {
    let secret = cloud.output("ProviderKeySecretArn")?.to_owned();
    let stripe = cloud.output("StripeKeysSecretArn")?.to_owned();
    let mut py = Command::new(venv.join("bin").join("python"));
    py.args([
        "-c",
        AFTER_DEPLOY,
        &cloud.ports.endpoint(),
        &secret,
        DUMMY_KEY,
        &stripe,
        STRIPE_KEYS,
    ]);
    local_aws(&mut py, cloud.ports);
    run(&mut py).context("after the deploy: provider key, event source")
}

/// After the deploy, with botocore (ministack's own dependency, so nothing more to install):
///
/// 1. `put-secret-value` of the dummy provider key and of the Stripe keys, read back (before
///    the API's first cold start, which reads the Stripe keys).
/// 2. Measured ministack gap: a CloudFormation parameter reaches the event source mapping's
///    `ScalingConfig.MaximumConcurrency` as a string (here `ConsumerMaxConcurrency`), and
///    ministack's SQS poller then fails on every pass (`'>=' not supported between instances
///    of 'int' and 'str'`): no message is ever delivered. The same value is set again, as an
///    integer, through the Lambda API (what `aws lambda update-event-source-mapping` does).
/// 3. Measured ministack gap: a secret's `Ref` is its name, where AWS gives its ARN, so a
///    policy granting `secretsmanager:GetSecretValue` on `{"Ref": secret}` names no ARN and,
///    with IAM enforced, refuses the function its own secret. Each role policy's `Resource`
///    that is a secret's name is set to that secret's ARN, what the same template gets in AWS.
const AFTER_DEPLOY: &str = r#"
import json, sys, botocore.session
endpoint = sys.argv[1]
session = botocore.session.get_session()
client = lambda name: session.create_client(name, endpoint_url=endpoint, region_name="us-east-1")
sm = client("secretsmanager")
for secret, value in (sys.argv[2:4], sys.argv[4:6]):
    sm.put_secret_value(SecretId=secret, SecretString=value)
    assert sm.get_secret_value(SecretId=secret)["SecretString"] == value, "secret not stored"
lam = client("lambda")
for m in lam.list_event_source_mappings()["EventSourceMappings"]:
    # botocore reads the stored "2" back as 2, so the type cannot be checked from here.
    limit = (m.get("ScalingConfig") or {}).get("MaximumConcurrency")
    if limit is not None:
        lam.update_event_source_mapping(UUID=m["UUID"], ScalingConfig={"MaximumConcurrency": int(limit)})
        print(f"xtask: cloud: event source {m['UUID']}: MaximumConcurrency set again, {int(limit)}", file=sys.stderr)
arns = {s["Name"]: s["ARN"] for s in sm.list_secrets()["SecretList"]}
iam = client("iam")
for role in iam.list_roles()["Roles"]:
    name = role["RoleName"]
    for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        doc = iam.get_role_policy(RoleName=name, PolicyName=policy)["PolicyDocument"]
        doc = json.loads(doc) if isinstance(doc, str) else doc
        statements = doc["Statement"] if isinstance(doc["Statement"], list) else [doc["Statement"]]
        changed = False
        for st in statements:
            listed = st.get("Resource")
            many = isinstance(listed, list)
            fixed = [arns.get(r, r) for r in (listed if many else [listed])]
            if fixed != (listed if many else [listed]):
                st["Resource"], changed = (fixed if many else fixed[0]), True
        if changed:
            iam.put_role_policy(RoleName=name, PolicyName=policy, PolicyDocument=json.dumps(doc))
            print(f"xtask: cloud: {name}/{policy}: a secret's name set to its ARN", file=sys.stderr)
"#;

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

fn print_summary(cloud: &Cloud) -> Result<()> {
    let p = cloud.ports;
    eprintln!("xtask: cloud: ready");
    eprintln!("  API           {}", cloud.api_url);
    eprintln!(
        "  token         curl -s -X POST {}/token -H 'content-type: application/json' -d '{{\"user\":\"alice\"}}'",
        p.issuer_url()
    );
    eprintln!(
        "  model         {} (stand-in; counters at /_stand-in/calls)",
        p.model_url()
    );
    eprintln!("  AWS           {} (ministack)", p.endpoint());
    if let Some(tls) = p.tls() {
        eprintln!(
            "  TLS, IAM      IAM enforced; trust {} (curl --cacert, SSL_CERT_FILE)",
            tls.ca().display()
        );
    }
    eprintln!("  queue         {}", cloud.output("QueueUrl")?);
    for (k, v) in &cloud.outputs {
        if k.ends_with("TableName") {
            eprintln!("  {k:<13} {v}");
        }
    }
    eprintln!("  state, logs   {}", cloud.state.display());
    // The one line on stdout, for scripts: API=$(cargo xtask cloud | head -1) …
    println!("{}", cloud.api_url);
    Ok(())
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

/// The last `lines` lines of a log file.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

// ---------------------------------------------------------------------------------------------
// Minimal HTTP and JSON (std only, for a few local checks; the end-to-end test has real
// clients).

fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String)> {
    http_with(port, method, path, body, &[])
}

/// A request to ministack itself, over TLS when IAM is enforced.
fn aws_http(
    ports: Ports,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String)> {
    match ports.tls() {
        None => http_with(ports.aws, method, path, None, headers),
        Some(tls) => tls::request(
            &root().join(".venv").join("bin").join("python"),
            &tls,
            method,
            &format!("{}{path}", ports.endpoint()),
            headers,
        ),
    }
}

fn http_with(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2))
        .with_context(|| format!("connecting to 127.0.0.1:{port}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("no HTTP status from 127.0.0.1:{port}{path}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// The JSON string literals of `text`, in order, unescaped (enough for the flat documents
/// read here: the stack outputs, a token reply).
fn json_strings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut s = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some(other) => s.push(other),
                    None => break,
                },
                c => s.push(c),
            }
        }
        out.push(s);
    }
    out
}

fn json_string_field(text: &str, field: &str) -> Option<String> {
    let strings = json_strings(text);
    strings
        .iter()
        .position(|s| s == field)
        .and_then(|i| strings.get(i + 1).cloned())
}

/// `cdk deploy --outputs-file`: `{"<stack>": {"Key": "value", …}}`, every value a string.
fn parse_outputs(text: &str) -> Vec<(String, String)> {
    let strings = json_strings(text);
    strings
        .get(1..)
        .unwrap_or_default()
        .chunks_exact(2)
        .map(|kv| (kv[0].clone(), kv[1].clone()))
        .collect()
}

/// The API id in the `ApiUrl` output (`https://<id>.execute-api.<region>.<suffix>/`).
fn api_id(api_url: &str) -> Option<String> {
    let host = api_url.split_once("://")?.1;
    let (id, rest) = host.split_once('.')?;
    (rest.starts_with("execute-api.") && !id.is_empty()).then(|| id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_outputs_are_read_as_pairs() {
        let text = r#"{
  "Atelier-dev": {
    "ApiUrl": "https://ab12cd.execute-api.us-east-1.amazonaws.com/",
    "QueueUrl": "http://127.0.0.1:4610/000000000000/Atelier-dev-JobsQueue"
  }
}"#;
        let out = parse_outputs(text);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].0, "ApiUrl");
        assert_eq!(
            api_id(&out[0].1).as_deref(),
            Some("ab12cd"),
            "the API id is the host's first label"
        );
        assert_eq!(api_id("http://127.0.0.1:4610/"), None);
    }

    #[test]
    fn json_strings_are_unescaped() {
        assert_eq!(
            json_string_field(r#"{"token":"a\"b","expires_in":3600}"#, "token").as_deref(),
            Some("a\"b")
        );
    }
}
