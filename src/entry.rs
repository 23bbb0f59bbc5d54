//! The command line's asynchronous commands, as the binary starts them:
//! each boxed here, in the library, as a `dyn Future`.
//!
//! Why: an `async fn`'s state machine is compiled in the crate that polls
//! it. Awaited directly in `main.rs`, the daemon's whole tree of state
//! machines would be compiled a second time, into the binary, and a fresh
//! release build would spend most of a minute on it after the library.
//! Boxed here, the binary polls them through a vtable made in this crate
//! and compiles none of them.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;

use crate::config::Config;
use crate::daemon::Transport;

/// A command running on the binary's runtime.
pub type Entry<T> = Pin<Box<dyn Future<Output = anyhow::Result<T>> + Send>>;

/// `serialgate serve`: the daemon, until it ends or is told to stop.
pub fn serve(config: Config, config_path: Option<PathBuf>, transport: Transport) -> Entry<()> {
    Box::pin(crate::daemon::serve(config, config_path, transport))
}

/// `serialgate demo`.
pub fn demo() -> Entry<()> {
    Box::pin(crate::demo::run())
}

/// `serialgate console`, with its own exit status.
pub fn console(options: crate::console::client::Options) -> Entry<ExitCode> {
    Box::pin(crate::console::client::run(options))
}

/// `serialgate simulate`: a simulated device of `profile` on a
/// pseudo-terminal (linked at `link`), until a termination signal.
pub fn simulate(
    profile: String,
    link: Option<PathBuf>,
    options: serialgate_sim::SimOptions,
) -> Entry<()> {
    Box::pin(async move {
        let profile: serialgate_sim::Profile =
            profile.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
        let device = serialgate_sim::spawn_with(profile, link, options).await?;
        eprintln!(
            "simulated device on {} (Ctrl-C to stop)",
            device.path().display()
        );
        crate::daemon::lifecycle::terminated().await;
        Ok(())
    })
}
