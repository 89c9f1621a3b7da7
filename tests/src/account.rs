//! The caller's account and what hangs off it: balance and funding, the ledger and its
//! audit, the day's spend and share, devices, deletion and export.

use atelier_shared::domain::{Credits, GrantReason, Operator, UserId};
use atelier_shared::services::accounts;
use atelier_shared::services::audit::{self, AuditReport};
use axum::body::Body;
use http::{Request, StatusCode};
use serde_json::{Value, json};

use crate::harness::Harness;
use crate::reply::Reply;

impl Harness {
    /// `GET /v1/account`.
    pub async fn account(&self, user: &UserId) -> Reply {
        self.get(user, "/v1/account").await
    }

    /// `GET /v1/account` with the token's `email_verified` claim as given (`None`: absent).
    pub async fn account_as(&self, user: &UserId, email_verified: Option<&str>) -> Reply {
        let req = Request::get("/v1/account")
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call_with_claims(Some(Harness::claims(user, email_verified)), req)
            .await
    }

    /// The token `user`'s apps buy with (`GET /v1/account`'s `app_account_token`).
    pub async fn app_account_token(&self, user: &UserId) -> String {
        self.account(user).await.str("app_account_token")
    }

    /// The balance, creating the account if needed.
    pub async fn balance(&self, user: &UserId) -> i64 {
        let a = self.account(user).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        a.body["balance"]
            .as_i64()
            .unwrap_or_else(|| panic!("the account has no balance: {a:?}"))
    }

    /// Every ledger row of the user, from the base table (consistent).
    pub async fn ledger(&self, user: &UserId) -> Vec<atelier_shared::store::schema::LedgerItem> {
        self.app
            .store
            .ledger_rows(user)
            .await
            .unwrap_or_else(|e| panic!("ledger: {e:?}"))
    }

    /// A fresh user whose balance is exactly `credits` (the setup most tests start with).
    pub async fn funded_user(&self, credits: i64) -> UserId {
        let user = self.user();
        self.fund_to(&user, credits).await;
        user
    }

    /// Grants credits so the balance is exactly `target` (the account gets its signup grant first).
    pub async fn fund_to(&self, user: &UserId, target: i64) {
        let now = self.balance(user).await;
        assert!(target >= now, "fund_to only adds credits");
        if target > now {
            let req = accounts::GrantRequest {
                credits: Credits::new(target - now),
                reason: GrantReason::parse("test-funding").unwrap_or_else(|e| panic!("{e}")),
                operator: Operator::parse("test-harness").unwrap_or_else(|e| panic!("{e}")),
                create_account: false,
            };
            let granted = accounts::grant(&self.app, user, &req).await;
            assert!(
                matches!(granted, Ok(accounts::GrantResult::Granted)),
                "{granted:?}"
            );
        }
        assert_eq!(self.balance(user).await, target);
    }

    /// Spends some of `user`'s credits on `edits` accepted edits.
    pub async fn spend(&self, user: &UserId, edits: usize) {
        for i in 0..edits {
            let original = self.upload(user, "original", Harness::png(8, 8)).await;
            let body =
                json!({ "style": "origami", "target": "pet", "original_asset_id": original });
            let res = self.submit(user, Some(&format!("spend-{i}")), &body).await;
            assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
        }
    }

    /// Runs `atelier-admin audit`'s check and asserts it is clean.
    pub async fn assert_audit_clean(&self) -> AuditReport {
        let report = audit::audit(&self.app)
            .await
            .unwrap_or_else(|e| panic!("audit: {e:?}"));
        assert!(
            report.is_clean(),
            "audit found offenders: {:#?}",
            report.offenders
        );
        report
    }

    /// The user's spend of today (rule 12), read consistently; `None` before their first
    /// reservation of the day.
    pub async fn user_day(
        &self,
        user: &UserId,
    ) -> Option<atelier_shared::store::schema::UserDayItem> {
        let today = atelier_shared::services::budget::day_of(atelier_shared::clock::now());
        self.app
            .store
            .get_user_day(&today, user)
            .await
            .unwrap_or_else(|e| panic!("user day: {e:?}"))
    }

    /// `atelier-admin budget share USER MICROS` (or `--clear` with `None`) as its service call.
    pub async fn set_user_share(
        &self,
        user: &UserId,
        micros: Option<i64>,
    ) -> atelier_shared::services::user_share::ShareSetting {
        use atelier_shared::store::user_share::ShareChange;
        let change = match micros {
            Some(m) => ShareChange::Set {
                share: atelier_shared::domain::Micros::new(m),
                operator: "test-harness".into(),
            },
            None => ShareChange::Clear {
                default: self.app.config.limits.user_daily_share_micros,
            },
        };
        atelier_shared::services::user_share::change(&self.app, user, &change)
            .await
            .unwrap_or_else(|e| panic!("share change: {e:?}"))
    }

    /// `PUT /v1/devices/{id}` with a JSON body.
    pub async fn put_device(&self, user: &UserId, id: &str, body: &Value) -> Reply {
        let req = Harness::json_request("PUT", &format!("/v1/devices/{id}"))
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// The ids of `user`'s registered devices, as `GET /v1/devices` lists them, sorted.
    pub async fn device_ids(&self, user: &UserId) -> Vec<String> {
        let res = self.get(user, "/v1/devices").await;
        assert_eq!(res.status, http::StatusCode::OK, "{res:?}");
        let mut ids: Vec<String> = res.body["items"]
            .as_array()
            .unwrap_or_else(|| panic!("no items: {res:?}"))
            .iter()
            .filter_map(|d| d["id"].as_str().map(str::to_owned))
            .collect();
        ids.sort();
        ids
    }

    /// `DELETE /v1/account`.
    pub async fn delete_account(&self, user: &UserId) -> Reply {
        self.delete(user, "/v1/account").await
    }

    /// `GET /v1/account/export` with a query string (`""`, `"limit=2&cursor=..."`).
    pub async fn export(&self, user: &UserId, query: &str) -> Reply {
        self.get(user, &format!("/v1/account/export?{query}")).await
    }
}
