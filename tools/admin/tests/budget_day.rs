//! `atelier-admin budget --day` takes only a day that exists, and says so before touching
//! anything (no configuration or AWS needed to be refused).

use std::process::Command;

fn admin(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_atelier-admin"))
        .args(args)
        .env_clear()
        .output()
        .unwrap_or_else(|e| panic!("running atelier-admin: {e}"))
}

#[test]
fn budget_day_that_is_not_a_real_date_is_refused_with_a_clear_error() {
    for (day, action) in [
        ("2026-1-5", "set-cap"),
        ("2026-02-30", "halt"),
        ("tomorrow", "show"),
        ("standing", "resume"),
    ] {
        let mut args = vec!["budget", "--day", day, action];
        if action == "set-cap" {
            args.push("5000000");
        }
        let out = admin(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{day} {action}: succeeded");
        assert!(
            stderr.contains("--day") && stderr.contains("not a day"),
            "{day} {action}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{day} {action}: printed a result");
    }
}
