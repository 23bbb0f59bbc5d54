//! TLS with rustls (the ring provider): TLS 1.3 and 1.2 only.
//!
//! - [`files`]: the PEM files read and checked: the listener's chain and
//!   its private key (private to the daemon's user), a CA file.
//! - [`x509`]: a certificate's subject and expiry for `check-config` and
//!   the log, sans I/O.
//! - [`server`]: the HTTP listener's config, replaced in place on reload.
//! - [`client`]: what the daemon's clients trust: the system's roots or a
//!   CA file.
//!
//! This room imports nothing of the daemon's but the log; the config, the
//! listener, the webhook and the console client ask it.

pub mod client;
pub mod files;
pub mod server;
pub mod x509;
