//! Opening a serial device with tokio-serial, split into the halves the
//! reader task and the writer use.

use tokio::io::{ReadHalf, WriteHalf};
use tokio_serial::{SerialPortBuilderExt, SerialStream};

use crate::settings::{FlowControl, LineSettings, Parity};

/// The half of an open device the reader task owns.
pub type DeviceReader = ReadHalf<SerialStream>;
/// The half of an open device writes go through.
pub type DeviceWriter = WriteHalf<SerialStream>;

/// Opens `path` with the given line settings, exclusively (TIOCEXCL), so
/// no other program can open it behind the gateway's back.
pub fn open_device(
    path: &str,
    line: &LineSettings,
) -> std::io::Result<(DeviceReader, DeviceWriter)> {
    let data_bits = match line.data_bits {
        5 => tokio_serial::DataBits::Five,
        6 => tokio_serial::DataBits::Six,
        7 => tokio_serial::DataBits::Seven,
        _ => tokio_serial::DataBits::Eight,
    };
    let parity = match line.parity {
        Parity::None => tokio_serial::Parity::None,
        Parity::Even => tokio_serial::Parity::Even,
        Parity::Odd => tokio_serial::Parity::Odd,
    };
    let stop_bits = match line.stop_bits {
        2 => tokio_serial::StopBits::Two,
        _ => tokio_serial::StopBits::One,
    };
    let flow = match line.flow_control {
        FlowControl::None => tokio_serial::FlowControl::None,
        FlowControl::Hardware => tokio_serial::FlowControl::Hardware,
        FlowControl::Software => tokio_serial::FlowControl::Software,
    };
    let stream = tokio_serial::new(path, line.baud)
        .data_bits(data_bits)
        .parity(parity)
        .stop_bits(stop_bits)
        .flow_control(flow)
        .open_native_async()
        .map_err(std::io::Error::from)?;
    Ok(tokio::io::split(stream))
}
