//! Handlers: extract, parse into domain values, call one service, shape the response.

pub mod account;
pub mod app_store;
pub mod devices;
pub mod edits;
pub mod google_play;
pub mod payments;
pub mod public;
pub mod quotes;
pub mod uploads;
