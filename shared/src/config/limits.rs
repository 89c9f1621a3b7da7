//! Business limits that are configuration rather than code, and the timings that bound each
//! other.

use super::env;
use super::read::{ConfigError, Get, number};
use crate::domain::Micros;
use crate::domain::breaker::BreakerSettings;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Rule 11: edits one user may have queued or processing.
    pub max_in_flight: u32,
    pub upload_url_ttl_secs: u64,
    /// Upload slots one user may ask for per UTC day, and their declared bytes together.
    pub upload_slots_per_day: u32,
    pub upload_bytes_per_day: u64,
    pub result_url_ttl_secs: u64,
    /// Days the bucket's lifecycle keeps `results/` (the deployment sets both from one value).
    pub result_retention_days: u32,
    /// Rule 8: provider spend allowed per UTC day, micro-dollars (new days start with this).
    pub daily_cap_micros: Micros,
    /// Rule 12: model spend one user may cause per UTC day (an operator's override wins).
    pub user_daily_share_micros: Micros,
    /// Rule 6: recovery timings.
    pub consumer_timeout_secs: u64,
    pub stuck_after_secs: u64,
    /// A queued job is sent again this long after its submit, then after waits that grow
    /// fourfold up to `requeue_max_secs` (waiting is not failure: a waiting message is not lost).
    pub requeue_after_secs: u64,
    pub requeue_max_secs: u64,
    /// A job still queued this long after it was created is failed and refunded.
    pub queued_deadline_secs: u64,
    /// Rule 15: when a model provider's circuit breaker opens and how long it stays open.
    pub breaker: BreakerSettings,
    /// Requests one signed-in caller may make per window of `request_window_secs`
    /// (docs/design.md, "One caller's flood").
    pub requests_per_window: u32,
    pub request_window_secs: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_in_flight: 3,
            upload_url_ttl_secs: 900,
            upload_slots_per_day: DEFAULT_UPLOAD_SLOTS_PER_DAY,
            upload_bytes_per_day: DEFAULT_UPLOAD_BYTES_PER_DAY,
            result_url_ttl_secs: 600,
            result_retention_days: 90,
            daily_cap_micros: Micros::new(20_000_000),
            // ≈ 40 edits with a repair each at ≈ $0.07 (docs/design.md, rule 12).
            user_daily_share_micros: Micros::new(3_000_000),
            consumer_timeout_secs: 300,
            stuck_after_secs: 900,
            requeue_after_secs: 60,
            requeue_max_secs: 900,
            queued_deadline_secs: 3600,
            breaker: BreakerSettings::default(),
            requests_per_window: DEFAULT_REQUESTS_PER_WINDOW,
            request_window_secs: DEFAULT_REQUEST_WINDOW_SECS,
        }
    }
}

/// A person's busiest minute in the app (an upload, a quote per change, a submit, the
/// long-poll, History and Account pages) is a few dozen requests; a phone or CLI retrying with
/// back-off stays far below 10 a second. A flood past it is refused before any other work.
pub const DEFAULT_REQUESTS_PER_WINDOW: u32 = 100;
pub const DEFAULT_REQUEST_WINDOW_SECS: u64 = 10;

/// A heavy honest day: 50 edits, each with its three uploads (original, mask, style
/// reference), is 150 slots.
pub const DEFAULT_UPLOAD_SLOTS_PER_DAY: u32 = 150;
/// 1 GiB: those 50 edits with a 12 MP original (≈ 8 MiB as JPEG, more as PNG), a mask and a
/// style reference (≈ 4 MiB) each come to ≈ 650 MiB; an abuser's month at the cap stores
/// ≈ 30 GiB (≈ $0.70 of S3 Standard) before the lifecycle deletes it.
pub const DEFAULT_UPLOAD_BYTES_PER_DAY: u64 = 1 << 30;
/// The largest single upload (an original); a day's byte limit below it would refuse every photo.
pub const MAX_UPLOAD_BYTES: u64 = 20 * 1024 * 1024;

