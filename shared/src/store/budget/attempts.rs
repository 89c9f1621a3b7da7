//! An attempt's rows: its paid calls recorded as they return, and the reads of attempts.

use crate::domain::JobId;
use crate::error::{AwsError, Error};
use crate::store::schema::{AttemptItem, CallRecord, attr};
use crate::store::{Store, from_item, names, s};

impl Store {
    /// Records a paid call's outcome and usage on its attempt as soon as the call returns, so
    /// a crash before settling leaves the real usage for the sweeper.
    pub async fn record_call(
        &self,
        job: &JobId,
        attempt: &str,
        call: &str,
        record: &CallRecord,
    ) -> Result<(), Error> {
        let value = serde_dynamo::to_attribute_value(record)
            .map_err(|e| Error::corrupt_by("serialize the call record", e))?;
        self.update_at(
            &self.names.attempts_table,
            (attr::JOB_ID, job.as_str()),
            (attr::ATTEMPT, attempt),
        )
        .update_expression("SET #calls.#call = :r")
        .condition_expression("attribute_exists(#attempt)")
        .expression_attribute_names("#calls", attr::CALLS)
        .expression_attribute_names("#call", call)
        .expression_attribute_names("#attempt", attr::ATTEMPT)
        .expression_attribute_values(":r", value)
        .send()
        .await
        .map_err(|e| AwsError::new("attempts.record_call", e))?;
        Ok(())
    }

    /// The attempts of a job.
    pub async fn attempts_of(&self, job: &JobId) -> Result<Vec<AttemptItem>, Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.attempts_table)
            .key_condition_expression("#job_id = :j")
            .expression_attribute_names("#job_id", attr::JOB_ID)
            .expression_attribute_values(":j", s(job.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("attempts.query", e))?;
        out.items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Every attempt of a day (admin checks; a scan).
    pub async fn attempts_of_day(&self, day: &str) -> Result<Vec<AttemptItem>, Error> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .ddb
                .scan()
                .table_name(&self.names.attempts_table)
                .filter_expression("#day = :d")
                .expression_attribute_names("#day", attr::DAY)
                .expression_attribute_values(":d", s(day))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| AwsError::new("attempts.scan", e))?;
            for item in page.items.unwrap_or_default() {
                out.push(from_item(item)?);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    /// One attempt, read consistently.
    pub async fn get_attempt(
        &self,
        job: &JobId,
        attempt: &str,
    ) -> Result<Option<AttemptItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.attempts_table)
            .key(attr::JOB_ID, s(job.as_str()))
            .key(attr::ATTEMPT, s(attempt))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("attempts.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// Open reservations of `day` made before `before`, oldest first (sparse index; candidates
    /// only). Returns them and how many items DynamoDB read.
    pub async fn open_attempts(
        &self,
        day: &str,
        before: &str,
        limit: i32,
    ) -> Result<(Vec<AttemptItem>, u64), Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.attempts_table)
            .index_name(crate::store::schema::index::ATTEMPTS_OPEN)
            .key_condition_expression("#open_day = :d AND #reserved_at < :before")
            .set_expression_attribute_names(Some(names(&[attr::OPEN_DAY, attr::RESERVED_AT])))
            .expression_attribute_values(":d", s(day))
            .expression_attribute_values(":before", s(before))
            .limit(limit)
            .send()
            .await
            .map_err(|e| AwsError::new("attempts.open", e))?;
        let read = u64::try_from(out.scanned_count).unwrap_or(0);
        let items = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((items, read))
    }
}
