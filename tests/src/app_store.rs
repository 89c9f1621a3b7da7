//! A stand-in App Store: a test certificate chain shaped like Apple's (root → intermediate
//! with Apple's OID 1.2.840.113635.100.6.2.1 → leaf with 1.2.840.113635.100.6.11.1, P-256
//! keys, the extensions OpenSSL's strict mode asks for) and a signer producing StoreKit 2
//! transactions and App Store Server Notifications v2 exactly in Apple's format (an ES256
//! compact JWS with the chain in `x5c`). Apple's own `app-store-server-library` accepts what
//! it signs (tests/tests/apple_purchases.rs proves it), so our verifier is tested against data
//! the official verifier believes.

use std::time::{SystemTime, UNIX_EPOCH};

use atelier_shared::adapters::payments::apple::{AppleEnvironment, AppleSettings};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
};
use serde_json::{Value, json};
use time::OffsetDateTime;

/// The bundle id the stand-in's app has.
pub const BUNDLE_ID: &str = "com.example.atelier";
/// The stand-in's numeric app id.
pub const APP_APPLE_ID: i64 = 1_234_567_890;

const LEAF_OID: &[u64] = &[1, 2, 840, 113_635, 100, 6, 11, 1];
const INTERMEDIATE_OID: &[u64] = &[1, 2, 840, 113_635, 100, 6, 2, 1];

/// How the stand-in's chain is made (the defaults are Apple's shape, valid today).
#[derive(Debug, Clone, Copy)]
pub struct Chain {
    /// The leaf expired a day ago.
    pub expired_leaf: bool,
    pub leaf_oid: bool,
    pub intermediate_oid: bool,
}

impl Default for Chain {
    fn default() -> Chain {
        Chain {
            expired_leaf: false,
            leaf_oid: true,
            intermediate_oid: true,
        }
    }
}

/// A stand-in App Store with its own root.
#[derive(Clone)]
pub struct AppStoreStandIn {
    pub root_der: Vec<u8>,
    intermediate_der: Vec<u8>,
    leaf_der: Vec<u8>,
    leaf_pkcs8: Vec<u8>,
}

pub fn now_ms() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_else(|e| panic!("{e}"));
    i64::try_from(d.as_millis()).unwrap_or_else(|e| panic!("{e}"))
}

fn at(days_from_now: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(now_ms() / 1000 + days_from_now * 86_400)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn params(cn: &str, from: i64, to: i64, oid: Option<&[u64]>, ca: bool) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
    p.distinguished_name.push(DnType::CommonName, cn);
    p.distinguished_name
        .push(DnType::OrganizationName, "Stand-in Apple Inc.");
    p.not_before = at(from);
    p.not_after = at(to);
    p.use_authority_key_identifier_extension = true;
    if ca {
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    } else {
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    }
    if let Some(oid) = oid {
        // Apple's marker extensions hold an ASN.1 NULL.
        p.custom_extensions
            .push(CustomExtension::from_oid_content(oid, vec![0x05, 0x00]));
    }
    p
}

fn key() -> KeyPair {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap_or_else(|e| panic!("{e}"))
}

impl AppStoreStandIn {
    /// A chain shaped like Apple's, valid now.
    pub fn new() -> AppStoreStandIn {
        AppStoreStandIn::with_chain(Chain::default())
    }

    pub fn with_chain(chain: Chain) -> AppStoreStandIn {
        let (root_key, inter_key, leaf_key) = (key(), key(), key());
        let mut root_params = params("Stand-in Apple Root CA - G3", -3650, 3650, None, true);
        root_params.use_authority_key_identifier_extension = false;
        let root = root_params
            .self_signed(&root_key)
            .unwrap_or_else(|e| panic!("{e}"));
        let root_issuer = Issuer::new(root_params, root_key);
        let inter_oid = chain.intermediate_oid.then_some(INTERMEDIATE_OID);
        let inter_params = params("Stand-in Apple WWDR CA G6", -1000, 1000, inter_oid, true);
        let inter = inter_params
            .signed_by(&inter_key, &root_issuer)
            .unwrap_or_else(|e| panic!("{e}"));
        let inter_issuer = Issuer::new(inter_params, inter_key);
        let (from, to) = if chain.expired_leaf {
            (-30, -1)
        } else {
            (-30, 300)
        };
        let leaf_oid = chain.leaf_oid.then_some(LEAF_OID);
        let leaf = params("Stand-in Prod ECC Mac App Store", from, to, leaf_oid, false)
            .signed_by(&leaf_key, &inter_issuer)
            .unwrap_or_else(|e| panic!("{e}"));
        AppStoreStandIn {
            root_der: root.der().to_vec(),
            intermediate_der: inter.der().to_vec(),
            leaf_der: leaf.der().to_vec(),
            leaf_pkcs8: leaf_key.serialize_der(),
        }
    }

    /// Our verifier's settings trusting this stand-in's root, for the sandbox.
    pub fn settings(&self) -> AppleSettings {
        AppleSettings {
            roots: vec![self.root_der.clone()],
            bundle_id: BUNDLE_ID.to_owned(),
            environment: AppleEnvironment::Sandbox,
            app_apple_id: Some(APP_APPLE_ID),
            api: None,
        }
    }

