//! Structured output: a command's cleaned output run through the TextFSM
//! template the ntc-templates index assigns to the port's platform and the
//! command, as Netmiko's `use_textfsm` does (`send_command` with `parse`).
//!
//! The engine is `textfsm-core` (the engine of the `textfsm-rust` crate),
//! whose regexes are `fancy-regex`: the `regex` crate's linear-time engine
//! unless a pattern needs look-around, then a backtracking one that stops
//! at a million steps per match. `shipped` embeds the ntc-templates set,
//! `user_templates` reads `[server] templates_dir`, `library` finds the
//! template for a command, `cache` keeps the compiled ones in use, and
//! `records` runs a template within its bounds.

pub mod cache;
pub mod library;
pub mod records;
pub mod shipped;
pub mod user_templates;

pub use library::{Found, find};
pub use records::{Outcome, parse_output};
pub use user_templates::UserTemplates;
