//! A skip is not a pass in CI. Outside CI a check that cannot run (no `terraform`, no provider
//! mirror) prints a skipped notice and counts as skipped; with `CI=true` it fails, unless its
//! name is in `ATELIER_CI_ALLOWED_SKIPS` (comma-separated), the explicit allow-list `.ci/run`
//! passes for what a clean machine cannot install from the project's registries. The closing
//! line of `cargo xtask test` counts all three: `tests: N passed, N failed, N skipped`.

/// Whether this run is CI's (`CI=true`, as `.ci/run` is run; `1` too).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The checks that may skip under CI (`ATELIER_CI_ALLOWED_SKIPS`).
fn allowed() -> Vec<String> {
    std::env::var("ATELIER_CI_ALLOWED_SKIPS")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// What a skipped check counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Skipped,
    /// Skipped under CI although not on the allow-list: a failure.
    Failed,
}

/// The verdict on `check` skipping, for this run.
pub fn verdict(check: &str) -> Verdict {
    verdict_with(ci(), &allowed(), check)
}

fn verdict_with(ci: bool, allowed: &[String], check: &str) -> Verdict {
    if ci && !allowed.iter().any(|a| a == check) {
        Verdict::Failed
    } else {
        Verdict::Skipped
    }
}

/// Tests and checks of one run, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
}

impl Counts {
    pub fn add(&mut self, other: Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }

    /// The plain closing line every runner's results end in.
    pub fn line(&self) -> String {
        format!(
            "tests: {} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

/// `check` skipping for `why`: printed where the run's log shows it, and its verdict.
pub fn count_skip(check: &str, why: &str) -> Verdict {
    let v = verdict(check);
    match v {
        Verdict::Skipped if ci() => {
            eprintln!("xtask: SKIPPED {check} (allowed in CI by ATELIER_CI_ALLOWED_SKIPS): {why}")
        }
        Verdict::Skipped => eprintln!("xtask: SKIPPED {check}: {why}"),
        Verdict::Failed => eprintln!(
            "xtask: FAILED {check}: it would skip ({why}), and with CI=true a skip is a failure \
             unless ATELIER_CI_ALLOWED_SKIPS names it"
        ),
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_ci_a_skip_fails_unless_the_allow_list_names_it() {
        let allowed = vec!["terraform".to_owned()];
        assert_eq!(verdict_with(true, &allowed, "terraform"), Verdict::Skipped);
        assert_eq!(
            verdict_with(true, &allowed, "browser tests"),
            Verdict::Failed
        );
        assert_eq!(verdict_with(true, &[], "terraform"), Verdict::Failed);
        assert_eq!(verdict_with(false, &[], "terraform"), Verdict::Skipped);
    }

    #[test]
    fn the_closing_line_counts_skips() {
        let mut c = Counts {
            passed: 3,
            failed: 1,
            skipped: 0,
        };
        c.add(Counts {
            passed: 2,
            failed: 0,
            skipped: 2,
        });
        assert_eq!(c.line(), "tests: 5 passed, 1 failed, 2 skipped");
    }
}
