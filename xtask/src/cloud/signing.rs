//! The local cloud's content credentials key: a signing CA made per run and the signing
//! certificate it issues (ES256, e-mail protection, as C2PA's signer profile asks), with the
//! `openssl` CLI like the run's TLS. The key's JSON goes into the stack's `SigningKey` secret
//! after the deploy, as an operator stores theirs; the CA is the e2e test's trust anchor.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::workspace::run;

const ORGANISATION: &str = "Atelier (local cloud)";

/// The signing certificate's extensions: an end-entity key for signing claims.
const SIGNER_EXTENSIONS: &str = "basicConstraints=critical,CA:FALSE\n\
    keyUsage=critical,digitalSignature\nextendedKeyUsage=emailProtection\n\
    subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n";

/// The CA's certificate: what a verifier of this run's results trusts.
pub(crate) fn anchor(state: &Path) -> PathBuf {
    state.join("signing").join("ca.crt")
}

/// Makes the CA and the signing certificate in `<state>/signing/`; returns the secret's JSON
/// (`{"certificate_chain", "private_key"}`).
pub(crate) fn create(state: &Path) -> Result<String> {
    let dir = state.join("signing");
    std::fs::create_dir_all(&dir)?;
    let openssl = |args: &[&str]| -> Result<()> {
        run(Command::new("openssl")
            .current_dir(&dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null()))
        .context("openssl (the local cloud's signing key needs it)")
    };
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    let ca = format!("/CN=Atelier local cloud signing CA/O={ORGANISATION}");
    let signer = format!("/CN=Atelier local cloud content credentials/O={ORGANISATION}");
    let args = |fixed: &str, subject: &str, rest: &str| -> Vec<String> {
        let mut v: Vec<String> = fixed.split_whitespace().map(str::to_owned).collect();
        v.extend(["-subj".to_owned(), subject.to_owned()]);
        v.extend(rest.split_whitespace().map(str::to_owned));
        v
    };
    let ca_args = args(
        &format!("req -x509 {ec} -days 7"),
        &ca,
        "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
         -keyout ca.key -out ca.crt",
    );
    openssl(&strs(&ca_args))?;
    openssl(&strs(&args(
        &format!("req {ec}"),
        &signer,
        "-keyout signer.key -out signer.csr",
    )))?;
    std::fs::write(dir.join("signer.ext"), SIGNER_EXTENSIONS)?;
    openssl(&[
        "x509",
        "-req",
        "-days",
        "7",
        "-in",
        "signer.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-extfile",
        "signer.ext",
        "-out",
        "signer.crt",
    ])?;
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).with_context(|| f.to_owned());
    let secret = serde_json::json!({
        "certificate_chain": format!("{}{}", read("signer.crt")?, read("ca.crt")?),
        "private_key": read("signer.key")?,
    });
    Ok(secret.to_string())
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}
