//! Hostile inputs through the real consumer: decompression bombs, non-images, files whose
//! declared type lies, empty and oversized objects, masks that cannot be used. Each is charged
//! on submit (the API never sees the bytes), then fails with a clear code before any paid call,
//! is refunded exactly once, and leaves the audit clean. A truncated photo and a mask of the
//! wrong size are in `consumer.rs`.

use atelier_model_server::samples;
use atelier_shared::adapters::assets::Assets;
use atelier_shared::domain::FailureCode;
use atelier_shared::domain::LedgerKind;
use atelier_shared::domain::imaging::{DecodeLimits, ImagingError};
use atelier_shared::domain::{AssetId, AssetKind, JobId, UserId};
use atelier_shared::services::process::Outcome;
use atelier_tests::{Harness, JobCalls, StandIn};
use http::StatusCode;
use serde_json::{Value, json};

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

// ---------------------------------------------------------------------------------------------
// Hostile files, made here byte by byte

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in bytes {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&u32::try_from(data.len()).unwrap_or(0).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A well-formed PNG header declaring `width`×`height` RGBA pixels, followed by a valid zlib
/// stream of a few kilobytes of zero rows and IEND: a few kilobytes on disk, `width*height*4`
/// bytes (14.4 GB at 60000×60000) for any decoder that believes the header.
fn png_bomb(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]); // 8-bit RGBA, deflate, no filter, no interlace
    chunk(&mut png, b"IHDR", &ihdr);
    // One stored deflate block of zero bytes (filter "none" + black pixels).
    let raw = vec![0u8; 4096];
    let mut zlib = vec![0x78, 0x01, 0x01];
    let len = u16::try_from(raw.len()).unwrap_or(0);
    zlib.extend_from_slice(&len.to_le_bytes());
    zlib.extend_from_slice(&(!len).to_le_bytes());
    zlib.extend_from_slice(&raw);
    zlib.extend_from_slice(&adler32(&raw).to_be_bytes());
    chunk(&mut png, b"IDAT", &zlib);
    chunk(&mut png, b"IEND", &[]);
    png
}

/// A real 1×1 GIF: a decodable image in a format uploads do not accept.
fn gif() -> Vec<u8> {
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;".to_vec()
}

/// The sample photo as a JPEG.
fn jpeg_photo() -> Vec<u8> {
    let rgb = image::DynamicImage::ImageRgba8(samples::single_pet_image()).to_rgb8();
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90)
        .encode_image(&rgb)
        .unwrap_or_else(|e| panic!("{e}"));
    out
}

/// Peak resident memory of this test process so far (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| panic!("/proc/self/status: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("no VmHWM in /proc/self/status: {status}"))
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// Uploads through a presigned slot that declares `content_type` (the bytes say otherwise).
async fn upload_as(
    h: &Harness,
    user: &UserId,
    kind: &str,
    content_type: &str,
    bytes: Vec<u8>,
) -> String {
    let slot = h
        .create_upload(user, kind, content_type, bytes.len() as i64)
        .await;
    assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");
    assert_eq!(h.put_upload(&slot, bytes, None).await, 200, "upload PUT");
    slot.str("asset_id")
}

