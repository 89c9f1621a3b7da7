//! Opaque pagination cursors: a page's `LastEvaluatedKey`, string attributes only, as
//! base64url JSON. Decoding checks the shape, that every key value is one DynamoDB accepts
//! (a key attribute cannot be an empty string) and that the cursor belongs to the caller, so
//! a forged cursor is a 400, never a DynamoDB validation error.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::Item;
use crate::error::Error;

const MAX_CURSOR_LEN: usize = 1024;

/// Encodes a `LastEvaluatedKey`.
pub fn encode(key: &Item) -> Option<String> {
    let map: BTreeMap<&str, &str> = key
        .iter()
        .filter_map(|(k, v)| v.as_s().ok().map(|s| (k.as_str(), s.as_str())))
        .collect();
    serde_json::to_vec(&map)
        .ok()
        .map(|b| URL_SAFE_NO_PAD.encode(b))
}

/// Decodes a cursor that must hold exactly `keys`, with `owner_attr` equal to `owner`.
pub fn decode(raw: &str, keys: &[&str], owner_attr: &str, owner: &str) -> Result<Item, Error> {
    if raw.len() > MAX_CURSOR_LEN {
        return Err(Error::InvalidCursor);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(raw)
        .map_err(|_| Error::InvalidCursor)?;
    let map: BTreeMap<String, String> =
        serde_json::from_slice(&bytes).map_err(|_| Error::InvalidCursor)?;
    let shape_ok = map.len() == keys.len()
        && keys.iter().all(|k| map.contains_key(*k))
        && map.values().all(|v| !v.is_empty());
    if !shape_ok || map.get(owner_attr).map(String::as_str) != Some(owner) {
        return Err(Error::InvalidCursor);
    }
    Ok(map
        .into_iter()
        .map(|(k, v)| (k, AttributeValue::S(v)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_for_its_owner_only() {
        let key: Item = [("user_id", "u1"), ("at_ref", "2026#x")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), AttributeValue::S(v.to_owned())))
            .collect();
        let c = encode(&key).unwrap_or_default();
        let back = decode(&c, &["user_id", "at_ref"], "user_id", "u1");
        assert_eq!(back.ok(), Some(key));
        assert!(
            decode(&c, &["user_id", "at_ref"], "user_id", "u2").is_err(),
            "another user's cursor"
        );
        assert!(decode("not base64!", &["user_id"], "user_id", "u1").is_err());
        assert!(
            decode(&c, &["user_id"], "user_id", "u1").is_err(),
            "wrong shape"
        );
    }

    #[test]
    fn a_cursor_with_an_empty_key_value_is_invalid() {
        let forged = URL_SAFE_NO_PAD.encode(br#"{"user_id":"u1","at_ref":""}"#);
        assert!(matches!(
            decode(&forged, &["user_id", "at_ref"], "user_id", "u1"),
            Err(Error::InvalidCursor)
        ));
    }
}
