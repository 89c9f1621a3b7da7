//! Money as integers (rule 9). [`Micros`] is what model calls cost us, in micro-dollars;
//! credits (what a user pays) are [`super::Credits`]. No float ever holds an amount.

use serde::{Deserialize, Serialize};

/// Micro-dollars (10⁻⁶ USD): model costs, estimates, the day's budget. Signed, because a
/// settlement moves the difference between a reservation and the real cost either way.
/// Arithmetic saturates at the bounds instead of wrapping: an overflowing estimate is
/// refused by the budget, never turned into a small number.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Micros(i64);

impl Micros {
    pub const ZERO: Micros = Micros(0);
    pub const MAX: Micros = Micros(i64::MAX);

    pub const fn new(micros: i64) -> Micros {
        Micros(micros)
    }

    /// An unsigned amount (a computed cost), saturating at [`Micros::MAX`].
    pub fn from_unsigned(micros: u128) -> Micros {
        Micros(i64::try_from(micros).unwrap_or(i64::MAX))
    }

    pub const fn get(self) -> i64 {
        self.0
    }

    pub fn checked_add(self, other: Micros) -> Option<Micros> {
        self.0.checked_add(other.0).map(Micros)
    }

    pub fn checked_sub(self, other: Micros) -> Option<Micros> {
        self.0.checked_sub(other.0).map(Micros)
    }

    pub fn saturating_add(self, other: Micros) -> Micros {
        Micros(self.0.saturating_add(other.0))
    }

    pub fn saturating_sub(self, other: Micros) -> Micros {
        Micros(self.0.saturating_sub(other.0))
    }
}

impl Micros {
    /// The amount in dollars, exactly (integer arithmetic), with at least two decimals:
    /// `12500000` is `"12.50"`, `1234` is `"0.001234"` (what an operator reads beside the
    /// micro-dollars).
    pub fn dollars(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let cents_and_below = format!("{:06}", abs % 1_000_000);
        let trimmed = cents_and_below.trim_end_matches('0');
        let decimals = if trimmed.len() < 2 {
            &cents_and_below[..2]
        } else {
            trimmed
        };
        format!("{sign}{}.{decimals}", abs / 1_000_000)
    }
}

impl std::fmt::Display for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::iter::Sum for Micros {
    fn sum<I: Iterator<Item = Micros>>(iter: I) -> Micros {
        iter.fold(Micros::ZERO, Micros::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_are_exact_with_at_least_two_decimals() {
        assert_eq!(Micros::new(12_500_000).dollars(), "12.50");
        assert_eq!(Micros::new(1_234).dollars(), "0.001234");
        assert_eq!(Micros::new(0).dollars(), "0.00");
        assert_eq!(Micros::new(-40_000).dollars(), "-0.04");
        assert_eq!(Micros::MAX.dollars(), "9223372036854.775807");
        assert_eq!(Micros::new(i64::MIN).dollars(), "-9223372036854.775808");
    }

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Micros::MAX.saturating_add(Micros::new(1)), Micros::MAX);
        assert_eq!(Micros::MAX.checked_add(Micros::new(1)), None);
        assert_eq!(Micros::from_unsigned(u128::MAX), Micros::MAX);
        assert_eq!(
            Micros::new(5).checked_sub(Micros::new(7)),
            Some(Micros::new(-2))
        );
    }

    #[test]
    fn arithmetic_inside_the_bounds_is_exact() {
        assert_eq!(
            Micros::new(2).checked_add(Micros::new(3)),
            Some(Micros::new(5))
        );
        assert_eq!(
            Micros::new(5).saturating_sub(Micros::new(7)),
            Micros::new(-2)
        );
        assert_eq!(
            Micros::new(i64::MIN).saturating_sub(Micros::new(1)),
            Micros::new(i64::MIN)
        );
    }

    #[test]
    fn shown_as_the_plain_number_of_micros() {
        assert_eq!(Micros::new(-1_234).to_string(), "-1234");
        assert_eq!(Micros::new(420).to_string(), "420");
    }

    #[test]
    fn stored_as_a_plain_number() {
        let v = serde_json::to_value(Micros::new(420)).expect("serializes");
        assert_eq!(v, serde_json::json!(420));
        let back: Micros = serde_json::from_value(v).expect("deserializes");
        assert_eq!(back, Micros::new(420));
    }

    #[test]
    fn a_sum_of_costs_is_their_total() {
        let total: Micros = [1, 2, 3].into_iter().map(Micros::new).sum();
        assert_eq!(total, Micros::new(6));
    }
}
