//! What every command gets, and its ways to ask the API and to print.

use std::path::PathBuf;

use anyhow::Context;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::client::{Api, Hook};

/// What every command gets.
pub struct Ctx {
    pub api: Api,
    pub home: PathBuf,
    /// Who the token is for (part of a paid request's fingerprint).
    pub user: Option<String>,
    /// Print the server's JSON instead of sentences.
    pub json: bool,
    pub hook: Hook,
}

impl Ctx {
    /// GETs a path; prints the JSON in `--json` mode and returns it decoded.
    pub async fn fetch<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        let value: Value = self.api.get(path).await?;
        self.decode(value, path)
    }

    pub fn decode<T: DeserializeOwned>(&self, value: Value, what: &str) -> anyhow::Result<T> {
        if self.json {
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        serde_json::from_value(value).with_context(|| format!("unexpected answer to {what}"))
    }

    /// Prints a line unless `--json` asked for JSON only.
    pub fn say(&self, line: impl AsRef<str>) {
        if !self.json {
            println!("{}", line.as_ref());
        }
    }

    pub async fn post_json(&self, what: &str, path: &str, body: &Value) -> anyhow::Result<Value> {
        let reply = self
            .api
            .send(
                what,
                || self.api.request(Method::POST, path).json(body),
                Hook::None,
            )
            .await?;
        Ok(reply.json(what)?)
    }
}
