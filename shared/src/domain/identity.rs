//! What the verified token says about the caller beyond who they are: whether their e-mail
//! is verified, which decides the signup grant (free credits go to real addresses only).

/// Whether the caller's token carries a verified e-mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailStatus {
    Verified,
    Unverified,
}

impl EmailStatus {
    /// From the claim's value as API Gateway's authorizer context carries it: every claim is a
    /// string there, a JSON `true` included (Cognito's `email_verified` is a boolean in the
    /// token and `"true"` in the context); the local verifier renders it the same way. Only
    /// exactly `true` is verified; absent, `false` or anything else is not.
    pub fn from_claim(value: Option<&str>) -> EmailStatus {
        match value.map(str::trim) {
            Some("true") => EmailStatus::Verified,
            _ => EmailStatus::Unverified,
        }
    }

    pub fn is_verified(self) -> bool {
        self == EmailStatus::Verified
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_true_is_a_verified_email() {
        let cases: &[(Option<&str>, EmailStatus, &str)] = &[
            (
                Some("true"),
                EmailStatus::Verified,
                "Cognito's boolean, as the context renders it",
            ),
            (Some(" true "), EmailStatus::Verified, "padding"),
            (None, EmailStatus::Unverified, "no claim"),
            (Some("false"), EmailStatus::Unverified, "not verified"),
            (
                Some("TRUE"),
                EmailStatus::Unverified,
                "not what any issuer sends",
            ),
            (
                Some("1"),
                EmailStatus::Unverified,
                "a number is not a boolean",
            ),
            (Some(""), EmailStatus::Unverified, "empty"),
            (Some("[true]"), EmailStatus::Unverified, "a list"),
        ];
        for (value, expected, why) in cases {
            assert_eq!(EmailStatus::from_claim(*value), *expected, "{why}");
        }
    }
}
