//! Remembered readiness answers (one item kind of the budget table, see
//! [`ReadinessMemoryItem`]): a plain get and put. What is remembered, under which key and for
//! how long is decided in `services::process` (memory).

use super::schema::{ReadinessMemoryItem, attr};
use super::{Store, from_item, s, to_item};
use crate::error::{AwsError, Error};

impl Store {
    /// The answer remembered under `key`, if any.
    pub async fn get_readiness_memory(
        &self,
        key: &str,
    ) -> Result<Option<ReadinessMemoryItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(key))
            .send()
            .await
            .map_err(|e| AwsError::new("readiness_memory.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// Remembers an answer (a later answer to the same key replaces it: both are the model's
    /// answer to the same input).
    pub async fn put_readiness_memory(&self, item: &ReadinessMemoryItem) -> Result<(), Error> {
        self.ddb
            .put_item()
            .table_name(&self.names.budget_table)
            .set_item(Some(to_item(item)?))
            .send()
            .await
            .map_err(|e| AwsError::new("readiness_memory.put", e))?;
        Ok(())
    }
}
