//! `cargo xtask cloud`: deploy the local cloud, print where everything is, keep it running.

use std::time::Duration;

use anyhow::Result;

use super::deploy::deploy_zips;
use super::deployed::Cloud;
use super::ports::Iam;
use crate::workspace::{cargo, root, run};

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
