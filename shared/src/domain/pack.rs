//! Credit packs: what a user can buy, from configuration (`ATELIER_CREDIT_PACKS`). A price is
//! an integer in the currency's minor unit (cents), never a float; the credits a pack grants
//! are bound to the Checkout Session when it is created, so a later change of the catalogue
//! never changes what an earlier payment bought.

use std::fmt;

use serde::Serialize;

use super::ids::Credits;

/// A pack's name: 1 to [`PackId::MAX_LEN`] characters of `a-z`, `0-9`, `-`, `_`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct PackId(String);

impl PackId {
    pub const MAX_LEN: usize = 32;

    pub fn parse(raw: &str) -> Option<PackId> {
        let ok = !raw.is_empty()
            && raw.len() <= Self::MAX_LEN
            && raw
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        ok.then(|| PackId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PackId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One pack: `credits` for `amount` minor units of `currency`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pack {
    pub id: PackId,
    pub credits: Credits,
    /// The price in the currency's minor unit (e.g. cents).
    pub amount: i64,
    /// ISO 4217, lower case (as Stripe writes it).
    pub currency: String,
    /// The App Store consumable that sells this pack, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_store_product_id: Option<String>,
    /// The Google Play one-time product that sells this pack, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub google_play_product_id: Option<String>,
}

/// The catalogue: at least one pack, names unique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packs(Vec<Pack>);

/// Why a catalogue could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    #[error("no pack given")]
    Empty,
    #[error(
        "{0:?}: expected NAME:CREDITS:AMOUNT:CURRENCY[:APP_STORE_PRODUCT_ID[:GOOGLE_PLAY_PRODUCT_ID]] (e.g. starter:50:500:usd, starter:50:500:usd:com.example.starter or starter:50:500:usd::starter_pack)"
    )]
    Shape(String),
    #[error("{0:?}: the name must be 1-32 characters of a-z, 0-9, - and _")]
    Name(String),
    #[error("{0:?}: credits must be an integer from 1 to {max}", max = Packs::MAX_CREDITS)]
    Credits(String),
    #[error("{0:?}: the amount must be an integer from {min} to {max} minor units", min = Packs::MIN_AMOUNT, max = Packs::MAX_AMOUNT)]
    Amount(String),
    #[error("{0:?}: the currency must be three letters (ISO 4217)")]
    Currency(String),
    #[error("the pack {0:?} is listed twice")]
    Duplicate(String),
    #[error("{0:?}: the App Store product id must be 1-100 characters of letters, digits, . - _")]
    ProductId(String),
    #[error("the App Store product {0:?} is listed twice")]
    DuplicateProduct(String),
    #[error(
        "{0:?}: the Google Play product id must be 1-139 characters of a-z, 0-9, . and _, starting with a letter or digit"
    )]
    GoogleProductId(String),
    #[error("the Google Play product {0:?} is listed twice")]
    DuplicateGoogleProduct(String),
}

impl Packs {
    /// What the catalogue holds when nothing is configured.
    pub const DEFAULT: &str = "starter:50:500:usd,studio:250:2000:usd";
    pub const MAX_CREDITS: i64 = 1_000_000;
    /// Stripe's smallest charge in USD is 50 cents.
    pub const MIN_AMOUNT: i64 = 50;
    pub const MAX_AMOUNT: i64 = 99_999_999;
    const MAX_PACKS: usize = 20;

    /// Parses `name:credits:amount:currency` entries separated by commas.
    pub fn parse(raw: &str) -> Result<Packs, PackError> {
        let mut packs: Vec<Pack> = Vec::new();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let pack = parse_one(entry)?;
            if packs.iter().any(|p| p.id == pack.id) {
                return Err(PackError::Duplicate(pack.id.0));
            }
            if let Some(product) = &pack.app_store_product_id
                && packs
                    .iter()
                    .any(|p| p.app_store_product_id.as_ref() == Some(product))
            {
                return Err(PackError::DuplicateProduct(product.clone()));
            }
            if let Some(product) = &pack.google_play_product_id
                && packs
                    .iter()
                    .any(|p| p.google_play_product_id.as_ref() == Some(product))
            {
                return Err(PackError::DuplicateGoogleProduct(product.clone()));
            }
            packs.push(pack);
        }
        if packs.is_empty() || packs.len() > Self::MAX_PACKS {
            return Err(PackError::Empty);
        }
        Ok(Packs(packs))
    }

    pub fn get(&self, id: &str) -> Option<&Pack> {
        self.0.iter().find(|p| p.id.as_str() == id)
    }

    /// The pack an App Store product sells.
    pub fn by_app_store_product(&self, product_id: &str) -> Option<&Pack> {
        self.0
            .iter()
            .find(|p| p.app_store_product_id.as_deref() == Some(product_id))
    }

    /// The pack a Google Play product sells.
    pub fn by_google_play_product(&self, product_id: &str) -> Option<&Pack> {
        self.0
            .iter()
            .find(|p| p.google_play_product_id.as_deref() == Some(product_id))
    }

    pub fn all(&self) -> &[Pack] {
        &self.0
    }
}

impl Default for Packs {
    fn default() -> Packs {
        // The constant is checked by a unit test; an empty catalogue is the fallback of last resort.
        Packs::parse(Packs::DEFAULT).unwrap_or(Packs(Vec::new()))
    }
}

