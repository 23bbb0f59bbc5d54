//! The config file (TOML): read, checked and resolved into a [`Config`] of
//! plain values. This file is the module map and the public re-exports;
//! each section and step has its own file:
//!
//! - `load`: the resolved [`Config`], the file read, parsed and checked;
//! - `checks`: globs and paths next to the config, checked alike by the
//!   sections; `access`: the auth mode and what a token may do;
//! - `ad_hoc_port`: a port outside the config resolved against it;
//! - `raw`: the serde shapes the text is read into, mirroring the file
//!   (unknown keys are errors, values a check must point at are
//!   [`toml::Spanned`]);
//! - `server`: the `[server]` section and the rules for serving HTTP;
//! - `tokens`: the `[[tokens]]` and their secret files; `people`: the
//!   `[[people]]` of the SSH door and their `authorized_keys` files;
//! - `resolve`: user presets (`extends` chains) and configured ports, into
//!   [`PortConfig`]s;
//! - `diagnostics`: every error a [`ConfigError`] at `file:line:col` of the
//!   offending key or value, naming its key; `first_mistakes`: the fix for
//!   a newcomer's usual slips (a list of ports, a key outside its table, a
//!   misspelt preset);
//! - `summary`: what `check-config` shows of a config ([`Config::summary`]);
//! - [`fleet`]: the `[fleet]` section, the NATS servers and site this
//!   gateway joins a fleet as;
//! - [`presets`]: the built-in presets that user presets extend;
//! - [`policies`]: command policies (`[policies.NAME]`), the built-in
//!   ones and each family's dangerous commands;
//! - [`power`]: power controllers (`[power.NAME]`) and the outlets a port
//!   names.

mod access;
mod ad_hoc_port;
mod auto_reply;
pub mod breaks;
mod checks;
mod credentials;
mod diagnostics;
mod first_mistakes;
pub mod fleet;
mod load;
pub mod modes;
mod people;
pub mod policies;
pub mod power;
mod power_bmc;
pub mod power_secret;
pub mod power_snmp;
pub mod presets;
mod raw;
mod resolve;
mod server;
mod summary;
#[cfg(test)]
mod test_support;
pub mod tls;
mod tokens;
pub mod watches;
pub mod webhook;

pub use self::access::{AuthMode, TokenAccess};
pub use self::credentials::Credentials;
pub use self::diagnostics::ConfigError;
pub use self::load::{Config, MAX_CONFIG_BYTES};
pub use self::modes::{DeviceMode, ModePrompts, ModeRules};
pub use self::people::PersonConfig;
pub use self::policies::{Guardrails, Policy};
pub use self::raw::parse_size;
pub use self::resolve::PortConfig;
pub use self::server::{
    DEFAULT_ADHOC_DEVICES, DEFAULT_DOWN_AFTER, DEFAULT_RETENTION, MAX_DOWN_AFTER, MAX_RETENTION,
    MIN_RETENTION, ServerConfig, check_http_auth, check_listen, listen_is_loopback,
};
pub use self::summary::Summary;
pub use self::tls::ListenerTls;
pub use self::tokens::{LONG_SECRET_BYTES, TokenConfig, TokenSecret};
