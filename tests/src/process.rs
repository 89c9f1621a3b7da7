//! Real programs of the workspace run by the tests: building a binary, and running
//! `atelier-admin`.

use serde_json::Value;
use tokio::sync::OnceCell;

/// Builds a binary of the workspace with the same profile as the running tests (so the tests
/// drive the real program) and returns its path, as cargo reports it.
pub fn build_binary(package: &str, bin: &str) -> std::path::PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_owned());
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--package", package, "--bin", bin])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stderr(std::process::Stdio::inherit());
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running cargo: {e}"));
    assert!(out.status.success(), "cargo build -p {package} failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == bin)
        .find_map(|m| m["executable"].as_str().map(std::path::PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reported no `{bin}` executable"))
}

/// What one run of `atelier-admin` printed and how it exited.
pub struct AdminRun {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for AdminRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\nstdout: {}\nstderr: {}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl AdminRun {
    /// Stdout as JSON (the look-up commands print one document).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// Runs the real `atelier-admin ARGS` (built for this profile once per test binary) with
/// `env` added and no operator inherited from the shell, against the tables this process's
/// environment names.
pub async fn admin(args: &[&str], env: &[(&str, &str)]) -> AdminRun {
    static BINARY: OnceCell<std::path::PathBuf> = OnceCell::const_new();
    let binary = BINARY
        .get_or_init(|| async {
            tokio::task::spawn_blocking(|| build_binary("atelier-admin", "atelier-admin"))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .await;
    let out = tokio::process::Command::new(binary)
        .args(args)
        .env_remove("ATELIER_OPERATOR")
        .envs(env.iter().copied())
        .output()
        .await
        .unwrap_or_else(|e| panic!("running atelier-admin: {e}"));
    AdminRun {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
