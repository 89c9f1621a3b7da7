//! Time in one place: stored times are RFC 3339 UTC strings with millisecond precision, so
//! they sort lexicographically in DynamoDB sort keys.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// A point in time, UTC.
pub type Instant = OffsetDateTime;

/// The wall clock.
pub fn now() -> Instant {
    OffsetDateTime::now_utc()
}

/// `2026-11-29T20:07:24.123Z`: fixed width, so string order is time order.
pub fn format(t: Instant) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let millis = t.millisecond();
    let t = t.replace_nanosecond(0).unwrap_or(t);
    let base = t.format(&Rfc3339).unwrap_or_default();
    // Rfc3339 renders `...:24Z`; splice milliseconds in before the `Z`.
    match base.strip_suffix('Z') {
        Some(stem) => format!("{stem}.{millis:03}Z"),
        None => base,
    }
}

/// Parses a stored time.
pub fn parse(s: &str) -> Option<Instant> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

/// The UTC day a time falls in, `YYYY-MM-DD`.
pub fn day_of(t: Instant) -> String {
    format_day(t.to_offset(time::UtcOffset::UTC).date())
}

/// A date as `YYYY-MM-DD`.
pub fn format_day(d: time::Date) -> String {
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// The next UTC midnight after `t`, when every per-day limit (budget share, upload quota,
/// remembered readiness answers) starts over; `None` only at the end of the calendar.
pub fn next_utc_midnight(t: Instant) -> Option<Instant> {
    let t = t.to_offset(time::UtcOffset::UTC);
    t.date().next_day().map(|d| d.midnight().assume_utc())
}

/// Time left until the next UTC midnight (when per-day limits start over), at least 1 s.
pub fn until_next_utc_day(t: Instant) -> std::time::Duration {
    let secs = next_utc_midnight(t).map_or(86_400, |n| (n - t).whole_seconds().max(1));
    std::time::Duration::from_secs(secs.unsigned_abs())
}

/// [`until_next_utc_day`] in whole seconds, as a `Retry-After` header carries it.
pub fn retry_after_next_utc_day(t: Instant) -> u32 {
    u32::try_from(until_next_utc_day(t).as_secs()).unwrap_or(86_400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_utc_day_starts_at_midnight() {
        let cases = [
            (time::macros::datetime!(2026-12-01 00:00:00 UTC), 86_400),
            (time::macros::datetime!(2026-12-01 23:59:59.5 UTC), 1),
            (time::macros::datetime!(2026-12-31 22:00:00 UTC), 7_200),
            (time::macros::datetime!(2026-12-01 01:00:00 +02:00), 3_600),
            (time::macros::datetime!(2026-12-01 12:00:00 UTC), 43_200),
            (time::macros::datetime!(2026-12-01 23:59:59.999 UTC), 1),
            (time::macros::datetime!(2028-02-28 23:59:00 UTC), 60),
        ];
        for (t, secs) in cases {
            assert_eq!(until_next_utc_day(t).as_secs(), secs, "{t}");
        }
    }

    #[test]
    fn formatted_times_are_fixed_width_and_round_trip() {
        let t = time::macros::datetime!(2026-01-02 03:04:05.006 UTC);
        let s = format(t);
        assert_eq!(s, "2026-01-02T03:04:05.006Z");
        assert_eq!(parse(&s), Some(t));
    }
}
