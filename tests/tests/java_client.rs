//! The contract for app developers (issue 31): the Java client generated from the committed
//! OpenAPI document with the pinned OpenAPI Generator (`clients/java/`) compiles with the
//! machine's JDK and, driven by a small program an Android app would start from
//! (`clients/java/Smoke.java`), registers a device, reads the packs and the balance, and reads
//! a refusal as a problem with its code, against the local API over HTTP.

use std::path::{Path, PathBuf};
use std::process::Command;

use atelier_tests::{Harness, LocalApi};
use serde_json::{Value, json};

const CLIENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../clients/java");
const OPENAPI: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../functions/api/openapi.json");

/// Runs `cmd`; its standard output, or a panic with both streams.
fn output(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e} (is a JDK installed?)"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The generator's jar in its pinned venv (the jar also carries Jackson, the generated
/// client's one runtime library).
fn generator_jar() -> PathBuf {
    let python = std::env::var("ATELIER_OPENAPI_GENERATOR_PYTHON").unwrap_or_else(|_| {
        panic!("ATELIER_OPENAPI_GENERATOR_PYTHON is unset: run with `cargo xtask test`")
    });
    let find = "import pathlib, openapi_generator_cli as g; \
                print(pathlib.Path(g.__file__).parent / 'openapi-generator.jar')";
    PathBuf::from(output(Command::new(python).args(["-c", find])).trim())
}

/// Every `.java` file under `dir`.
fn java_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            java_files(&path, into);
        } else if path.extension().is_some_and(|x| x == "java") {
            into.push(path);
        }
    }
}

/// Generates the client into `work` and compiles it with `Smoke.java`; the classpath to run.
fn generate_and_compile(work: &Path) -> String {
    let jar = generator_jar();
    let (src, classes) = (work.join("client"), work.join("classes"));
    output(Command::new("java").arg("-jar").arg(&jar).args([
        "generate",
        "--generator-name",
        "java",
        "--library",
        "native",
        "--input-spec",
        OPENAPI,
        "--config",
        &format!("{CLIENTS}/config.yaml"),
        "--template-dir",
        &format!("{CLIENTS}/templates"),
        "--output",
        &src.display().to_string(),
    ]));
    let mut sources = vec![PathBuf::from(format!("{CLIENTS}/Smoke.java"))];
    java_files(&src.join("src/main"), &mut sources);
    output(
        Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(&classes)
            .arg("-cp")
            .arg(&jar)
            .args(&sources),
    );
    format!("{}:{}", classes.display(), jar.display())
}

#[tokio::test]
async fn the_generated_java_client_compiles_and_an_app_registers_a_device_through_it() {
    let h = Harness::new().await;
    let api = LocalApi::start(h.app.clone()).await;
    let user = h.funded_user(13).await;
    let token = api
        .issuer
        .token(user.as_str(), 3600)
        .unwrap_or_else(|e| panic!("{e}"));
    let work = std::env::temp_dir().join(format!("atelier-java-{}", ulid::Ulid::new()));
    let classpath = generate_and_compile(&work);

    // Asynchronously: the local API answers on this test's runtime while the program runs.
    let run = tokio::process::Command::new("java")
        .arg("-cp")
        .arg(&classpath)
        .args(["Smoke", &api.base, &token, "pixel-8"])
        .output()
        .await
        .unwrap_or_else(|e| panic!("running java: {e}"));
    assert!(
        run.status.success(),
        "Smoke: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let printed = String::from_utf8_lossy(&run.stdout);
    let _ = std::fs::remove_dir_all(&work);

    let report: Value = serde_json::from_str(printed.trim())
        .unwrap_or_else(|e| panic!("Smoke printed {printed:?}: {e}"));
    assert_eq!(report["registered"], "pixel-8");
    assert_eq!(report["devices"], json!(["pixel-8:android"]));
    assert_eq!(
        report["balance"],
        h.balance(&user).await,
        "the balance the API holds"
    );
    assert_eq!(report["refused"], "422 VALIDATION_FAILED");
    assert!(
        report["packs"].as_array().is_some_and(|p| !p.is_empty()),
        "{report}"
    );
    assert_eq!(h.device_ids(&user).await, vec!["pixel-8".to_owned()]);
}
