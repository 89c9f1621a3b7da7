//! An operator's grant of credits: the reason that names it (and so its ledger row, written
//! once) and the operator who made it.

use std::fmt;

/// Why credits were granted, normalised so that a rerun finds the same ledger row: trimmed
/// and lowercased (`Promo-1` and `promo-1` are one grant); 1 to [`GrantReason::MAX_LEN`]
/// characters of `a-z`, `0-9` and `- _ . :` (no spaces or look-alike characters, so two
/// reasons that read the same are the same reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantReason(String);

/// Why a reason or an operator name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantNameError {
    #[error("is empty")]
    Empty,
    #[error("is longer than {max} characters")]
    TooLong { max: usize },
    #[error("has the character {0:?}; only {1} are allowed")]
    Character(char, &'static str),
}

impl GrantReason {
    pub const MAX_LEN: usize = 64;
    const ALLOWED: &str = "a-z, 0-9 and - _ . :";

    pub fn parse(raw: &str) -> Result<GrantReason, GrantNameError> {
        let reason = raw.trim().to_lowercase();
        check(&reason, Self::MAX_LEN, Self::ALLOWED, |c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.:".contains(c)
        })?;
        Ok(GrantReason(reason))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GrantReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who made a grant (a login or an e-mail address), recorded on its ledger row as written
/// (trimmed): 1 to [`Operator::MAX_LEN`] letters, digits and `- _ . @ +`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator(String);

impl Operator {
    pub const MAX_LEN: usize = 64;
    const ALLOWED: &str = "letters, digits and - _ . @ +";

    pub fn parse(raw: &str) -> Result<Operator, GrantNameError> {
        let name = raw.trim();
        check(name, Self::MAX_LEN, Self::ALLOWED, |c| {
            c.is_ascii_alphanumeric() || "-_.@+".contains(c)
        })?;
        Ok(Operator(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn check(
    s: &str,
    max: usize,
    allowed: &'static str,
    ok: impl Fn(char) -> bool,
) -> Result<(), GrantNameError> {
    if s.is_empty() {
        return Err(GrantNameError::Empty);
    }
    if s.chars().count() > max {
        return Err(GrantNameError::TooLong { max });
    }
    match s.chars().find(|&c| !ok(c)) {
        Some(c) => Err(GrantNameError::Character(c, allowed)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_trimmed_and_lowercased_so_reruns_find_the_same_grant() {
        let a = GrantReason::parse("Promo-1");
        let b = GrantReason::parse("  promo-1 ");
        assert_eq!(a, b);
        assert_eq!(a.map(|r| r.to_string()), Ok("promo-1".to_owned()));
        assert!(GrantReason::parse("support:ticket_42.b").is_ok());
    }

    #[test]
    fn empty_long_or_odd_reasons_are_refused() {
        for (raw, want) in [
            ("", GrantNameError::Empty),
            ("   ", GrantNameError::Empty),
            (&"a".repeat(65), GrantNameError::TooLong { max: 64 }),
            (
                "promo 1",
                GrantNameError::Character(' ', GrantReason::ALLOWED),
            ),
            (
                "promo/1",
                GrantNameError::Character('/', GrantReason::ALLOWED),
            ),
            (
                "prоmo-1",
                GrantNameError::Character('о', GrantReason::ALLOWED),
            ),
            (
                "promo\u{200b}1",
                GrantNameError::Character('\u{200b}', GrantReason::ALLOWED),
            ),
        ] {
            assert_eq!(GrantReason::parse(raw), Err(want), "{raw:?}");
        }
        assert_eq!(
            GrantReason::parse(&"a".repeat(64)).map(|r| r.as_str().len()),
            Ok(64)
        );
    }

    #[test]
    fn operators_are_names_or_addresses() {
        assert_eq!(
            Operator::parse(" Ops.Jane+oncall@example.com ").map(|o| o.to_string()),
            Ok("Ops.Jane+oncall@example.com".to_owned())
        );
        assert_eq!(
            Operator::parse("ops-jane").map(|o| o.as_str().to_owned()),
            Ok("ops-jane".to_owned())
        );
        assert!(Operator::parse("").is_err());
        assert!(Operator::parse("jane doe").is_err());
        assert!(Operator::parse(&"j".repeat(65)).is_err());
    }
}
