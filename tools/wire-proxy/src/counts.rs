//! Requests seen on the wire, by service and operation.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::classify::{Operation, Service};

/// Requests seen, by service and operation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Counts(BTreeMap<Service, BTreeMap<String, u64>>);

impl Counts {
    /// Requests of one operation.
    pub fn get(&self, service: Service, operation: &str) -> u64 {
        self.0
            .get(&service)
            .and_then(|ops| ops.get(operation))
            .copied()
            .unwrap_or(0)
    }

    /// Requests to one service.
    pub fn service(&self, service: Service) -> u64 {
        self.0.get(&service).map_or(0, |ops| ops.values().sum())
    }

    /// Requests to every service but `Other` (the emulator's own endpoints).
    pub fn total(&self) -> u64 {
        self.0
            .iter()
            .filter(|(s, _)| **s != Service::Other)
            .flat_map(|(_, ops)| ops.values())
            .sum()
    }

    /// Every (operation, count), services in order.
    pub fn iter(&self) -> impl Iterator<Item = (Operation, u64)> + '_ {
        self.0.iter().flat_map(|(s, ops)| {
            ops.iter()
                .map(move |(name, n)| (Operation::new(*s, name.clone()), *n))
        })
    }

    /// What was counted after `earlier` (a snapshot of the same proxy).
    pub fn since(&self, earlier: &Counts) -> Counts {
        let mut out = Counts::default();
        for (op, n) in self.iter() {
            let d = n.saturating_sub(earlier.get(op.service, &op.name));
            if d > 0 {
                out.add(&op, d);
            }
        }
        out
    }

    /// Adds every count of `other` (sums over several measured windows).
    pub fn merge(&mut self, other: &Counts) {
        for (op, n) in other.iter() {
            self.add(&op, n);
        }
    }

    pub fn add(&mut self, op: &Operation, n: u64) {
        *self
            .0
            .entry(op.service)
            .or_default()
            .entry(op.name.clone())
            .or_default() += n;
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.iter().map(|(op, n)| format!("{op}={n}")).collect();
        f.write_str(&parts.join(" "))
    }
}
