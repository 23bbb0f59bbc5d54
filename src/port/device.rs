//! Opening a serial device with tokio-serial, split into the halves the
//! reader task and the writer use, plus a control handle on the same tty
//! for BREAK, modem lines and live line settings.
//!
//! # The control handle
//!
//! After `tokio::io::split` the stream is no longer ours to configure, so
//! the device is opened as a blocking `TTYPort` first and duplicated
//! (`try_clone_native`, an `F_DUPFD_CLOEXEC` of the same open file) before
//! the original becomes the async stream. The duplicate is the
//! [`DeviceControl`]: termios changes made through it apply to the tty the
//! stream reads, and it lives exactly as long as the two halves (the reader
//! task installs and drops all three together).
//!
//! Dropping a `TTYPort` clears `TIOCEXCL` on the tty (DESIGN §7), which
//! would let another program open the console behind the gateway's back.
//! `DeviceControl` therefore never drops its `TTYPort`: it closes the
//! descriptor with `nix::unistd::close`, which takes the port through
//! `IntoRawFd` and skips that destructor. Exclusivity stays as the open set
//! it until the stream itself closes.
//!
//! BREAK and the modem lines use the ioctls directly (not serialport's
//! wrappers) so that the errno survives: `ENOTTY` from a pseudo-terminal
//! must become "this device has no modem control lines", not a generic
//! failure.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use serialport::{SerialPort, TTYPort};
use tokio::io::{ReadHalf, WriteHalf};
use tokio_serial::SerialStream;

use super::control::{LineControl, ModemLine, ModemStatus};
use crate::settings::{FlowControl, LineSettings, Parity};

/// The half of an open device the reader task owns.
pub type DeviceReader = ReadHalf<SerialStream>;
/// The half of an open device writes go through.
pub type DeviceWriter = WriteHalf<SerialStream>;

mod ioctl {
    nix::ioctl_none_bad!(tiocsbrk, libc::TIOCSBRK);
    nix::ioctl_none_bad!(tioccbrk, libc::TIOCCBRK);
    nix::ioctl_write_ptr_bad!(tiocmbis, libc::TIOCMBIS, libc::c_int);
    nix::ioctl_write_ptr_bad!(tiocmbic, libc::TIOCMBIC, libc::c_int);
    nix::ioctl_read_bad!(tiocmget, libc::TIOCMGET, libc::c_int);
}

/// Opens `path` with the given line settings, exclusively (TIOCEXCL), so
/// no other program can open it behind the gateway's back. Returns the
/// reader and writer halves and a control handle on the same tty.
pub fn open_device(
    path: &str,
    line: &LineSettings,
) -> io::Result<(DeviceReader, DeviceWriter, DeviceControl)> {
    let tty = tokio_serial::new(path, line.baud)
        .data_bits(data_bits(line.data_bits))
        .parity(parity(line.parity))
        .stop_bits(stop_bits(line.stop_bits))
        .flow_control(flow_control(line.flow_control))
        .open_native()
        .map_err(io::Error::from)?;
    let control = DeviceControl {
        tty: Some(tty.try_clone_native().map_err(io::Error::from)?),
    };
    let stream = SerialStream::try_from(tty).map_err(io::Error::from)?;
    let (reader, writer) = tokio::io::split(stream);
    Ok((reader, writer, control))
}

fn data_bits(bits: u8) -> tokio_serial::DataBits {
    match bits {
        5 => tokio_serial::DataBits::Five,
        6 => tokio_serial::DataBits::Six,
        7 => tokio_serial::DataBits::Seven,
        _ => tokio_serial::DataBits::Eight,
    }
}

fn parity(parity: Parity) -> tokio_serial::Parity {
    match parity {
        Parity::None => tokio_serial::Parity::None,
        Parity::Even => tokio_serial::Parity::Even,
        Parity::Odd => tokio_serial::Parity::Odd,
    }
}

