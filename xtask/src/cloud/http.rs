//! Minimal HTTP and JSON (std only, for a few local checks; the end-to-end test has real
//! clients).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result};

use super::ports::Ports;
use super::tls;
use crate::workspace::root;

pub(super) fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<(u16, String)> {
    http_with(port, method, path, body, &[])
}

/// A request to ministack itself, over TLS when IAM is enforced.
pub(super) fn aws_http(
    ports: Ports,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String)> {
    match ports.tls() {
        None => http_with(ports.aws, method, path, None, headers),
        Some(tls) => tls::request(
            &root().join(".venv").join("bin").join("python"),
            &tls,
            method,
            &format!("{}{path}", ports.endpoint()),
            headers,
        ),
    }
}

fn http_with(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2))
        .with_context(|| format!("connecting to 127.0.0.1:{port}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("no HTTP status from 127.0.0.1:{port}{path}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// The JSON string literals of `text`, in order, unescaped (enough for the flat documents
/// read here: the stack outputs, a token reply).
fn json_strings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut s = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some(other) => s.push(other),
                    None => break,
                },
                c => s.push(c),
            }
        }
        out.push(s);
    }
    out
}

pub(super) fn json_string_field(text: &str, field: &str) -> Option<String> {
    let strings = json_strings(text);
    strings
        .iter()
        .position(|s| s == field)
        .and_then(|i| strings.get(i + 1).cloned())
}

/// `cdk deploy --outputs-file`: `{"<stack>": {"Key": "value", …}}`, every value a string.
pub(super) fn parse_outputs(text: &str) -> Vec<(String, String)> {
    let strings = json_strings(text);
    strings
        .get(1..)
        .unwrap_or_default()
        .chunks_exact(2)
        .map(|kv| (kv[0].clone(), kv[1].clone()))
        .collect()
}

/// The API id in the `ApiUrl` output (`https://<id>.execute-api.<region>.<suffix>/`).
pub(super) fn api_id(api_url: &str) -> Option<String> {
    let host = api_url.split_once("://")?.1;
    let (id, rest) = host.split_once('.')?;
    (rest.starts_with("execute-api.") && !id.is_empty()).then(|| id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_outputs_are_read_as_pairs() {
        let text = r#"{
  "Atelier-dev": {
    "ApiUrl": "https://ab12cd.execute-api.us-east-1.amazonaws.com/",
    "QueueUrl": "http://127.0.0.1:4610/000000000000/Atelier-dev-JobsQueue"
  }
}"#;
        let out = parse_outputs(text);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].0, "ApiUrl");
        assert_eq!(
            api_id(&out[0].1).as_deref(),
            Some("ab12cd"),
            "the API id is the host's first label"
        );
        assert_eq!(api_id("http://127.0.0.1:4610/"), None);
    }

    #[test]
    fn json_strings_are_unescaped() {
        assert_eq!(
            json_string_field(r#"{"token":"a\"b","expires_in":3600}"#, "token").as_deref(),
            Some("a\"b")
        );
    }
}
