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

/// What `serialgate list-ports` prints for `devices`: a line per device
/// (path, kind, USB ids, manufacturer, product, serial number), its by-id
/// name indented under it.
pub fn listing(devices: &[SerialDevice]) -> String {
    if devices.is_empty() {
        return "no serial devices found\n".to_owned();
    }
    let mut out = String::new();
    for d in devices {
        let usb = match (&d.vid, &d.pid) {
            (Some(v), Some(p)) => format!(" usb {v}:{p}"),
            _ => String::new(),
        };
        let text = [
            d.manufacturer.as_deref(),
            d.product.as_deref(),
            d.serial_number.as_deref().map(str::trim),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
        out.push_str(&format!("{} [{}]{usb} {text}\n", d.path, d.kind));
        if let Some(by_id) = &d.by_id {
            out.push_str(&format!("    {by_id}\n"));
        }
    }
    out
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

/// An FTDI USB-serial adapter at /dev/ttyUSB0 with `serial` and `by_id`,
/// for the tests of what is made from the device list.
#[cfg(test)]
pub(crate) fn test_adapter(serial: &str, by_id: &str) -> SerialDevice {
    SerialDevice {
        path: "/dev/ttyUSB0".into(),
        kind: "usb".into(),
        vid: Some("0403".into()),
        pid: Some("6001".into()),
        manufacturer: Some("FTDI".into()),
        product: Some("FT232R USB UART".into()),
        serial_number: Some(serial.into()),
        by_id: Some(by_id.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_per_device_and_its_stable_name_under_it() {
        assert_eq!(listing(&[]), "no serial devices found\n");
        let ftdi = test_adapter(
            " A50285BI ",
            "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0",
        );
        let console = SerialDevice {
            path: "/dev/ttyS0".into(),
            kind: "pci".into(),
            vid: None,
            pid: None,
            manufacturer: None,
            product: None,
            serial_number: None,
            by_id: None,
        };
        assert_eq!(
            listing(&[ftdi, console]),
            "/dev/ttyUSB0 [usb] usb 0403:6001 FTDI FT232R USB UART A50285BI\n    /dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0\n/dev/ttyS0 [pci] \n"
        );
    }
}
