//! TLS for the local cloud. Under `AUTH=true` ministack evaluates the stack's TLS-only bucket
//! and queue policies (CDK `enforceSSL`, and the CDK bootstrap's asset bucket) on
//! `aws:SecureTransport`: over plain HTTP every function's S3 and SQS call, and the deploy's
//! asset upload, is refused, as AWS would refuse them (docs/local-aws.md, "IAM on the local
//! cloud"). So ministack serves HTTPS with a certificate from a CA made for each run, and every
//! client of the local cloud trusts that CA through its environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::workspace::run;

/// Where a system's public roots usually are; the bundle keeps them beside the local CA, since
/// `SSL_CERT_FILE` and `AWS_CA_BUNDLE` replace the system store rather than add to it.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// The files of one run's TLS, in `<state>/tls/`.
#[derive(Debug, Clone)]
pub(crate) struct Tls {
    dir: PathBuf,
}

impl Tls {
    pub(crate) fn at(state: &Path) -> Tls {
        Tls {
            dir: state.join("tls"),
        }
    }

    pub(crate) fn ca(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// The system's roots and the local CA, for clients that take one bundle.
    pub(crate) fn bundle(&self) -> PathBuf {
        self.dir.join("bundle.pem")
    }

    /// A CA, and ministack's certificate for `127.0.0.1` and `localhost` signed by it (the
    /// stack's queue URLs name `localhost`), with the `openssl` CLI.
    pub(crate) fn create(&self) -> Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let openssl = |flags: &str, files: &[(&str, &str)]| -> Result<()> {
            let mut cmd = Command::new("openssl");
            cmd.args(flags.split_whitespace());
            for (flag, file) in files {
                cmd.arg(flag).arg(self.dir.join(file));
            }
            run(cmd.stdout(Stdio::null()).stderr(Stdio::null()))
                .context("openssl (the local cloud's TLS needs it)")
        };
        openssl(
            "req -x509 -newkey rsa:2048 -nodes -days 7 -subj /CN=atelier-local-cloud-ca \
             -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign",
            &[("-keyout", "ca.key"), ("-out", "ca.crt")],
        )?;
        openssl(
            "req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1",
            &[("-keyout", "server.key"), ("-out", "server.csr")],
        )?;
        std::fs::write(
            self.dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
             extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n",
        )?;
        openssl(
            "x509 -req -days 7 -CAcreateserial",
            &[
                ("-in", "server.csr"),
                ("-CA", "ca.crt"),
                ("-CAkey", "ca.key"),
                ("-extfile", "server.ext"),
                ("-out", "server.crt"),
            ],
        )?;
        let ca = std::fs::read_to_string(self.ca())?;
        let system = SYSTEM_BUNDLES
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        std::fs::write(self.bundle(), format!("{system}\n{ca}"))?;
        Ok(())
    }

    /// ministack's own settings: HTTPS with this certificate.
    pub(crate) fn server_env(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("MINISTACK_SSL_CERT", self.dir.join("server.crt")),
            ("MINISTACK_SSL_KEY", self.dir.join("server.key")),
        ]
    }

    /// What makes a client trust the local CA: Rust's rustls (`rustls-native-certs`, so the
    /// SDK, reqwest and the deployed functions, which inherit ministack's environment),
    /// botocore, and Node (the CDK CLI).
    pub(crate) fn client_env(&self) -> Vec<(&'static str, String)> {
        let bundle = self.bundle().display().to_string();
        vec![
            ("SSL_CERT_FILE", bundle.clone()),
            ("AWS_CA_BUNDLE", bundle),
            ("NODE_EXTRA_CA_CERTS", self.ca().display().to_string()),
        ]
    }
}

/// One request over TLS (xtask has no TLS client of its own): `urllib` of ministack's venv.
/// Returns the status and the body.
pub(crate) fn request(
    python: &Path,
    tls: &Tls,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String)> {
    const SCRIPT: &str = r#"
import json, ssl, sys, urllib.error, urllib.request
url, method, headers, ca = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
req = urllib.request.Request(url, method=method, headers=headers)
try:
    r = urllib.request.urlopen(req, context=ssl.create_default_context(cafile=ca), timeout=30)
    status, body = r.status, r.read()
except urllib.error.HTTPError as e:
    status, body = e.code, e.read()
sys.stdout.write(f"{status}\n" + body.decode("utf-8", "replace"))
"#;
    let headers = format!(
        "{{{}}}",
        headers
            .iter()
            .map(|(k, v)| format!("{k:?}:{v:?}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let out = Command::new(python)
        .args(["-c", SCRIPT, url, method, &headers])
        .arg(tls.ca())
        .stderr(Stdio::null())
        .output()
        .context("running the venv's python")?;
    if !out.status.success() {
        bail!("{method} {url}: no answer");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let (status, body) = text.split_once('\n').unwrap_or((&text, ""));
    let status = status
        .parse()
        .with_context(|| format!("{method} {url}: no status in {text:?}"))?;
    Ok((status, body.to_owned()))
}