/// How much longer each re-send of a queued job waits than the one before.
pub const REQUEUE_BACKOFF_FACTOR: u64 = 4;

impl Limits {
    /// How long after a queued job's `dispatches`-th dispatch (the submit's is the first) the
    /// sweeper sends it again: `requeue_after_secs`, four times longer after each re-send, at
    /// most `requeue_max_secs`. A job waiting in a backlog thus gets about one more message
    /// per fourfold wait (1, 5, 20, 35, 50 minutes with the defaults), not one a minute.
    pub fn resend_wait(&self, dispatches: u32) -> std::time::Duration {
        let mut wait = self.requeue_after_secs;
        for _ in 1..dispatches.max(1) {
            wait = wait.saturating_mul(REQUEUE_BACKOFF_FACTOR);
            if wait >= self.requeue_max_secs {
                break;
            }
        }
        std::time::Duration::from_secs(wait.min(self.requeue_max_secs))
    }

    /// How long after its submit a new job's first re-send is due.
    pub fn first_resend_after(&self) -> std::time::Duration {
        self.resend_wait(1)
    }

    /// How long a job may stay queued before the sweeper fails and refunds it.
    pub fn queued_deadline(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.queued_deadline_secs)
    }
}

/// The consumer's and sweeper's timings, read together because each bounds the next.
struct Timings {
    consumer_timeout_secs: u64,
    stuck_after_secs: u64,
    requeue_after_secs: u64,
    requeue_max_secs: u64,
    queued_deadline_secs: u64,
}

impl Timings {
    pub(super) fn from_lookup(get: &Get<'_>) -> Result<Timings, ConfigError> {
        let number = |name, default, min, max| number(get, name, default, min, max);
        let defaults = Limits::default();
        let consumer_timeout_secs = number(
            env::CONSUMER_TIMEOUT_SECS,
            defaults.consumer_timeout_secs,
            1,
            900,
        )?;
        let stuck_after_secs =
            number(env::STUCK_AFTER_SECS, defaults.stuck_after_secs, 60, 86_400)?;
        if stuck_after_secs <= consumer_timeout_secs {
            // A live consumer must never be swept: its job would be refunded while it pays.
            return Err(ConfigError::Invalid {
                name: env::STUCK_AFTER_SECS,
                reason: format!(
                    "{stuck_after_secs} s must be longer than the consumer timeout ({consumer_timeout_secs} s)"
                ),
            });
        }
        let requeue_after_secs = number(
            env::REQUEUE_AFTER_SECS,
            defaults.requeue_after_secs,
            10,
            3600,
        )?;
        let requeue_max_secs =
            number(env::REQUEUE_MAX_SECS, defaults.requeue_max_secs, 10, 86_400)?;
        if requeue_max_secs < requeue_after_secs {
            return Err(ConfigError::Invalid {
                name: env::REQUEUE_MAX_SECS,
                reason: format!(
                    "{requeue_max_secs} s is shorter than the first re-send wait ({requeue_after_secs} s)"
                ),
            });
        }
        let queued_deadline_secs = number(
            env::QUEUED_DEADLINE_SECS,
            defaults.queued_deadline_secs,
            60,
            345_600,
        )?;
        if queued_deadline_secs <= requeue_after_secs {
            // Every job would be failed before its lost doorbell could ever be rung again.
            return Err(ConfigError::Invalid {
                name: env::QUEUED_DEADLINE_SECS,
                reason: format!(
                    "{queued_deadline_secs} s must be longer than the first re-send wait ({requeue_after_secs} s)"
                ),
            });
        }
        Ok(Timings {
            consumer_timeout_secs,
            stuck_after_secs,
            requeue_after_secs,
            requeue_max_secs,
            queued_deadline_secs,
        })
    }
}