fn parse_one(entry: &str) -> Result<Pack, PackError> {
    let parts: Vec<&str> = entry.split(':').map(str::trim).collect();
    // The App Store field may be empty only when a Google Play product follows it.
    let (name, credits, amount, currency, product, google) = match parts.as_slice() {
        [n, c, a, cur] => (n, c, a, cur, None, None),
        [n, c, a, cur, p] => (n, c, a, cur, Some(*p), None),
        [n, c, a, cur, p, g] => (n, c, a, cur, Some(*p).filter(|p| !p.is_empty()), Some(*g)),
        _ => return Err(PackError::Shape(entry.to_owned())),
    };
    let google_play_product_id = google
        .map(|g| {
            let ok = !g.is_empty()
                && g.len() <= 139
                && g.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && g.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._".contains(c));
            ok.then(|| g.to_owned())
                .ok_or_else(|| PackError::GoogleProductId(entry.to_owned()))
        })
        .transpose()?;
    let app_store_product_id = product
        .map(|p| {
            let ok = !p.is_empty()
                && p.len() <= 100
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c));
            ok.then(|| p.to_owned())
                .ok_or_else(|| PackError::ProductId(entry.to_owned()))
        })
        .transpose()?;
    let id = PackId::parse(name).ok_or_else(|| PackError::Name(entry.to_owned()))?;
    let credits = credits
        .parse::<i64>()
        .ok()
        .filter(|c| (1..=Packs::MAX_CREDITS).contains(c))
        .ok_or_else(|| PackError::Credits(entry.to_owned()))?;
    let amount = amount
        .parse::<i64>()
        .ok()
        .filter(|a| (Packs::MIN_AMOUNT..=Packs::MAX_AMOUNT).contains(a))
        .ok_or_else(|| PackError::Amount(entry.to_owned()))?;
    if currency.len() != 3 || !currency.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(PackError::Currency(entry.to_owned()));
    }
    Ok(Pack {
        id,
        credits: Credits::new(credits),
        amount,
        currency: currency.to_ascii_lowercase(),
        app_store_product_id,
        google_play_product_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_catalogue_parses_and_prices_in_minor_units() {
        let packs = Packs::default();
        assert_eq!(packs.all().len(), 2);
        let starter = packs.get("starter").unwrap_or_else(|| panic!("starter"));
        assert_eq!(starter.credits, Credits::new(50));
        assert_eq!(starter.amount, 500);
        assert_eq!(starter.currency, "usd");
        assert!(packs.get("nope").is_none());
    }

    #[test]
    fn a_pack_may_name_the_app_store_product_that_sells_it() {
        let packs =
            Packs::parse("starter:50:500:usd:com.example.credits.starter,studio:250:2000:usd")
                .unwrap_or_else(|e| panic!("{e}"));
        let starter = packs.by_app_store_product("com.example.credits.starter");
        assert_eq!(starter.map(|p| p.id.as_str()), Some("starter"));
        assert_eq!(
            packs
                .get("studio")
                .and_then(|p| p.app_store_product_id.clone()),
            None
        );
        assert!(
            packs
                .by_app_store_product("com.example.credits.studio")
                .is_none()
        );
    }

    #[test]
    fn a_pack_may_name_the_google_play_product_that_sells_it_with_or_without_an_app_store_one() {
        let packs = Packs::parse(
            "starter:50:500:usd::starter_pack,studio:250:2000:usd:com.example.studio:studio.pack",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let starter = packs.by_google_play_product("starter_pack");
        assert_eq!(starter.map(|p| p.id.as_str()), Some("starter"));
        assert_eq!(starter.and_then(|p| p.app_store_product_id.clone()), None);
        let studio = packs.by_google_play_product("studio.pack");
        assert_eq!(
            studio.and_then(|p| p.app_store_product_id.as_deref()),
            Some("com.example.studio")
        );
        assert!(packs.by_google_play_product("com.example.studio").is_none());
    }

    #[test]
    fn malformed_catalogues_are_refused_naming_the_entry() {
        for (raw, want) in [
            ("", PackError::Empty),
            ("a:1:500", PackError::Shape("a:1:500".into())),
            ("A B:1:500:usd", PackError::Name("A B:1:500:usd".into())),
            ("a:0:500:usd", PackError::Credits("a:0:500:usd".into())),
            ("a:1.5:500:usd", PackError::Credits("a:1.5:500:usd".into())),
            ("a:1:5:usd", PackError::Amount("a:1:5:usd".into())),
            ("a:1:5.00:usd", PackError::Amount("a:1:5.00:usd".into())),
            (
                "a:1:500:dollars",
                PackError::Currency("a:1:500:dollars".into()),
            ),
            ("a:1:500:usd,a:2:900:usd", PackError::Duplicate("a".into())),
            ("a:1:500:usd:", PackError::ProductId("a:1:500:usd:".into())),
            (
                "a:1:500:usd:x y",
                PackError::ProductId("a:1:500:usd:x y".into()),
            ),
            (
                "a:1:500:usd:p:q:r",
                PackError::Shape("a:1:500:usd:p:q:r".into()),
            ),
            (
                "a:1:500:usd:p:Q",
                PackError::GoogleProductId("a:1:500:usd:p:Q".into()),
            ),
            (
                "a:1:500:usd::",
                PackError::GoogleProductId("a:1:500:usd::".into()),
            ),
            (
                "a:1:500:usd::_q",
                PackError::GoogleProductId("a:1:500:usd::_q".into()),
            ),
            (
                "a:1:500:usd::q,b:2:900:usd::q",
                PackError::DuplicateGoogleProduct("q".into()),
            ),
            (
                "a:1:500:usd:p,b:2:900:usd:p",
                PackError::DuplicateProduct("p".into()),
            ),
        ] {
            assert_eq!(Packs::parse(raw), Err(want), "{raw:?}");
        }
        assert_eq!(
            Packs::parse(" big : 10 : 1000 : EUR ").map(|p| p.all()[0].currency.clone()),
            Ok("eur".to_owned())
        );
    }
}
