//! `cargo xtask cloud-test`: the end-to-end test through the deployed API, with each deployed
//! function's AWS calls recorded for the IAM check.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result};

use super::cdk::{STACK, STRIPE_WEBHOOK_SECRET};
use super::command::build_host_tools;
use super::deploy::deploy_zips;
use super::deployed::Cloud;
use super::ports::{Iam, local_aws};
use super::procs::Proc;
use crate::workspace::{cargo, debug_bin, iam_calls_dir, root, run};

/// `cargo xtask cloud-test`: deploy, then the end-to-end test through the deployed API.
/// `tools_built`: the caller already ran [`build_host_tools`].
pub fn cloud_test(tools_built: bool) -> Result<()> {
    let started = Instant::now();
    if !tools_built {
        build_host_tools()?;
    }
    let mut cloud = deploy_zips(None, Iam::Enforced)?;
    let recordings = iam_calls_dir();
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
        .env("CLOUD_E2E_STATE", &cloud.state)
        .env(
            "CLOUD_E2E_SIGNING_ANCHOR",
            super::signing::anchor(&cloud.state),
        )
        .env(
            "ATELIER_C2PA_PYTHON",
            crate::official::ensure_official_c2pa()?,
        );
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
