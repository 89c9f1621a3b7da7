//! Opaque pagination cursors: a page's `LastEvaluatedKey`, string attributes only, as
//! base64url JSON. Decoding checks the shape, that every key value is one DynamoDB accepts
//! (a key attribute cannot be an empty string) and that the cursor belongs to the caller, so
//! a forged cursor is a 400, never a DynamoDB validation error.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{Item, Store, from_item, names, s};
use crate::domain::UserId;
use crate::error::{AwsError, Error};

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

/// Where one user's newest-first pages come from: an index whose partition key is the user's
/// id, the attributes its cursor holds, and the operation's name in errors.
pub(super) struct UserIndex<'a> {
    pub table: &'a str,
    pub index: &'a str,
    pub cursor_keys: &'a [&'a str],
    pub op: &'static str,
}

impl Store {
    /// One page of `user`'s items from `from`, newest first, and the cursor of the next page.
    /// A cursor that is not this user's (or not this index's) is `InvalidCursor`.
    pub(super) async fn user_page<T: serde::de::DeserializeOwned>(
        &self,
        from: UserIndex<'_>,
        user: &UserId,
        limit: u16,
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), Error> {
        let user_attr = crate::store::schema::attr::USER_ID;
        let start = cursor
            .map(|c| decode(c, from.cursor_keys, user_attr, user.as_str()))
            .transpose()?;
        let out = self
            .ddb
            .query()
            .table_name(from.table)
            .index_name(from.index)
            .key_condition_expression("#user_id = :u")
            .set_expression_attribute_names(Some(names(&[user_attr])))
            .expression_attribute_values(":u", s(user.as_str()))
            .scan_index_forward(false)
            .limit(i32::from(limit))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| AwsError::new(from.op, e))?;
        let items = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect::<Result<Vec<_>, _>>()?;
        let next = out
            .last_evaluated_key
            .filter(|k| !k.is_empty())
            .and_then(|k| encode(&k));
        Ok((items, next))
    }
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
