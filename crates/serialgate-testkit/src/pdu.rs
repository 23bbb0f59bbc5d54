//! The PDU the kit plays behind a real power server (NUT's upsd in
//! [`crate::nut`], net-snmp's snmpd in [`crate::snmp`]): its outlet
//! table, and the watcher that wires an outlet to a simulated device, so
//! that an outlet switched off silences the device and one switched on
//! boots it ([`serialgate_sim::SimHandle::power_off`], `power_on`).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serialgate_sim::SimHandle;

/// The played PDU's outlets by number, each on or off. A cheap clonable
/// handle: the server's side switches them, the test reads them.
#[derive(Clone)]
pub struct Outlets(Arc<Mutex<BTreeMap<u32, bool>>>);

impl Outlets {
    /// Outlets `numbers`, all on.
    pub fn new(numbers: &[u32]) -> Outlets {
        Outlets(Arc::new(Mutex::new(
            numbers.iter().map(|&n| (n, true)).collect(),
        )))
    }

    /// Outlet `n`'s state, `None` if the PDU has no such outlet.
    pub fn get(&self, n: u32) -> Option<bool> {
        self.0.lock().unwrap().get(&n).copied()
    }

    /// Switches outlet `n`; false if the PDU has no such outlet.
    pub fn set(&self, n: u32, on: bool) -> bool {
        match self.0.lock().unwrap().get_mut(&n) {
            Some(state) => {
                *state = on;
                true
            }
            None => false,
        }
    }

    /// Every outlet's state.
    pub fn all(&self) -> BTreeMap<u32, bool> {
        self.0.lock().unwrap().clone()
    }
}

/// Writes `text` to `dir/name`, private to the user (as the config's
/// secret files must be), and returns its path.
pub fn private_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the private file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// Follows an outlet and powers a simulated device with it. Dropping it
/// stops following (the device keeps its last power).
pub struct OutletWatcher {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OutletWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OutletWatcher {
    /// Looks at the outlet with `probe` every 100 ms (`Some(on)`, or
    /// `None` when it cannot be seen) and cuts `device`'s power when it
    /// reads off, restores it when on.
    pub fn follow_with<F, Fut>(device: Arc<SimHandle>, probe: F) -> OutletWatcher
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<bool>> + Send,
    {
        let task = tokio::spawn(async move {
            let mut powered = true;
            loop {
                // The servers announce nothing to their clients: look
                // again and again.
                let seen = crate::wait::until_every(
                    Duration::from_secs(3600),
                    Duration::from_millis(100),
                    || {
                        let look = probe();
                        async move {
                            match look.await {
                                Some(true) if !powered => Ok(true),
                                Some(false) if powered => Ok(false),
                                _ => Err(()),
                            }
                        }
                    },
                )
                .await;
                if let Ok(on) = seen {
                    powered = on;
                    if on {
                        device.power_on();
                    } else {
                        device.power_off();
                    }
                }
            }
        });
        OutletWatcher { task }
    }
}