/// Puts an object straight into the caller's prefix, past the presigned PUT's signed size:
/// what the consumer must survive if anything ever lets such an object through.
async fn put_raw(h: &Harness, user: &UserId, kind: AssetKind, bytes: Vec<u8>) -> String {
    let id = AssetId::generate();
    h.clients
        .s3
        .put_object()
        .bucket(h.app.assets.bucket())
        .key(Assets::upload_key(user, kind, &id))
        .body(bytes.into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    id.as_str().to_owned()
}

/// Submits `body` (assets already in it) and returns the job id and its price.
async fn submit(h: &Harness, user: &UserId, key: &str, body: &Value) -> (String, i64) {
    let res = h.submit(user, Some(key), body).await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    let price = res.body["credits"]
        .as_i64()
        .unwrap_or_else(|| panic!("no price: {res:?}"));
    assert!(price > 0, "{res:?}");
    (res.str("id"), price)
}

/// Runs the consumer on the job, then asserts the whole contract of a refused input: failed
/// with `code`, one debit and one refund of the same amount, the balance back where it was,
/// no slot held, no model call of any kind, a redelivery that does nothing, audit clean.
async fn assert_refused(
    h: &Harness,
    model: &StandIn,
    user: &UserId,
    id: &str,
    code: FailureCode,
    balance_before: i64,
) {
    let processor = h.processor(model);
    let outcome = processor.process(&job_id(id)).await;
    assert_eq!(
        outcome.as_ref().ok(),
        Some(&Outcome::Failed { code }),
        "{outcome:?}"
    );
    let again = processor.process(&job_id(id)).await;
    assert!(matches!(again, Ok(Outcome::NotClaimed)), "{again:?}");

    let job = h.job(user, id).await;
    assert_eq!(job.str("status"), "failed", "{job:?}");
    assert_eq!(job.body["failure"]["code"], code.as_str(), "{job:?}");
    let message = job.body["failure"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("a failure has a message: {job:?}"));
    assert!(message.contains("refunded"), "the user is told: {message}");

    let rows: Vec<_> = h
        .ledger(user)
        .await
        .into_iter()
        .filter(|r| r.job_id.as_ref().map(JobId::as_str) == Some(id))
        .collect();
    let debits: Vec<i64> = rows
        .iter()
        .filter(|r| r.kind == LedgerKind::Debit)
        .map(|r| r.amount.get())
        .collect();
    let refunds: Vec<i64> = rows
        .iter()
        .filter(|r| r.kind == LedgerKind::Refund)
        .map(|r| r.amount.get())
        .collect();
    assert_eq!(debits.len(), 1, "one debit: {rows:?}");
    assert_eq!(
        refunds,
        vec![-debits[0]],
        "one refund of the debit: {rows:?}"
    );
    assert_eq!(h.balance(user).await, balance_before, "balance back");
    assert_eq!(h.account(user).await.body["in_flight"], 0);
    assert_eq!(model.calls(id).await, JobCalls::default(), "no model call");
    h.assert_audit_clean().await;
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn a_png_bomb_is_refused_from_its_header_before_any_pixel_is_allocated() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let before = h.balance(&user).await;
    let bomb = png_bomb(60_000, 60_000);
    assert!(bomb.len() < 5_000, "a tiny file: {} bytes", bomb.len());
    // The refusal comes from the declared dimensions (the header), not from a decoder that
    // started to allocate and hit its limit.
    match DecodeLimits::PHOTO.decode(&bomb) {
        Err(ImagingError::TooLarge { width, height, .. }) => {
            assert_eq!((width, height), (60_000, 60_000));
        }
        other => panic!("refused from the header expected, got {other:?}"),
    }
    let original = h.upload(&user, "original", bomb).await;
    let (id, price) = submit(
        &h,
        &user,
        "bomb",
        &json!({ "style": "origami", "target": "pet", "original_asset_id": original }),
    )
    .await;
    assert_eq!(h.balance(&user).await, before - price, "charged on submit");

    assert_refused(&h, &model, &user, &id, FailureCode::InvalidImage, before).await;
    // 60000×60000 RGBA is 14.4 GB; the whole test process stays far below even one.
    let peak = peak_rss();
    assert!(peak < 1 << 30, "peak memory {} MiB", peak >> 20);
}

#[tokio::test]
async fn a_bomb_within_the_side_limit_but_over_the_pixel_limit_is_refused_too() {
    // 8000×8000 passes the 8192-a-side limit but is 64 MP, over the 40 MP ceiling.
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let before = h.balance(&user).await;
    let original = h.upload(&user, "original", png_bomb(8_000, 8_000)).await;
    let (id, _) = submit(
        &h,
        &user,
        "k",
        &json!({ "style": "mosaic", "target": "background", "original_asset_id": original }),
    )
    .await;

    assert_refused(&h, &model, &user, &id, FailureCode::InvalidImage, before).await;
}

#[tokio::test]
async fn a_bomb_as_the_mask_or_the_style_reference_is_refused_before_decoding() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.funded_user(30).await;
    let before = h.balance(&user).await;
    let photo = h.upload(&user, "original", samples::single_pet()).await;
    let mask = h.upload(&user, "mask", png_bomb(60_000, 60_000)).await;
    let (masked, _) = submit(&h, &user, "mask", &json!({ "style": "linocut", "target": "brush", "original_asset_id": photo, "mask_asset_id": mask })).await;
    assert_refused(
        &h,
        &model,
        &user,
        &masked,
        FailureCode::InvalidImage,
        before,
    )
    .await;

    let reference = upload_as(
        &h,
        &user,
        "style_reference",
        "image/png",
        png_bomb(60_000, 60_000),
    )
    .await;
    let (referenced, _) = submit(&h, &user, "ref", &json!({ "style": "linocut", "target": "pet", "original_asset_id": photo, "style_reference_asset_id": reference })).await;
    assert_refused(
        &h,
        &model,
        &user,
        &referenced,
        FailureCode::InvalidImage,
        before,
    )
    .await;
}

#[tokio::test]
async fn text_uploaded_as_a_png_is_not_an_image() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let before = h.balance(&user).await;
    let text = b"#!/bin/sh\necho 'definitely a PNG'\n<svg onload=alert(1)>\n".repeat(20);
    let original = upload_as(&h, &user, "original", "image/png", text).await;
    let (id, _) = submit(
        &h,
        &user,
        "k",
        &json!({ "style": "beadwork", "target": "person", "original_asset_id": original }),
    )
    .await;

    assert_refused(&h, &model, &user, &id, FailureCode::InvalidImage, before).await;
}

