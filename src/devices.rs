//! Serial devices present on this machine, with USB identities and their
//! stable `/dev/serial/by-id` names (for `list-ports` and `list_ports`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;

/// Where udev publishes stable names of USB serial adapters.
const BY_ID_DIR: &str = "/dev/serial/by-id";

/// One serial device found on the machine.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SerialDevice {
    /// Kernel device path, e.g. /dev/ttyUSB0.
    pub path: String,
    /// usb, pci, bluetooth or unknown.
    pub kind: String,
    /// USB vendor id, hex.
    pub vid: Option<String>,
    /// USB product id, hex.
    pub pid: Option<String>,
    /// USB manufacturer string.
    pub manufacturer: Option<String>,
    /// USB product string.
    pub product: Option<String>,
    /// USB serial number (tells identical adapters apart).
    pub serial_number: Option<String>,
    /// The stable /dev/serial/by-id path: use it in the config.
    pub by_id: Option<String>,
}

/// Lists serial devices; an unreadable sysfs yields an empty list.
pub fn list() -> Vec<SerialDevice> {
    let by_id = by_id_links(Path::new(BY_ID_DIR));
    let ports = serialport::available_ports().unwrap_or_default();
    ports
        .into_iter()
        .map(|p| {
            let by_id = std::fs::canonicalize(&p.port_name)
                .ok()
                .and_then(|real| by_id.get(&real).cloned());
            let mut dev = SerialDevice {
                path: p.port_name,
                kind: "unknown".into(),
                vid: None,
                pid: None,
                manufacturer: None,
                product: None,
                serial_number: None,
                by_id,
            };
            match p.port_type {
                serialport::SerialPortType::UsbPort(usb) => {
                    dev.kind = "usb".into();
                    dev.vid = Some(format!("{:04x}", usb.vid));
                    dev.pid = Some(format!("{:04x}", usb.pid));
                    dev.manufacturer = usb.manufacturer;
                    dev.product = usb.product;
                    dev.serial_number = usb.serial_number;
                }
                serialport::SerialPortType::PciPort => dev.kind = "pci".into(),
                serialport::SerialPortType::BluetoothPort => dev.kind = "bluetooth".into(),
                serialport::SerialPortType::Unknown => {}
            }
            dev
        })
        .collect()
}

/// Maps each by-id link's target to the link.
fn by_id_links(dir: &Path) -> HashMap<PathBuf, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let link = e.path();
            let target = std::fs::canonicalize(&link).ok()?;
            Some((target, link.to_string_lossy().into_owned()))
        })
        .collect()
}
