//! Creates the tables, queue and bucket from the one definition ([`crate::store::schema`]
//! and [`Resources`]) on a local stack. Idempotent: existing resources are left as they are.
//! In AWS the infrastructure code creates the same resources from the same definition.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use aws_sdk_sqs::types::QueueAttributeName;

use crate::adapters::aws::Clients;
use crate::config::Resources;
use crate::error::AwsError;
use crate::store::schema::{KeyDef, TABLES, TableDef, table_name};

fn attr_type(k: &KeyDef) -> ScalarAttributeType {
    if k.kind == "N" {
        ScalarAttributeType::N
    } else {
        ScalarAttributeType::S
    }
}

fn key_schema(pk: &KeyDef, sk: Option<&KeyDef>) -> Result<Vec<KeySchemaElement>, AwsError> {
    let mut out = vec![
        KeySchemaElement::builder()
            .attribute_name(pk.name)
            .key_type(KeyType::Hash)
            .build()
            .map_err(|e| AwsError::new("provision.key", e))?,
    ];
    if let Some(sk) = sk {
        out.push(
            KeySchemaElement::builder()
                .attribute_name(sk.name)
                .key_type(KeyType::Range)
                .build()
                .map_err(|e| AwsError::new("provision.key", e))?,
        );
    }
    Ok(out)
}

/// Creates whatever is missing: the tables, the queue with its dead-letter queue, the bucket.
pub async fn ensure(clients: &Clients, r: &Resources) -> Result<(), AwsError> {
    for def in TABLES {
        ensure_table(clients, &def, table_name(&def, r)).await?;
    }
    ensure_queues(clients, r).await?;
    ensure_bucket(clients, &r.bucket).await
}

/// Every attribute a table's keys and indexes name, once each.
fn attribute_definitions(def: &TableDef) -> Result<Vec<AttributeDefinition>, AwsError> {
    let mut attrs: Vec<&KeyDef> = vec![&def.partition_key];
    attrs.extend(def.sort_key.as_ref());
    for ix in def.indexes {
        attrs.push(&ix.partition_key);
        attrs.extend(ix.sort_key.as_ref());
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut definitions = Vec::new();
    for a in attrs {
        if seen.insert(a.name) {
            definitions.push(
                AttributeDefinition::builder()
                    .attribute_name(a.name)
                    .attribute_type(attr_type(a))
                    .build()
                    .map_err(|e| AwsError::new("provision.attr", e))?,
            );
        }
    }
    Ok(definitions)
}

/// One table from its definition; an existing one is left as it is.
async fn ensure_table(clients: &Clients, def: &TableDef, name: &str) -> Result<(), AwsError> {
    let mut req = clients
        .dynamodb
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_attribute_definitions(Some(attribute_definitions(def)?))
        .set_key_schema(Some(key_schema(&def.partition_key, def.sort_key.as_ref())?));
    for ix in def.indexes {
        req = req.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(ix.name)
                .set_key_schema(Some(key_schema(&ix.partition_key, ix.sort_key.as_ref())?))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .map_err(|e| AwsError::new("provision.gsi", e))?,
        );
    }
    match req.send().await {
        Ok(_) => tracing::info!(table = name, "table_created"),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) => {}
        Err(e) => return Err(AwsError::new("provision.create_table", e)),
    }
    Ok(())
}

/// The jobs queue and the webhook delivery queue, each with its dead-letter queue (five
/// receives, then the DLQ).
async fn ensure_queues(clients: &Clients, r: &Resources) -> Result<(), AwsError> {
    ensure_queue(clients, r.queue_name(), "360").await?;
    let hooks = r
        .webhook_queue_url
        .rsplit('/')
        .next()
        .unwrap_or(&r.webhook_queue_url);
    // Longer than one delivery batch (a 15 s POST, its records, the next message).
    ensure_queue(clients, hooks, "60").await
}

/// One queue named `name` with its dead-letter queue `<name>-dlq`.
async fn ensure_queue(clients: &Clients, name: &str, visibility: &str) -> Result<(), AwsError> {
    let dlq_name = format!("{name}-dlq");
    let dlq = clients
        .sqs
        .create_queue()
        .queue_name(&dlq_name)
        .send()
        .await
        .map_err(|e| AwsError::new("provision.create_dlq", e))?;
    let dlq_url = dlq.queue_url.unwrap_or_default();
    let dlq_arn = clients
        .sqs
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| AwsError::new("provision.dlq_arn", e))?
        .attributes
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .unwrap_or_default();
    let redrive =
        serde_json::json!({ "deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5" }).to_string();
    clients
        .sqs
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::VisibilityTimeout, visibility)
        .attributes(QueueAttributeName::RedrivePolicy, redrive)
        .send()
        .await
        .map_err(|e| AwsError::new("provision.create_queue", e))?;
    Ok(())
}

/// The assets bucket; one already ours is fine.
async fn ensure_bucket(clients: &Clients, bucket: &str) -> Result<(), AwsError> {
    match clients.s3.create_bucket().bucket(bucket).send().await {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error().is_some_and(|s| {
                s.is_bucket_already_owned_by_you() || s.is_bucket_already_exists()
            }) =>
        {
            Ok(())
        }
        Err(e) => Err(AwsError::new("provision.create_bucket", e)),
    }
}

/// The bucket's CORS rule as CDK and Terraform deploy it ([`crate::adapters::cors::BUCKET`]) for
/// `origins`; replaces whatever rule the bucket had. No origin: no rule (no page may read).
pub async fn ensure_bucket_cors(
    clients: &Clients,
    bucket: &str,
    origins: &crate::adapters::cors::Origins,
) -> Result<(), AwsError> {
    use aws_sdk_s3::types::{CorsConfiguration, CorsRule};
    let rules = crate::adapters::cors::BUCKET;
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    if origins.as_slice().is_empty() {
        return Ok(());
    }
    let rule = CorsRule::builder()
        .set_allowed_methods(Some(strings(rules.allow_methods)))
        .set_allowed_origins(Some(origins.as_slice().to_vec()))
        .set_allowed_headers(Some(strings(rules.allow_headers)))
        .set_expose_headers(Some(strings(rules.expose_headers)))
        .max_age_seconds(i32::try_from(rules.max_age_secs).unwrap_or(i32::MAX))
        .build()
        .map_err(|e| AwsError::new("provision.cors_rule", e))?;
    let config = CorsConfiguration::builder()
        .cors_rules(rule)
        .build()
        .map_err(|e| AwsError::new("provision.cors_configuration", e))?;
    clients
        .s3
        .put_bucket_cors()
        .bucket(bucket)
        .cors_configuration(config)
        .send()
        .await
        .map_err(|e| AwsError::new("provision.put_bucket_cors", e))?;
    Ok(())
}
