//! The paid commands: `quote`, `edit` and `repair`. Each fingerprints its request, finds or
//! writes its journal entry (key and uploaded assets), then submits with that key
//! (`submit.rs`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use reqwest::Method;
use serde_json::{Value, json};

use crate::args::{EditArgs, EditOptions, RepairArgs};
use crate::client::Hook;
use crate::journal::{Entry, Fingerprint, Journal};

use super::ctx::Ctx;
use super::submit::{Follow, submit_and_follow};
use super::wire::{Quote, Upload};

/// What a file is, from its first bytes (the API accepts these three).
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// One file to upload: its role in the request, the upload kind, its bytes and type.
struct Input {
    role: &'static str,
    bytes: Vec<u8>,
    content_type: &'static str,
}

fn read_image(path: &Path, role: &'static str, png_only: bool) -> anyhow::Result<Input> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let content_type = sniff_image(&bytes)
        .filter(|t| !png_only || *t == "image/png")
        .with_context(|| {
            let want = if png_only {
                "a PNG"
            } else {
                "a PNG, JPEG or WebP image"
            };
            format!("{} is not {want}", path.display())
        })?;
    Ok(Input {
        role,
        bytes,
        content_type,
    })
}

fn read_inputs(photo: &Path, o: &EditOptions) -> anyhow::Result<Vec<Input>> {
    let mut inputs = vec![read_image(photo, "original", false)?];
    if let Some(mask) = &o.mask {
        inputs.push(read_image(mask, "mask", true)?);
    }
    if let Some(r) = &o.style_ref {
        inputs.push(read_image(r, "style_reference", false)?);
    }
    Ok(inputs)
}

/// The `POST /v1/edits` body (field names: `EditRequest` in shared/src/domain/edit.rs).
fn edit_body(o: &EditOptions, assets: &BTreeMap<String, String>) -> Value {
    let mut body = json!({ "style": o.style, "target": o.target });
    let mut set = |field: &str, value: Option<&String>| {
        if let Some(v) = value {
            body[field] = json!(v);
        }
    };
    set("original_asset_id", assets.get("original"));
    set("mask_asset_id", assets.get("mask"));
    set("style_reference_asset_id", assets.get("style_reference"));
    set("custom_style", o.custom_style.as_ref());
    set("target_description", o.describe.as_ref());
    if let Some(strength) = o.strength {
        body["strength"] = json!(strength);
    }
    if !o.lock.is_empty() {
        body["locks"] = json!(o.lock);
    }
    body
}

/// `quote PHOTO …`: the price of the edit. The price depends only on the options (target,
/// style reference), so nothing is uploaded: well-formed stand-in asset ids are sent.
pub async fn quote(ctx: &Ctx, photo: &Path, o: &EditOptions) -> anyhow::Result<()> {
    let inputs = read_inputs(photo, o)?;
    let placeholder = format!("ast_{}", "0".repeat(26));
    let assets = inputs
        .iter()
        .map(|i| (i.role.to_owned(), placeholder.clone()))
        .collect();
    let value = ctx
        .post_json("quote", "/v1/quotes", &edit_body(o, &assets))
        .await?;
    let q: Quote = ctx.decode(value, "quote")?;
    print_quote(ctx, &q);
    Ok(())
}

fn print_quote(ctx: &Ctx, q: &Quote) {
    let lines: Vec<String> = q
        .lines
        .iter()
        .map(|l| format!("{} {}", l.item, l.credits))
        .collect();
    ctx.say(format!(
        "Price: {} credits ({})",
        q.credits,
        lines.join(", ")
    ));
}

/// The user part of a fingerprint (set from the token in `main`).
fn user_part(ctx: &Ctx) -> String {
    ctx.user.clone().unwrap_or_default()
}

/// `edit PHOTO …`: upload, quote, submit (once, whatever happens), wait, download.
pub async fn edit(ctx: &Ctx, args: &EditArgs) -> anyhow::Result<()> {
    let o = &args.options;
    let inputs = read_inputs(&args.photo, o)?;
    let options = json!({
        "style": o.style, "target": o.target, "strength": o.strength, "describe": o.describe,
        "custom_style": o.custom_style, "lock": o.lock, "preview": args.preview,
    });
    let mut fp = Fingerprint::new("edit")
        .part("api", ctx.api.base().as_bytes())
        .part("user", user_part(ctx).as_bytes())
        .part("options", options.to_string().as_bytes());
    for role in ["original", "mask", "style_reference"] {
        fp = fp.optional(
            role,
            inputs
                .iter()
                .find(|i| i.role == role)
                .map(|i| i.bytes.as_slice()),
        );
    }
    let fingerprint = fp.finish();
    let journal = Journal::new(&ctx.home);
    let command = format!(
        "edit {} --style {} --target {}",
        args.photo.display(),
        crate::choices::wire(o.style),
        crate::choices::wire(o.target)
    );
    // A resumed entry's key may already have been sent: it must never be dropped before the
    // server has answered a submit with it.
    let (mut entry, resumed) = pending_entry(&journal, &fingerprint, &command, args.new)?;

    for input in &inputs {
        if entry.assets.contains_key(input.role) {
            continue; // uploaded by the interrupted run
        }
        let asset = upload(ctx, input).await?;
        entry.assets.insert(input.role.to_owned(), asset);
        journal.save(&entry)?;
    }
    let mut body = edit_body(o, &entry.assets);
    if args.preview {
        body["preview"] = json!(true);
    }
    if !resumed {
        // The price before paying; a refused request (unknown style, …) stops here, and its
        // fresh entry (whose key was never sent) goes.
        let value = match ctx.post_json("quote", "/v1/quotes", &body).await {
            Ok(v) => v,
            Err(e) => {
                journal.remove(&fingerprint)?;
                return Err(e);
            }
        };
        let q: Quote = serde_json::from_value(value).context("unexpected quote")?;
        if !ctx.json {
            print_quote(ctx, &q);
        }
    }
    let default_out = {
        let stem = args
            .photo
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "photo".into());
        args.photo
            .with_file_name(format!("{stem}-{}.png", crate::choices::wire(o.style)))
    };
    let follow = Follow {
        out: args.out.clone().or(Some(default_out)),
        no_wait: args.no_wait,
        timeout: Duration::from_secs(args.timeout),
    };
    submit_and_follow(ctx, &journal, &mut entry, "/v1/edits", &body, &follow).await
}

