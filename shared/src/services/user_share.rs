//! Rule 12: no one user can exhaust everyone's budget. Each user may spend at most a share of
//! the day's model budget (the configured default, or an operator's override for a trusted
//! account); every reservation counts against it in the reservation's own transaction (see
//! [`super::budget::PaidAttempt`]), and a submit past it is refused before anything is charged
//! (`429 DAILY_LIMIT_REACHED`, `Retry-After` to the next UTC day).

use super::App;
use crate::clock;
use crate::clock::day_of;
use crate::domain::{Micros, UserId};
use crate::error::Error;
use crate::store::schema::UserDayItem;
use crate::store::user_share::ShareChange;

/// The share in force for `user`: the operator's override, else the configured default; and
/// the override as read (for the creation's unchanged-check).
async fn share_of(app: &App, user: &UserId) -> Result<(Micros, Option<Micros>), Error> {
    let over = app
        .store
        .get_user_share(user)
        .await?
        .map(|o| o.share_micros);
    Ok((
        over.unwrap_or(app.config.limits.user_daily_share_micros),
        over,
    ))
}

/// Creates the user's item of `day` with the share in force, if it does not exist yet.
pub(crate) async fn create_day(
    app: &App,
    day: &str,
    user: &UserId,
    stamp: &str,
) -> Result<(), Error> {
    let (share, seen) = share_of(app, user).await?;
    if app
        .store
        .create_user_day(day, user, share, seen, stamp)
        .await?
    {
        tracing::info!(user_id = %user, day, share_micros = share.get(), "user_day_created");
    }
    Ok(())
}

/// One user's spend of a day, as `budget show` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Spender {
    pub user: UserId,
    pub used_micros: Micros,
    pub reserved_micros: Micros,
    pub share_micros: Micros,
}

impl From<UserDayItem> for Spender {
    fn from(i: UserDayItem) -> Spender {
        Spender {
            user: i.user_id,
            used_micros: i.used_micros,
            reserved_micros: i.reserved_micros,
            share_micros: i.share_micros,
        }
    }
}

/// The day's `limit` biggest spenders (used + reserved), biggest first.
pub async fn top_spenders(app: &App, day: &str, limit: u16) -> Result<Vec<Spender>, Error> {
    Ok(app
        .store
        .top_spenders(day, i32::from(limit))
        .await?
        .into_iter()
        .map(Spender::from)
        .collect())
}

/// What a user's share is after an operator's change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShareSetting {
    pub user: UserId,
    /// The share every new day of this user starts with.
    pub share_micros: Micros,
    /// Whether it is an operator's override (else the configured default).
    pub overridden: bool,
    /// Today's spend, when the user has spent today.
    pub today: Option<Spender>,
}

/// Sets (or with [`ShareChange::Clear`] removes) `user`'s override: it applies to today's
/// item at once and to every later day, until changed again. Retries when a reservation or
/// another change wins the race.
pub async fn change(app: &App, user: &UserId, change: &ShareChange) -> Result<ShareSetting, Error> {
    let day = day_of(clock::now());
    for _ in 0..5 {
        let today = app.store.get_user_day(&day, user).await?;
        let stamp = clock::format(clock::now());
        if app
            .store
            .change_user_share(user, &day, today.as_ref(), change, &stamp)
            .await?
        {
            tracing::warn!(user_id = %user, share_micros = change.share().get(), cleared = matches!(change, ShareChange::Clear { .. }), "user_share_changed");
            return setting(app, user).await;
        }
    }
    Err(Error::Contention { attempts: 5 })
}

/// A user's share setting and today's spend.
pub async fn setting(app: &App, user: &UserId) -> Result<ShareSetting, Error> {
    let (share, over) = share_of(app, user).await?;
    let today = app.store.get_user_day(&day_of(clock::now()), user).await?;
    Ok(ShareSetting {
        user: user.clone(),
        share_micros: share,
        overridden: over.is_some(),
        today: today.map(Spender::from),
    })
}
