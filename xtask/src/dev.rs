//! The developer's own local stack on the dev ports: `cargo xtask dev`, `token`, `admin` and
//! `ministack`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use crate::local_env::local_env;
use crate::ministack::start_ministack_strict;
use crate::web;
use crate::workspace::{cargo, root};

const DEV_PORT: u16 = 4566;

pub(crate) fn dev() -> Result<ExitCode> {
    let _ministack = start_ministack_strict(DEV_PORT, &root().join(".atelier").join("ministack"))?;
    let _web = web::dev_server(&root().join(".atelier").join("vite.log"))?;
    let status = cargo()
        .current_dir(root())
        .args([
            "run",
            "--quiet",
            "--package",
            "atelier-local",
            "--",
            "serve",
        ])
        .envs(local_env(DEV_PORT, "atelier-local"))
        .envs(web::app_env(web::DEV_ORIGIN))
        .status()?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub(crate) fn token(args: &[String]) -> Result<ExitCode> {
    let status = cargo()
        .current_dir(root())
        .args([
            "run",
            "--quiet",
            "--package",
            "atelier-local",
            "--",
            "token",
        ])
        .args(args)
        .envs(local_env(DEV_PORT, "atelier-local"))
        .status()?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub(crate) fn admin(args: &[String]) -> Result<ExitCode> {
    let status = cargo()
        .current_dir(root())
        .args(["run", "--quiet", "--package", "atelier-admin", "--"])
        .args(args)
        .envs(local_env(DEV_PORT, "atelier-local"))
        .status()?;
    Ok(ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1),
    ))
}

pub(crate) fn ministack_only() -> Result<ExitCode> {
    let _ministack = start_ministack_strict(DEV_PORT, &root().join(".atelier").join("ministack"))?;
    eprintln!("xtask: ministack on http://127.0.0.1:{DEV_PORT}; Ctrl-C to stop");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
