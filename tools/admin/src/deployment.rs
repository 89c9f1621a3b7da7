//! Which deployment the admin works on. `--stack NAME` reads the CloudFormation stack's outputs
//! (the CDK app's), `--tf-output FILE` the JSON of `terraform output -json` (the module's): each
//! names the tables, the queue and the bucket, which the admin then uses in place of the
//! environment variables the functions get. Without either, the environment names them.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};
use atelier_shared::config::env;
use atelier_shared::store::schema::TABLES;

/// The variables a deployment's outputs give (name → value).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Deployed(BTreeMap<&'static str, String>);

impl Deployed {
    /// From a CDK stack's outputs: `QueueUrl`, `WebhookQueueUrl`, `BucketName`, and
    /// `<Logical>TableName` per table.
    pub fn from_stack_outputs(outputs: &BTreeMap<String, String>) -> anyhow::Result<Deployed> {
        let get = |key: &str| {
            outputs
                .get(key)
                .cloned()
                .with_context(|| format!("the stack has no output {key}: is it an Atelier stack?"))
        };
        let mut vars = BTreeMap::from([
            (env::QUEUE_URL, get("QueueUrl")?),
            (env::WEBHOOK_QUEUE_URL, get("WebhookQueueUrl")?),
            (env::BUCKET, get("BucketName")?),
        ]);
        for t in TABLES {
            vars.insert(t.env, get(&format!("{}TableName", pascal(t.logical)))?);
        }
        Ok(Deployed(vars))
    }

    /// From `terraform output -json`: `queue_url`, `webhook_queue_url`, `bucket_name`,
    /// `table_names` by logical name.
    pub fn from_terraform(json: &serde_json::Value) -> anyhow::Result<Deployed> {
        let value = |key: &str| -> anyhow::Result<&serde_json::Value> {
            json.get(key).and_then(|o| o.get("value")).with_context(|| {
                format!("no output {key}: is it `terraform output -json` of the Atelier module?")
            })
        };
        let text = |v: &serde_json::Value, what: &str| {
            v.as_str()
                .map(str::to_owned)
                .with_context(|| format!("{what} is not a string"))
        };
        let mut vars = BTreeMap::from([
            (env::QUEUE_URL, text(value("queue_url")?, "queue_url")?),
            (
                env::WEBHOOK_QUEUE_URL,
                text(value("webhook_queue_url")?, "webhook_queue_url")?,
            ),
            (env::BUCKET, text(value("bucket_name")?, "bucket_name")?),
        ]);
        let tables = value("table_names")?;
        for t in TABLES {
            let name = tables
                .get(t.logical)
                .with_context(|| format!("table_names has no {}", t.logical))?;
            vars.insert(t.env, text(name, t.logical)?);
        }
        Ok(Deployed(vars))
    }

    pub fn from_terraform_file(path: &Path) -> anyhow::Result<Deployed> {
        let raw =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let json = serde_json::from_str(&raw)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        Deployed::from_terraform(&json)
    }

    /// The deployment's value of `name`, else the environment's.
    pub fn get(&self, name: &str) -> Option<String> {
        self.0
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
    }
}

/// The outputs of stack `name` (`DescribeStacks`).
pub async fn stack_outputs(
    sdk: &aws_config::SdkConfig,
    name: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    let cfn = aws_sdk_cloudformation::Client::new(sdk);
    let out = cfn
        .describe_stacks()
        .stack_name(name)
        .send()
        .await
        .map_err(|e| atelier_shared::error::AwsError::new("DescribeStacks", e))
        .with_context(|| format!("reading the outputs of stack {name}"))?;
    let Some(stack) = out.stacks().first() else {
        bail!("no stack {name}")
    };
    Ok(stack
        .outputs()
        .iter()
        .filter_map(|o| Some((o.output_key()?.to_owned(), o.output_value()?.to_owned())))
        .collect())
}

/// `job-lineage` → `JobLineage`: how the CDK app names a table's output.
fn pascal(s: &str) -> String {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variable the code cannot start without comes from the deployment (a new one
    /// that the outputs do not give fails here, not in an operator's shell).
    fn assert_every_required_variable(d: &Deployed) {
        let missing: Vec<&str> = env::ALL
            .iter()
            .filter(|v| v.required && !d.0.contains_key(v.name))
            .map(|v| v.name)
            .collect();
        assert_eq!(missing, Vec::<&str>::new());
    }

    #[test]
    fn a_stacks_outputs_name_every_table_the_queue_and_the_bucket() {
        let mut outputs = BTreeMap::from([
            ("QueueUrl".to_owned(), "https://sqs/q".to_owned()),
            ("WebhookQueueUrl".to_owned(), "https://sqs/w".to_owned()),
            ("BucketName".to_owned(), "assets".to_owned()),
        ]);
        for t in TABLES {
            outputs.insert(
                format!("{}TableName", pascal(t.logical)),
                format!("t-{}", t.logical),
            );
        }
        let d = Deployed::from_stack_outputs(&outputs).unwrap_or_default();
        assert_every_required_variable(&d);
        assert_eq!(d.get(env::QUEUE_URL).as_deref(), Some("https://sqs/q"));
        outputs.remove("LedgerTableName");
        let missing = Deployed::from_stack_outputs(&outputs)
            .err()
            .map(|e| e.to_string());
        assert!(missing.is_some_and(|m| m.contains("LedgerTableName")));
    }

    #[test]
    fn terraforms_outputs_give_the_same_variables() {
        let tables: serde_json::Map<String, serde_json::Value> = TABLES
            .iter()
            .map(|t| (t.logical.to_owned(), format!("t-{}", t.logical).into()))
            .collect();
        let json = serde_json::json!({
            "queue_url": { "value": "https://sqs/q" },
            "webhook_queue_url": { "value": "https://sqs/w" },
            "bucket_name": { "value": "assets" },
            "table_names": { "value": tables },
        });
        let d = Deployed::from_terraform(&json).unwrap_or_default();
        assert_every_required_variable(&d);
        assert_eq!(d.get(env::BUCKET).as_deref(), Some("assets"));
        assert!(Deployed::from_terraform(&serde_json::json!({})).is_err());
    }
}