#[tokio::test]
async fn a_gif_declared_as_png_is_refused_for_its_real_format() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let before = h.balance(&user).await;
    assert!(
        matches!(
            DecodeLimits::PHOTO.decode(&gif()),
            Err(ImagingError::UnsupportedFormat { .. })
        ),
        "the bytes decide the format, not the declared type"
    );
    let original = upload_as(&h, &user, "original", "image/png", gif()).await;
    let (id, _) = submit(
        &h,
        &user,
        "k",
        &json!({ "style": "crochet", "target": "pet", "original_asset_id": original }),
    )
    .await;

    assert_refused(&h, &model, &user, &id, FailureCode::InvalidImage, before).await;
}

#[tokio::test]
async fn a_jpeg_declared_as_png_is_read_as_the_jpeg_it_is_and_charged_once() {
    // The declared type is only what S3 stored; the decoder sniffs the bytes and accepts the
    // three formats uploads allow, so a mislabelled JPEG photo is a photo, not an error.
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let before = h.balance(&user).await;
    let original = upload_as(&h, &user, "original", "image/png", jpeg_photo()).await;
    let (id, price) = submit(
        &h,
        &user,
        "k",
        &json!({ "style": "embroidery", "target": "pet", "original_asset_id": original }),
    )
    .await;

    let outcome = h.processor(&model).process(&job_id(&id)).await;

    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    assert_eq!(h.balance(&user).await, before - price);
    assert_eq!(model.calls(&id).await.edit, 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_zero_byte_file_cannot_get_a_slot_and_fails_if_one_appears_anyway() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let slot = h.create_upload(&user, "original", "image/png", 0).await;
    assert_eq!(slot.status, StatusCode::UNPROCESSABLE_ENTITY, "{slot:?}");
    assert_eq!(slot.body["errors"][0]["field"], "bytes", "{slot:?}");

    let before = h.balance(&user).await;
    let original = put_raw(&h, &user, AssetKind::Original, Vec::new()).await;
    let (id, _) = submit(
        &h,
        &user,
        "k",
        &json!({ "style": "origami", "target": "pet", "original_asset_id": original }),
    )
    .await;

    assert_refused(&h, &model, &user, &id, FailureCode::InvalidImage, before).await;
}

#[tokio::test]
async fn a_file_one_byte_over_the_limit_gets_no_slot_and_is_refused_unread_if_it_appears() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let limit = AssetKind::Original.max_bytes();
    assert_eq!(
        limit,
        DecodeLimits::for_asset(AssetKind::Original).max_bytes
    );
    let slot = h
        .create_upload(
            &user,
            "original",
            "image/png",
            i64::try_from(limit + 1).unwrap_or(i64::MAX),
        )
        .await;
    assert_eq!(slot.status, StatusCode::UNPROCESSABLE_ENTITY, "{slot:?}");
    assert_eq!(slot.body["errors"][0]["code"], "too_large", "{slot:?}");
    // Exactly at the limit a slot is handed out.
    let at_limit = h
        .create_upload(
            &user,
            "original",
            "image/png",
            i64::try_from(limit).unwrap_or(i64::MAX),
        )
        .await;
    assert_eq!(at_limit.status, StatusCode::CREATED, "{at_limit:?}");

    // An object over the limit (a valid PNG header, then padding) is refused from its length,
    // before its body is read.
    let before = h.balance(&user).await;
    let mut big = Harness::png(8, 8);
    big.resize(usize::try_from(limit + 1).unwrap_or(usize::MAX), 0);
    let original = put_raw(&h, &user, AssetKind::Original, big).await;
    let (id, _) = submit(
        &h,
        &user,
        "k",
        &json!({ "style": "origami", "target": "pet", "original_asset_id": original }),
    )
    .await;

    assert_refused(&h, &model, &user, &id, FailureCode::InvalidImage, before).await;
}

#[tokio::test]
async fn a_mask_that_is_text_or_brushes_nothing_is_an_invalid_mask_or_image() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.funded_user(30).await;
    let before = h.balance(&user).await;
    let photo = h.upload(&user, "original", samples::single_pet()).await;
    let body = |mask: &str| json!({ "style": "mosaic", "target": "brush", "original_asset_id": photo, "mask_asset_id": mask });

    let text = upload_as(
        &h,
        &user,
        "mask",
        "image/png",
        b"not a mask at all".to_vec(),
    )
    .await;
    let (id, _) = submit(&h, &user, "text", &body(&text)).await;
    assert_refused(&h, &model, &user, &id, FailureCode::InvalidImage, before).await;

    // Black everywhere: the right size, but nothing brushed.
    let black =
        image::RgbaImage::from_pixel(samples::WIDTH, samples::HEIGHT, image::Rgba([0, 0, 0, 255]));
    let empty = h
        .upload(
            &user,
            "mask",
            atelier_shared::domain::imaging::encode_png(&black).expect("a black mask PNG"),
        )
        .await;
    let (id, _) = submit(&h, &user, "empty", &body(&empty)).await;
    assert_refused(&h, &model, &user, &id, FailureCode::InvalidMask, before).await;
}
