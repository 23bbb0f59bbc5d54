//! The wait after a BMC took a power command: a server's power changes
//! after the command is answered (seconds later on some BMCs), so a
//! switch reads the state again until it is the one asked for, and a
//! cycle's pause starts from a server that is really off.

use std::future::Future;
use std::time::Duration;

use super::driver::{DriverError, OutletState};

/// The longest a BMC may take to reach the power state it was asked for.
pub const SETTLE: Duration = Duration::from_secs(30);
/// How often the state is read while it settles.
const SETTLE_POLL: Duration = Duration::from_millis(500);

/// Reads the state with `read` until it is `wanted`, for at most
/// [`SETTLE`]; a read that fails ends the wait with its error.
pub async fn settle<F, Fut>(what: &str, wanted: OutletState, mut read: F) -> Result<(), DriverError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<OutletState, DriverError>>,
{
    let until = tokio::time::Instant::now() + SETTLE;
    loop {
        let last = read().await?;
        if last == wanted {
            return Ok(());
        }
        if tokio::time::Instant::now() >= until {
            return Err(DriverError::Refused(format!(
                "the BMC took the command, but {what} still reads {last:?} after {}s, not {wanted:?}; look again with action status",
                SETTLE.as_secs()
            )));
        }
        tokio::time::sleep(SETTLE_POLL).await;
    }
}