impl Limits {
    pub(super) fn from_lookup(get: &Get<'_>) -> Result<Limits, ConfigError> {
        let number = |name, default, min, max| number(get, name, default, min, max);
        let defaults = Limits::default();
        let Timings {
            consumer_timeout_secs,
            stuck_after_secs,
            requeue_after_secs,
            requeue_max_secs,
            queued_deadline_secs,
        } = Timings::from_lookup(get)?;
        let (requests_per_window, request_window_secs) = request_budget(get)?;
        Ok(Limits {
            max_in_flight: u32::try_from(number(
                env::MAX_IN_FLIGHT,
                defaults.max_in_flight.into(),
                1,
                10_000,
            )?)
            .unwrap_or(defaults.max_in_flight),
            upload_url_ttl_secs: number(
                env::UPLOAD_URL_TTL_SECS,
                defaults.upload_url_ttl_secs,
                30,
                3600,
            )?,
            upload_slots_per_day: u32::try_from(number(
                env::UPLOAD_SLOTS_PER_DAY,
                defaults.upload_slots_per_day.into(),
                1,
                1_000_000,
            )?)
            .unwrap_or(defaults.upload_slots_per_day),
            upload_bytes_per_day: number(
                env::UPLOAD_BYTES_PER_DAY,
                defaults.upload_bytes_per_day,
                MAX_UPLOAD_BYTES,
                1 << 40,
            )?,
            result_url_ttl_secs: number(
                env::RESULT_URL_TTL_SECS,
                defaults.result_url_ttl_secs,
                30,
                3600,
            )?,
            result_retention_days: u32::try_from(number(
                env::RESULT_RETENTION_DAYS,
                defaults.result_retention_days.into(),
                1,
                3650,
            )?)
            .unwrap_or(defaults.result_retention_days),
            daily_cap_micros: Micros::from_unsigned(u128::from(number(
                env::DAILY_CAP_MICROS,
                defaults.daily_cap_micros.get().unsigned_abs(),
                0,
                1_000_000_000_000,
            )?)),
            user_daily_share_micros: Micros::from_unsigned(u128::from(number(
                env::USER_DAILY_SHARE_MICROS,
                defaults.user_daily_share_micros.get().unsigned_abs(),
                1,
                1_000_000_000_000,
            )?)),
            consumer_timeout_secs,
            stuck_after_secs,
            requeue_after_secs,
            requeue_max_secs,
            queued_deadline_secs,
            breaker: breaker(get)?,
            requests_per_window,
            request_window_secs,
        })
    }
}

/// [`env::REQUESTS_PER_WINDOW`] and [`env::REQUEST_WINDOW_SECS`].
fn request_budget(get: &Get<'_>) -> Result<(u32, u64), ConfigError> {
    let defaults = Limits::default();
    let per_window = number(
        get,
        env::REQUESTS_PER_WINDOW,
        defaults.requests_per_window.into(),
        1,
        1_000_000,
    )?;
    let secs = number(
        get,
        env::REQUEST_WINDOW_SECS,
        defaults.request_window_secs,
        1,
        3600,
    )?;
    Ok((
        u32::try_from(per_window).unwrap_or(defaults.requests_per_window),
        secs,
    ))
}

/// [`env::BREAKER_FAILURES`] and [`env::BREAKER_COOLDOWN_SECS`].
fn breaker(get: &Get<'_>) -> Result<BreakerSettings, ConfigError> {
    let defaults = BreakerSettings::default();
    let failures = number(
        get,
        env::BREAKER_FAILURES,
        defaults.failures.into(),
        1,
        1_000,
    )?;
    let cooldown_secs = number(
        get,
        env::BREAKER_COOLDOWN_SECS,
        u64::try_from(defaults.cooldown_ms / 1_000).unwrap_or(60),
        1,
        3_600,
    )?;
    Ok(BreakerSettings {
        failures: u32::try_from(failures).unwrap_or(defaults.failures),
        cooldown_ms: i64::try_from(cooldown_secs.saturating_mul(1_000))
            .unwrap_or(defaults.cooldown_ms),
    })
}