/// `repair JOB "instruction"`: a paid follow-up on a finished job, same safety as `edit`.
pub async fn repair(ctx: &Ctx, args: &RepairArgs) -> anyhow::Result<()> {
    let fingerprint = Fingerprint::new("repair")
        .part("api", ctx.api.base().as_bytes())
        .part("user", user_part(ctx).as_bytes())
        .part("job", args.job.as_bytes())
        .part("instruction", args.instruction.as_bytes())
        .finish();
    let journal = Journal::new(&ctx.home);
    let command = format!("repair {} {:?}", args.job, args.instruction);
    let (mut entry, _) = pending_entry(&journal, &fingerprint, &command, args.new)?;
    journal.save(&entry)?;
    let body = json!({ "instruction": args.instruction });
    let follow = Follow {
        out: args.out.clone(),
        no_wait: args.no_wait,
        timeout: Duration::from_secs(args.timeout),
    };
    let path = format!("/v1/edits/{}/repairs", args.job);
    submit_and_follow(ctx, &journal, &mut entry, &path, &body, &follow).await
}

/// The journal entry of an interrupted run of this same command (`true`), or a new one.
fn pending_entry(
    journal: &Journal,
    fingerprint: &str,
    command: &str,
    new: bool,
) -> anyhow::Result<(Entry, bool)> {
    if new {
        journal.remove(fingerprint)?;
    } else if let Some(entry) = journal.load(fingerprint)? {
        eprintln!(
            "atelier: resuming the same {} (started {}s ago): same Idempotency-Key, it will not be charged twice (--new starts another)",
            entry.command,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs().saturating_sub(entry.created_at))
                .unwrap_or(0)
        );
        return Ok((entry, true));
    }
    Ok((Entry::new(fingerprint, command), false))
}

/// Asks for an upload slot and PUTs the bytes to it; returns the asset id.
async fn upload(ctx: &Ctx, input: &Input) -> anyhow::Result<String> {
    let slot_body = json!({
        "kind": input.role, "content_type": input.content_type, "bytes": input.bytes.len(),
    });
    let slot: Upload = serde_json::from_value(
        ctx.post_json("upload slot", "/v1/uploads", &slot_body)
            .await?,
    )
    .context("unexpected upload slot")?;
    let reply = ctx
        .api
        .send(
            &format!("uploading the {}", input.role.replace('_', " ")),
            || {
                let mut req = ctx
                    .api
                    .external(Method::PUT, &slot.upload_url)
                    .body(input.bytes.clone());
                for (k, v) in &slot.headers {
                    // The client sets these itself from the body and the URL.
                    if !k.eq_ignore_ascii_case("content-length") && !k.eq_ignore_ascii_case("host")
                    {
                        req = req.header(k.as_str(), v.as_str());
                    }
                }
                req
            },
            Hook::None,
        )
        .await?;
    if !reply.status.is_success() {
        return Err(reply.into_problem()).context(format!("uploading the {}", input.role));
    }
    Ok(slot.asset_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_recognised_by_their_first_bytes() {
        assert_eq!(sniff_image(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff_image(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff_image(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_image(b"GIF89a"), None);
        assert_eq!(sniff_image(b""), None);
    }

    #[test]
    fn the_edit_body_names_the_api_fields_and_omits_what_was_not_given() {
        let o = EditOptions {
            style: crate::choices::Style::Embroidery,
            target: crate::choices::Target::Brush,
            mask: None,
            describe: Some("the grey cat".into()),
            strength: None,
            style_ref: None,
            custom_style: None,
            lock: vec!["the red collar".into()],
        };
        let assets = BTreeMap::from([
            ("original".to_owned(), "ast_a".to_owned()),
            ("mask".to_owned(), "ast_m".to_owned()),
        ]);
        assert_eq!(
            edit_body(&o, &assets),
            json!({
                "style": "embroidery", "target": "brush", "original_asset_id": "ast_a",
                "mask_asset_id": "ast_m", "target_description": "the grey cat",
                "locks": ["the red collar"],
            })
        );
    }
}
