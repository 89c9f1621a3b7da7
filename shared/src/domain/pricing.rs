//! The one price function. `POST /v1/quotes` shows exactly what `POST /v1/edits` charges,
//! and a repair is charged from the same function, because all call [`price`].

use serde::Serialize;

use crate::domain::edit::{EditSpec, Target};
use crate::domain::ids::{Credits, Operation};

/// Credits granted once, on the account's first authenticated call: enough for any single
/// edit, so the first edit is free whatever it is.
pub const SIGNUP_GRANT: Credits = Credits::new(6);

/// One line of a quote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct QuoteLine {
    pub item: &'static str,
    #[schema(value_type = u32)]
    pub credits: Credits,
}

/// The price of one request, itemised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Quote {
    #[schema(value_type = u32)]
    pub credits: Credits,
    pub lines: Vec<QuoteLine>,
}

/// Price of an edit.
pub fn quote(spec: &EditSpec) -> Quote {
    price(Operation::Edit, spec)
}

/// Price of an edit or of a repair of it: the target's base (a background is the largest
/// area to redraw, a brushed area usually the smallest) plus a surcharge for a style reference
/// (a third image in every model call). Strength and text do not change the price. A repair
/// costs what the edit cost: it makes the same edit call, and its comparison replaces the
/// readiness check.
pub fn price(op: Operation, spec: &EditSpec) -> Quote {
    let (item, base) = match (op, spec.target) {
        (Operation::Edit, Target::Pet) => ("edit: pet", 4),
        (Operation::Edit, Target::Person) => ("edit: person", 4),
        (Operation::Edit, Target::Background) => ("edit: background", 5),
        (Operation::Edit, Target::Brush) => ("edit: brushed area", 3),
        (Operation::Repair, Target::Pet) => ("repair: pet", 4),
        (Operation::Repair, Target::Person) => ("repair: person", 4),
        (Operation::Repair, Target::Background) => ("repair: background", 5),
        (Operation::Repair, Target::Brush) => ("repair: brushed area", 3),
    };
    let mut lines = vec![QuoteLine {
        item,
        credits: Credits::new(base),
    }];
    if spec.style_reference_asset_id.is_some() {
        lines.push(QuoteLine {
            item: "style reference",
            credits: Credits::new(1),
        });
    }
    let credits = lines.iter().map(|l| l.credits).sum();
    Quote { credits, lines }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AssetId, Strength, StyleId};
    use proptest::prelude::*;

    fn spec(target: Target, reference: bool) -> EditSpec {
        EditSpec {
            style: StyleId::Origami,
            target,
            strength: Strength::Balanced,
            original_asset_id: AssetId::generate(),
            mask_asset_id: (target == Target::Brush).then(AssetId::generate),
            style_reference_asset_id: reference.then(AssetId::generate),
            custom_style: None,
            target_description: None,
            locks: vec![],
            preview: false,
        }
    }

    #[test]
    fn prices_by_target_and_reference() {
        let cases = [
            (Target::Pet, false, 4),
            (Target::Person, false, 4),
            (Target::Background, false, 5),
            (Target::Brush, false, 3),
            (Target::Background, true, 6),
        ];
        for (target, reference, want) in cases {
            assert_eq!(
                quote(&spec(target, reference)).credits.get(),
                want,
                "{target:?} ref={reference}"
            );
        }
    }

    proptest! {
        #[test]
        fn quote_is_positive_sums_its_lines_and_the_grant_covers_it(
            t in prop_oneof![Just(Target::Pet), Just(Target::Person), Just(Target::Background), Just(Target::Brush)],
            reference in any::<bool>(),
        ) {
            let q = quote(&spec(t, reference));
            prop_assert!(q.credits.get() > 0);
            prop_assert_eq!(q.credits.get(), q.lines.iter().map(|l| l.credits.get()).sum::<i64>());
            prop_assert!(q.credits <= SIGNUP_GRANT, "first edit must be free");
        }
    }
}
