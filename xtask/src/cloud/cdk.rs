//! The CDK app's deploy to the local cloud, and what a real deploy does by hand afterwards
//! (the secrets' values, and the ministack gaps).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use super::deployed::Cloud;
use super::ports::{Ports, REGION, local_aws};
use crate::workspace::{root, run};

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

/// The CDK app, unchanged: only parameters (as a real deploy with its own issuer passes
/// them) and the zips' folder. Returns the stack outputs' file.
pub(super) fn cdk_deploy(ports: Ports, state: &Path, dist: &Path) -> Result<PathBuf> {
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
pub(super) fn after_deploy(cloud: &Cloud, venv: &Path) -> Result<()> {
    let secret = cloud.output("ProviderKeySecretArn")?.to_owned();
    let stripe = cloud.output("StripeKeysSecretArn")?.to_owned();
    let signing = cloud.output("SigningKeySecretArn")?.to_owned();
    let signing_key = super::signing::create(&cloud.state)?;
    let mut py = Command::new(venv.join("bin").join("python"));
    py.args([
        "-c",
        AFTER_DEPLOY,
        &cloud.ports.endpoint(),
        &secret,
        DUMMY_KEY,
        &stripe,
        STRIPE_KEYS,
        &signing,
        &signing_key,
    ]);
    local_aws(&mut py, cloud.ports);
    run(&mut py).context("after the deploy: provider key, event source")
}

/// After the deploy, with botocore (ministack's own dependency, so nothing more to install):
///
/// 1. `put-secret-value` of the dummy provider key, the Stripe keys and the signing key made
///    for this run, read back (before the first cold starts, which read them).
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
for secret, value in (sys.argv[2:4], sys.argv[4:6], sys.argv[6:8]):
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

/// The last `lines` lines of a log file.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
