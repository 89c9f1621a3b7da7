//! The circuit breaker of one model provider (docs/design.md rule 15), as pure state and rules:
//! closed → open after `failures` consecutive definite failures; open for a cool-down, then
//! half-open, where exactly one probe call is let through (the first to claim it); a probe's
//! success closes it, its definite failure opens it again. An ambiguous outcome changes
//! nothing. The store keeps one row per provider so every consumer shares it, and applies each
//! rule below as one conditional write.

/// When a provider's breaker opens and how long it stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    /// Consecutive definite failures that open it.
    pub failures: u32,
    /// How long it stays open before a probe may go through, and how long a claimed probe
    /// holds the half-open breaker before another may be claimed (a probe whose outcome was
    /// never recorded, or was ambiguous, must not keep it half-open for ever).
    pub cooldown_ms: i64,
}

impl Default for BreakerSettings {
    /// Five definite failures in a row: a provider's isolated 5xx does not open it, an outage
    /// does within a handful of jobs; one minute open, so a short outage costs about a minute.
    fn default() -> BreakerSettings {
        BreakerSettings {
            failures: 5,
            cooldown_ms: 60_000,
        }
    }
}

/// A provider's breaker as stored; times in Unix milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BreakerState {
    /// Consecutive definite failures while closed.
    pub failures: u32,
    /// When it opened (absent: closed).
    pub opened_ms: Option<i64>,
    /// When the half-open breaker's probe was claimed.
    pub probe_ms: Option<i64>,
}

/// Where the breaker stands at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Closed,
    Open,
    HalfOpen,
}

/// What a call may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Closed: call.
    Call,
    /// Half-open with the probe free: claim it, and call only if the claim wins.
    Probe,
    /// Open, or half-open with the probe taken: go straight to the next provider.
    Skip,
}

/// How a call to the provider ended, for the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    Success,
    /// A failure proving no generation happened (`ModelError::is_definite`).
    Definite,
    /// Anything else (timeout after sending, dropped mid-answer, malformed, a 4xx refusal).
    Other,
}

/// A change of phase, logged and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Opened,
    HalfOpen,
    Closed,
}

impl Transition {
    /// The `Transition` metric dimension and the log event's suffix.
    pub fn as_str(self) -> &'static str {
        match self {
            Transition::Opened => "opened",
            Transition::HalfOpen => "half_open",
            Transition::Closed => "closed",
        }
    }
}

impl BreakerState {
    /// The phase at `now_ms`.
    pub fn phase(&self, now_ms: i64, s: &BreakerSettings) -> Phase {
        match self.opened_ms {
            None => Phase::Closed,
            Some(at) if now_ms < at.saturating_add(s.cooldown_ms) => Phase::Open,
            Some(_) => Phase::HalfOpen,
        }
    }

    /// Whether the probe can be claimed at `now_ms`: half-open, and no probe claimed within
    /// the last cool-down.
    pub fn probe_free(&self, now_ms: i64, s: &BreakerSettings) -> bool {
        self.phase(now_ms, s) == Phase::HalfOpen
            && self
                .probe_ms
                .is_none_or(|at| now_ms >= at.saturating_add(s.cooldown_ms))
    }

    /// What a call may do at `now_ms`.
    pub fn admit(&self, now_ms: i64, s: &BreakerSettings) -> Admit {
        match self.phase(now_ms, s) {
            Phase::Closed => Admit::Call,
            Phase::HalfOpen if self.probe_free(now_ms, s) => Admit::Probe,
            Phase::Open | Phase::HalfOpen => Admit::Skip,
        }
    }

    /// Claims the probe at `now_ms` (the conditional write's rule): `None` when it is not free.
    pub fn claim_probe(&self, now_ms: i64, s: &BreakerSettings) -> Option<BreakerState> {
        self.probe_free(now_ms, s).then_some(BreakerState {
            probe_ms: Some(now_ms),
            ..*self
        })
    }