fn stop_bits(bits: u8) -> tokio_serial::StopBits {
    match bits {
        2 => tokio_serial::StopBits::Two,
        _ => tokio_serial::StopBits::One,
    }
}

fn flow_control(flow: FlowControl) -> tokio_serial::FlowControl {
    match flow {
        FlowControl::None => tokio_serial::FlowControl::None,
        FlowControl::Hardware => tokio_serial::FlowControl::Hardware,
        FlowControl::Software => tokio_serial::FlowControl::Software,
    }
}

/// A second descriptor on an open device's tty, for the operations the
/// async stream does not offer (see the module docs for why it is a
/// duplicate and how it is closed).
#[derive(Debug)]
pub struct DeviceControl {
    /// Always `Some` until dropped.
    tty: Option<TTYPort>,
}

impl DeviceControl {
    fn tty(&mut self) -> io::Result<&mut TTYPort> {
        self.tty
            .as_mut()
            .ok_or_else(|| io::Error::other("control handle already closed"))
    }

    fn fd(&self) -> io::Result<RawFd> {
        self.tty
            .as_ref()
            .map(AsRawFd::as_raw_fd)
            .ok_or_else(|| io::Error::other("control handle already closed"))
    }
}

impl Drop for DeviceControl {
    fn drop(&mut self) {
        if let Some(tty) = self.tty.take() {
            // Through `IntoRawFd`: closes the descriptor without the
            // `TTYPort` destructor's TIOCNXCL.
            let _ = nix::unistd::close(tty);
        }
    }
}

fn errno(result: nix::Result<libc::c_int>) -> io::Result<()> {
    result.map(drop).map_err(io::Error::from)
}

impl LineControl for DeviceControl {
    fn set_break(&mut self, on: bool) -> io::Result<()> {
        let fd = self.fd()?;
        // SAFETY: `fd` is an open descriptor this handle owns; TIOCSBRK and
        // TIOCCBRK take no argument.
        errno(unsafe {
            if on {
                ioctl::tiocsbrk(fd)
            } else {
                ioctl::tioccbrk(fd)
            }
        })
    }

    fn write_line(&mut self, line: ModemLine, level: bool) -> io::Result<()> {
        let fd = self.fd()?;
        let bits: libc::c_int = match line {
            ModemLine::Dtr => libc::TIOCM_DTR,
            ModemLine::Rts => libc::TIOCM_RTS,
        };
        // SAFETY: `fd` is an open descriptor this handle owns and `bits`
        // outlives the call, which only reads it.
        errno(unsafe {
            if level {
                ioctl::tiocmbis(fd, &bits)
            } else {
                ioctl::tiocmbic(fd, &bits)
            }
        })
    }

    fn modem_status(&mut self) -> io::Result<ModemStatus> {
        let fd = self.fd()?;
        let mut bits: libc::c_int = 0;
        // SAFETY: `fd` is an open descriptor this handle owns and `bits` is
        // a valid `c_int` the call writes.
        errno(unsafe { ioctl::tiocmget(fd, &mut bits) })?;
        let on = |mask: libc::c_int| bits & mask != 0;
        Ok(ModemStatus {
            dtr: on(libc::TIOCM_DTR),
            rts: on(libc::TIOCM_RTS),
            cts: on(libc::TIOCM_CTS),
            dsr: on(libc::TIOCM_DSR),
            cd: on(libc::TIOCM_CAR),
            ri: on(libc::TIOCM_RNG),
        })
    }

    fn apply_settings(&mut self, line: &LineSettings) -> io::Result<()> {
        let tty = self.tty()?;
        tty.set_data_bits(data_bits(line.data_bits))?;
        tty.set_parity(parity(line.parity))?;
        tty.set_stop_bits(stop_bits(line.stop_bits))?;
        tty.set_flow_control(flow_control(line.flow_control))?;
        tty.set_baud_rate(line.baud)?;
        Ok(())
    }
}
