//! A wire proxy (`tools/wire-proxy`) between each deployed function and ministack: it records
//! every AWS call the function makes (for the IAM check of `infra/iam`) and, for the fault
//! harness on the deployed stack, injects the wire faults of a seeded plan.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use super::cdk::STACK;
use super::deployed::Cloud;
use super::ports::local_aws;
use super::procs::Proc;
use crate::workspace::{debug_bin, root, run};

/// The deployed functions, each behind its own proxy.
const FUNCTIONS: [&str; 3] = ["api", "consumer", "sweeper"];

/// A seeded fault plan for the proxies: `rates` as the proxy's `--rate KIND=RATE`. Each
/// function's proxy draws from `seed + its index` (api 0, consumer 1, sweeper 2), so the three
/// do not fault the same positions of the same operation.
pub(crate) struct WireFaults<'a> {
    pub(crate) seed: u64,
    pub(crate) rates: &'a [(&'a str, f64)],
}

/// Puts a recording wire proxy between each deployed function and ministack: the proxy records
/// every AWS call the function makes (action, resource) into `<dir>/cloud-<function>.jsonl`,
/// and injects `faults` when given. Each function is pointed at its own proxy by the SDK's
/// per-service endpoint variables in its configuration (`AWS_ENDPOINT_URL_DYNAMODB` …):
/// ministack sets `AWS_ENDPOINT_URL` of a function's process after the function's own
/// variables, so that one always names ministack, but the SDK takes a service's own variable
/// first. A call is attributed by the proxy it came through, whatever credentials ministack
/// gives the function. The deployer and the test keep talking to ministack directly.
/// Also leaves there the stack's outputs and the functions' names (`cloud.outputs.json`,
/// `cloud.names.json`), which the check maps the physical names back with.
/// Returns each proxy as `function=URL` (its control endpoints are under `URL/_proxy/`).
pub(crate) fn route_through_proxies(
    cloud: &mut Cloud,
    dir: &Path,
    faults: Option<&WireFaults>,
) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let mut urls = Vec::new();
    for (index, function) in (0u64..).zip(FUNCTIONS) {
        let file = dir.join(format!("cloud-{function}.jsonl"));
        let _ = std::fs::remove_file(&file);
        let mut proxy = Command::new(debug_bin("atelier-wire-proxy"));
        // It trusts the run's CA like every other client here (an https upstream).
        local_aws(&mut proxy, cloud.ports);
        proxy
            .args(["--upstream", &cloud.endpoint(), "--listen", "127.0.0.1:0"])
            .args(["--principal", function, "--record"])
            .arg(&file);
        if let Some(f) = faults {
            proxy
                .arg("--seed")
                .arg(f.seed.wrapping_add(index).to_string());
            for (kind, rate) in f.rates {
                proxy.arg("--rate").arg(format!("{kind}={rate}"));
            }
        }
        let url = start_proxy(cloud, proxy)?;
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
    run(&mut py).context("pointing the functions at their proxies")?;
    std::fs::copy(&cloud.outputs_file, dir.join("cloud.outputs.json"))?;
    Ok(urls)
}

/// Starts one proxy, kept with the cloud's processes: its URL.
fn start_proxy(cloud: &mut Cloud, mut proxy: Command) -> Result<String> {
    use std::io::BufRead;
    let mut child = proxy
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
        name: "a wire proxy",
        child,
    });
    line.split_whitespace()
        .find(|w| w.starts_with("http://"))
        .map(str::to_owned)
        .with_context(|| format!("no URL in the wire proxy's first line {line:?}"))
}

/// For [`route_through_proxies`], with botocore: each function of the template (by its CDK
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