    /// The state after a call ended with `outcome` at `now_ms`; `probe` is the claim time of
    /// the probe this call was, if it was one. A call that started before the breaker opened
    /// and ends after changes nothing; nor does an ambiguous outcome.
    pub fn after(
        &self,
        outcome: CallOutcome,
        probe: Option<i64>,
        now_ms: i64,
        s: &BreakerSettings,
    ) -> (BreakerState, Option<Transition>) {
        let mine = probe.is_some() && probe == self.probe_ms;
        match (outcome, self.opened_ms, mine) {
            (CallOutcome::Success, Some(_), true) => {
                (BreakerState::default(), Some(Transition::Closed))
            }
            (CallOutcome::Definite, Some(_), true) => (
                BreakerState {
                    failures: 0,
                    opened_ms: Some(now_ms),
                    probe_ms: None,
                },
                Some(Transition::Opened),
            ),
            (CallOutcome::Success, None, _) => (BreakerState::default(), None),
            (CallOutcome::Definite, None, _) => {
                let failures = self.failures.saturating_add(1);
                if failures >= s.failures {
                    let opened = BreakerState {
                        failures: 0,
                        opened_ms: Some(now_ms),
                        probe_ms: None,
                    };
                    (opened, Some(Transition::Opened))
                } else {
                    (BreakerState { failures, ..*self }, None)
                }
            }
            _ => (*self, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: BreakerSettings = BreakerSettings {
        failures: 3,
        cooldown_ms: 1_000,
    };

    fn fail(state: BreakerState, at: i64) -> (BreakerState, Option<Transition>) {
        state.after(CallOutcome::Definite, None, at, &S)
    }

    #[test]
    fn consecutive_definite_failures_open_it_and_a_success_between_them_starts_the_count_over() {
        let (one, _) = fail(BreakerState::default(), 0);
        let (two, _) = fail(one, 1);
        let (reset, t) = two.after(CallOutcome::Success, None, 2, &S);
        assert_eq!((reset, t), (BreakerState::default(), None));
        let (two, _) = fail(fail(reset, 3).0, 4);
        assert_eq!(
            two.admit(4, &S),
            Admit::Call,
            "two failures leave it closed"
        );
        let (open, t) = fail(two, 5);
        assert_eq!(t, Some(Transition::Opened));
        assert_eq!(open.phase(5, &S), Phase::Open);
        assert_eq!(open.admit(1_004, &S), Admit::Skip, "open for the cool-down");
    }

    #[test]
    fn an_ambiguous_outcome_neither_opens_nor_closes_it() {
        let (two, _) = fail(fail(BreakerState::default(), 0).0, 1);
        for _ in 0..10 {
            assert_eq!(two.after(CallOutcome::Other, None, 2, &S), (two, None));
        }
        let open = fail(two, 3).0;
        let probe = open
            .claim_probe(1_003, &S)
            .unwrap_or_else(|| panic!("free"));
        let (after, t) = probe.after(CallOutcome::Other, Some(1_003), 1_004, &S);
        assert_eq!((after, t), (probe, None), "the probe stays claimed");
        assert_eq!(
            after.admit(1_500, &S),
            Admit::Skip,
            "until its claim expires"
        );
        assert_eq!(after.admit(2_003, &S), Admit::Probe, "then one more probe");
    }

    #[test]
    fn after_the_cool_down_exactly_one_probe_is_let_through() {
        let open = fail(fail(fail(BreakerState::default(), 0).0, 0).0, 0).0;
        assert_eq!(open.admit(999, &S), Admit::Skip);
        assert_eq!(open.admit(1_000, &S), Admit::Probe);
        let claimed = open
            .claim_probe(1_000, &S)
            .unwrap_or_else(|| panic!("free"));
        assert_eq!(
            claimed.claim_probe(1_001, &S),
            None,
            "the second claim loses"
        );
        assert_eq!(claimed.admit(1_001, &S), Admit::Skip);
    }

    #[test]
    fn the_probes_success_closes_it_and_its_definite_failure_opens_it_again() {
        let open = fail(fail(fail(BreakerState::default(), 0).0, 0).0, 0).0;
        let probe = open
            .claim_probe(1_000, &S)
            .unwrap_or_else(|| panic!("free"));
        let (closed, t) = probe.after(CallOutcome::Success, Some(1_000), 1_100, &S);
        assert_eq!(
            (closed, t),
            (BreakerState::default(), Some(Transition::Closed))
        );
        let (again, t) = probe.after(CallOutcome::Definite, Some(1_000), 1_100, &S);
        assert_eq!(t, Some(Transition::Opened));
        assert_eq!(
            again.admit(2_099, &S),
            Admit::Skip,
            "a new cool-down from the probe"
        );
        assert_eq!(again.admit(2_100, &S), Admit::Probe);
    }

    #[test]
    fn calls_that_were_not_the_probe_do_not_move_an_open_breaker() {
        let open = fail(fail(fail(BreakerState::default(), 0).0, 0).0, 0).0;
        for outcome in [
            CallOutcome::Success,
            CallOutcome::Definite,
            CallOutcome::Other,
        ] {
            assert_eq!(
                open.after(outcome, None, 10, &S),
                (open, None),
                "{outcome:?}"
            );
        }
        let probe = open
            .claim_probe(1_000, &S)
            .unwrap_or_else(|| panic!("free"));
        assert_eq!(
            probe.after(CallOutcome::Success, Some(999), 1_001, &S),
            (probe, None),
            "an expired probe's late answer"
        );
    }

    #[test]
    fn transitions_are_named_as_the_alarm_and_the_logs_read_them() {
        // The provider alarm watches `Transition=opened` (infra/lib/models.ts) and the runbook
        // greps `provider_breaker_closed`: a renamed transition would silence both.
        assert_eq!(Transition::Opened.as_str(), "opened");
        assert_eq!(Transition::HalfOpen.as_str(), "half_open");
        assert_eq!(Transition::Closed.as_str(), "closed");
    }
}
