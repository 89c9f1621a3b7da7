//! Exit statuses, one per kind of outcome, so a script tells a refusal from a typo from an
//! outage: 0 done; 1 refused by a rule (nothing changed) or the audit found offenders; 2 bad
//! usage or configuration; 3 not found; 4 AWS failed (retry); 5 not finished yet (run again).

use std::process::ExitCode;

use atelier_shared::error::{AwsError, Error};

pub const REFUSED: u8 = 1;
pub const USAGE: u8 = 2;
pub const NOT_FOUND: u8 = 3;
pub const AWS: u8 = 4;
pub const UNFINISHED: u8 = 5;

/// An outcome that is not a usage mistake, told apart by its exit status.
#[derive(Debug, thiserror::Error)]
pub enum Outcome {
    /// A rule refused the command; nothing changed.
    #[error("refused: {0}")]
    Refused(String),
    /// The user, job or event named does not exist.
    #[error("{0}")]
    NotFound(String),
}

/// A refusal, for `Err(refused(…))?`.
pub fn refused(why: impl Into<String>) -> anyhow::Error {
    Outcome::Refused(why.into()).into()
}

/// A missing thing, for `Err(not_found(…))?`.
pub fn not_found(what: impl Into<String>) -> anyhow::Error {
    Outcome::NotFound(what.into()).into()
}

/// The status of a failed command: the first cause that names its kind; otherwise a usage
/// or configuration mistake.
pub fn code_of(error: &anyhow::Error) -> ExitCode {
    for cause in error.chain() {
        match cause.downcast_ref::<Outcome>() {
            Some(Outcome::Refused(_)) => return ExitCode::from(REFUSED),
            Some(Outcome::NotFound(_)) => return ExitCode::from(NOT_FOUND),
            None if is_aws(cause) => return ExitCode::from(AWS),
            None => {}
        }
    }
    ExitCode::from(USAGE)
}

/// AWS failed or stayed contended: the command changed nothing it reports, and a retry is safe.
fn is_aws(cause: &(dyn std::error::Error + 'static)) -> bool {
    cause.downcast_ref::<AwsError>().is_some()
        || matches!(
            cause.downcast_ref::<Error>(),
            Some(Error::Aws(_) | Error::Contention { .. })
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(e: anyhow::Error) -> ExitCode {
        code_of(&e)
    }

    #[test]
    fn each_kind_of_failure_has_its_own_status() {
        assert_eq!(status(refused("no")), ExitCode::from(1));
        assert_eq!(
            status(anyhow::anyhow!("USER is not a valid user id")),
            ExitCode::from(2)
        );
        assert_eq!(status(not_found("no job")), ExitCode::from(3));
        let aws = AwsError::new("GetItem", std::io::Error::other("timed out"));
        let wrapped = anyhow::Error::new(atelier_shared::error::Error::from(aws));
        assert_eq!(
            status(wrapped.context("reading the job")),
            ExitCode::from(4)
        );
    }
}