    /// `payload` as an ES256 compact JWS with this chain in `x5c`, as the App Store signs.
    pub fn sign(&self, payload: &Value) -> String {
        let x5c: Vec<String> = [&self.leaf_der, &self.intermediate_der, &self.root_der]
            .iter()
            .map(|d| STANDARD.encode(d))
            .collect();
        let header = json!({ "alg": "ES256", "x5c": x5c });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(payload.to_string())
        );
        let rng = ring::rand::SystemRandom::new();
        let key = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &self.leaf_pkcs8,
            &rng,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let sig = key
            .sign(&rng, signing_input.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    /// A signed consumable transaction (`signedTransactionInfo`).
    pub fn transaction(&self, t: &Value) -> String {
        self.sign(t)
    }

    /// A signed notification (`signedPayload`) of `kind` about the signed transaction `signed`.
    pub fn notification(&self, kind: &str, signed: &str) -> String {
        self.sign(&notification_payload(kind, signed))
    }
}

impl Default for AppStoreStandIn {
    fn default() -> AppStoreStandIn {
        AppStoreStandIn::new()
    }
}

/// A consumable transaction's payload, as StoreKit 2 writes it (JWSTransactionDecodedPayload).
pub fn transaction_payload(transaction_id: &str, product_id: &str, token: Option<&str>) -> Value {
    let now = now_ms();
    let mut t = json!({
        "transactionId": transaction_id,
        "originalTransactionId": transaction_id,
        "bundleId": BUNDLE_ID,
        "productId": product_id,
        "purchaseDate": now - 1000,
        "originalPurchaseDate": now - 1000,
        "quantity": 1,
        "type": "Consumable",
        "inAppOwnershipType": "PURCHASED",
        "signedDate": now,
        "environment": "Sandbox",
        "transactionReason": "PURCHASE",
        "storefront": "USA",
        "storefrontId": "143441",
        "price": 4990,
        "currency": "USD",
    });
    if let Some(token) = token {
        t["appAccountToken"] = json!(token);
    }
    t
}

/// A notification's payload (ResponseBodyV2DecodedPayload) carrying a signed transaction.
pub fn notification_payload(kind: &str, signed_transaction: &str) -> Value {
    json!({
        "notificationType": kind,
        "notificationUUID": format!("{:08x}-0000-4000-8000-{:012x}", rand::random::<u32>(), rand::random::<u64>() >> 16),
        "data": {
            "appAppleId": APP_APPLE_ID,
            "bundleId": BUNDLE_ID,
            "bundleVersion": "1",
            "environment": "Sandbox",
            "signedTransactionInfo": signed_transaction,
        },
        "version": "2.0",
        "signedDate": now_ms(),
    })
}

/// The product id the stand-in's starter pack is sold under.
pub const STARTER: &str = "com.example.atelier.starter";

/// A fresh App Store transaction id (digits, as Apple's are).
pub fn transaction_id() -> String {
    format!("2000{:012}", rand::random::<u64>() % 1_000_000_000_000)
}

/// A new transaction of the starter pack, signed by `store`, with no account token.
pub fn starter_transaction(store: &AppStoreStandIn) -> String {
    store.transaction(&transaction_payload(&transaction_id(), STARTER, None))
}

/// A new transaction of the starter pack, signed by `store`, bought by `user`'s app: with the
/// account's token, as StoreKit's `.appAccountToken` sets it.
pub async fn starter_bought_by(
    h: &crate::Harness,
    store: &AppStoreStandIn,
    user: &atelier_shared::domain::UserId,
) -> String {
    let token = h.app_account_token(user).await;
    store.transaction(&transaction_payload(
        &transaction_id(),
        STARTER,
        Some(&token),
    ))
}

/// A harness whose API trusts `store`'s root and sells the starter pack as [`STARTER`].
pub async fn harness(store: &AppStoreStandIn) -> crate::Harness {
    let mut config = crate::Harness::config();
    sell_on(&mut config, store);
    crate::Harness::with_config(config).await
}

/// `config` trusting `store`'s root and selling the starter pack as [`STARTER`] too.
pub fn sell_on(config: &mut atelier_shared::config::Config, store: &AppStoreStandIn) {
    config.payments.packs = atelier_shared::domain::Packs::parse(&format!(
        "starter:50:500:usd:{STARTER},studio:250:2000:usd"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    config.payments.apple = Some(store.settings());
}

/// `POST /v1/purchases/apple` of `signed` by `user`.
pub async fn submit(
    h: &crate::Harness,
    user: &atelier_shared::domain::UserId,
    signed: &str,
) -> crate::Reply {
    post(
        h,
        Some(user),
        "/v1/purchases/apple",
        json!({ "signedTransaction": signed }),
    )
    .await
}

/// `POST /v1/webhooks/apple` of `signed`, as Apple delivers a notification.
pub async fn notify(h: &crate::Harness, signed: &str) -> crate::Reply {
    post(
        h,
        None,
        "/v1/webhooks/apple",
        json!({ "signedPayload": signed }),
    )
    .await
}

async fn post(
    h: &crate::Harness,
    user: Option<&atelier_shared::domain::UserId>,
    path: &str,
    body: Value,
) -> crate::Reply {
    let req = http::Request::post(path)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap_or_else(|e| panic!("request: {e}"));
    h.call(user, req).await
}
