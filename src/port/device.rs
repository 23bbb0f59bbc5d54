//! Opening a port's device: a local serial device with tokio-serial, split
//! into the halves the reader task and the writer use, plus a control
//! handle on the same tty for BREAK, modem lines and live line settings;
//! or a remote console (`tcp://`, `telnet://`, `rfc2217://`, see
//! [`crate::remote`]) over a TCP connection, with a control handle only
//! for `rfc2217://` (`comport.rs`).
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
//! Dropping a `TTYPort` clears `TIOCEXCL` on the tty, which
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
//!
//! # Remote consoles
//!
//! A telnet connection's two halves share a [`TelnetLink`]
//! (`telnet_link.rs`); the reader decodes by it and answers the server's
//! option negotiation through it, and on an `rfc2217://` connection feeds
//! the link's COM-PORT-OPTION state with the server's answers.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use serialport::{SerialPort, TTYPort};
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_serial::SerialStream;

use super::comport::ComPortControl;
use super::comport_link::ComPortLink;
use super::lines::{ControlFuture, LineControl, ModemLine, ModemStatus};
use super::telnet_link::TelnetLink;
use crate::remote::rfc2217::OPT_COM_PORT;
use crate::remote::telnet::Telnet;
use crate::remote::{self, RemoteAddr, Scheme};
use crate::settings::{FlowControl, LineSettings, Parity};

/// The half of an open device the reader task owns.
pub enum DeviceReader {
    /// A local serial device.
    Serial(ReadHalf<SerialStream>),
    /// A raw TCP connection.
    Tcp(OwnedReadHalf),
    /// A telnet connection.
    Telnet(OwnedReadHalf, Arc<TelnetLink>),
}

/// The half of an open device writes go through.
pub enum DeviceWriter {
    /// A local serial device.
    Serial(WriteHalf<SerialStream>),
    /// A raw TCP connection.
    Tcp(OwnedWriteHalf),
    /// A telnet connection.
    Telnet(Arc<TelnetLink>),
}

/// Size of one read from a device.
const READ_CHUNK: usize = 8 * 1024;

thread_local! {
    /// The read buffer, one per runtime thread instead of one per port: a
    /// read fills it and hands the bytes on within the same poll, so no
    /// port holds a buffer while it waits (256 idle ports would otherwise
    /// keep 2 MiB of buffers).
    static READ_BUF: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_CHUNK]);
    /// The data bytes of a telnet read, without the protocol.
    static TELNET_DATA: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl DeviceReader {
    /// Waits for the device's next bytes and hands the data bytes to
    /// `deliver` (for a telnet connection: without the protocol, whose
    /// replies are sent here; `deliver` is not called when a read carried
    /// only protocol). Returns how many bytes were read: 0 is the end of
    /// the stream.
    pub async fn read_data(&mut self, deliver: &mut impl FnMut(&[u8])) -> io::Result<usize> {
        match self {
            DeviceReader::Serial(r) => read_with(r, deliver).await,
            DeviceReader::Tcp(r) => read_with(r, deliver).await,
            DeviceReader::Telnet(r, link) => {
                let mut replies = Vec::new();
                let n = read_with(r, |bytes| {
                    TELNET_DATA.with_borrow_mut(|data| {
                        data.clear();
                        {
                            let mut state = link.state();
                            state.receive(bytes, data, &mut replies);
                            if let Some(com) = link.com() {
                                com.update(&mut state, &mut replies);
                            }
                        }
                        if !data.is_empty() {
                            deliver(data);
                        }
                    })
                })
                .await?;
                if !replies.is_empty() {
                    link.send_raw(&replies).await?;
                }
                Ok(n)
            }
        }
    }
}

/// One read into the thread's [`READ_BUF`], handed to `take` before the
/// poll returns. Valid because a reader that is not ready writes nothing
/// into the buffer it was given, so each poll may lend it another one.
async fn read_with<R: AsyncRead + Unpin>(
    r: &mut R,
    mut take: impl FnMut(&[u8]),
) -> io::Result<usize> {
    std::future::poll_fn(|cx| {
        READ_BUF.with_borrow_mut(|buf| {
            let mut read = ReadBuf::new(buf);
            match Pin::new(&mut *r).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let filled = read.filled();
                    if !filled.is_empty() {
                        take(filled);
                    }
                    Poll::Ready(Ok(filled.len()))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            }
        })
    })
    .await
}

impl DeviceWriter {
    /// Writes data bytes to the device and flushes them (for telnet:
    /// encoded, IAC doubled).
    pub async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            DeviceWriter::Serial(w) => {
                w.write_all(bytes).await?;
                w.flush().await
            }
            DeviceWriter::Tcp(w) => {
                w.write_all(bytes).await?;
                w.flush().await
            }
            DeviceWriter::Telnet(link) => {
                let mut wire = Vec::new();
                link.state().encode(bytes, &mut wire);
                link.send_raw(&wire).await
            }
        }
    }

    /// Sends a BREAK the way the transport can: telnet's IAC BRK. `None`
    /// when the transport has no BREAK of its own (raw TCP; a local tty
    /// uses its control handle).
    pub async fn send_break(&mut self) -> Option<io::Result<()>> {
        match self {
            DeviceWriter::Telnet(link) => Some(link.send_raw(&Telnet::brk()).await),
            _ => None,
        }
    }
}

/// The reader half, the writer half and the control handle (if the
/// device has line control) of an open device.
pub type Opened = (DeviceReader, DeviceWriter, Option<Box<dyn LineControl>>);

/// Opens a port's device: a remote console when `device` is a URL (see
/// [`crate::remote`]), otherwise the local serial device, with
/// [`open_device`]. Only a local tty and an `rfc2217://` console have a
/// control handle.
pub async fn open(device: &str, line: &LineSettings) -> io::Result<Opened> {
    match RemoteAddr::parse(device).map_err(io::Error::other)? {
        Some(addr) => open_remote(&addr).await,
        None => {
            let (reader, writer, control) = open_device(device, line)?;
            Ok((reader, writer, Some(Box::new(control))))
        }
    }
}

/// Connects to a remote console (see [`remote::connect`]). On
/// `rfc2217://`, offers COM-PORT-OPTION at once (WILL 44); the reader
/// hears the server's answer.
async fn open_remote(addr: &RemoteAddr) -> io::Result<Opened> {
    let (read, write) = remote::connect(addr).await?.into_split();
    let rfc2217 = addr.scheme == Scheme::Rfc2217;
    if !rfc2217 && addr.scheme != Scheme::Telnet {
        return Ok((DeviceReader::Tcp(read), DeviceWriter::Tcp(write), None));
    }
    let mut telnet = Telnet::new();
    let mut offer = Vec::new();
    if rfc2217 {
        telnet.offer(OPT_COM_PORT, &mut offer);
    }
    let link = Arc::new(TelnetLink::new(
        telnet,
        write,
        rfc2217.then(|| Arc::new(ComPortLink::new())),
    ));
    if !offer.is_empty() {
        link.send_raw(&offer).await?;
    }
    let control = link
        .com()
        .cloned()
        .map(|com| Box::new(ComPortControl::new(link.clone(), com)) as Box<dyn LineControl>);
    Ok((
        DeviceReader::Telnet(read, link.clone()),
        DeviceWriter::Telnet(link),
        control,
    ))
}

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
    Ok((
        DeviceReader::Serial(reader),
        DeviceWriter::Serial(writer),
        control,
    ))
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

/// A tty answers at once: each operation is a ready future.
impl LineControl for DeviceControl {
    fn set_break(&mut self, on: bool) -> ControlFuture<'_, ()> {
        Box::pin(std::future::ready(self.set_break_now(on)))
    }

    fn write_line(&mut self, line: ModemLine, level: bool) -> ControlFuture<'_, ()> {
        Box::pin(std::future::ready(self.write_line_now(line, level)))
    }

    fn modem_status(&mut self) -> ControlFuture<'_, ModemStatus> {
        Box::pin(std::future::ready(self.modem_status_now()))
    }

    fn apply_settings(&mut self, line: LineSettings) -> ControlFuture<'_, ()> {
        Box::pin(std::future::ready(self.apply_settings_now(&line)))
    }
}

impl DeviceControl {
    fn set_break_now(&mut self, on: bool) -> io::Result<()> {
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

    fn write_line_now(&mut self, line: ModemLine, level: bool) -> io::Result<()> {
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

    fn modem_status_now(&mut self) -> io::Result<ModemStatus> {
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

    fn apply_settings_now(&mut self, line: &LineSettings) -> io::Result<()> {
        let tty = self.tty()?;
        tty.set_data_bits(data_bits(line.data_bits))?;
        tty.set_parity(parity(line.parity))?;
        tty.set_stop_bits(stop_bits(line.stop_bits))?;
        tty.set_flow_control(flow_control(line.flow_control))?;
        tty.set_baud_rate(line.baud)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! An `rfc2217://` port's control handle (`comport.rs`) against a
    //! console server played on loopback: the variants ser2net does not
    //! show (Cisco's one-byte rates, a refusal, a server that keeps another
    //! rate), through the real open path and reader.

    use std::sync::Mutex;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::port::comport_link::Negotiation;
    use crate::remote::rfc2217::{LINESTATE_MASK, MODEMSTATE_MASK, OPT_COM_PORT, cisco_index};
    use crate::remote::telnet::{DO, DONT, IAC, Telnet};

    /// How the played server behaves.
    #[derive(Clone, Copy)]
    enum Server {
        /// Agrees; answers rates with Cisco's one-byte index.
        Cisco,
        /// Refuses COM-PORT-OPTION.
        Refuses,
        /// Agrees; keeps 9600 whatever rate is asked.
        Keeps9600,
    }

    /// Starts the server; returns its URL and the client's
    /// subnegotiations as it received them.
    async fn serve(kind: Server) -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("rfc2217://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        crate::task::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut telnet = Telnet::new();
            telnet.offer(OPT_COM_PORT, &mut Vec::new()); // to collect SBs
            let verb = match kind {
                Server::Refuses => DONT,
                _ => DO,
            };
            stream.write_all(&[IAC, verb, OPT_COM_PORT]).await.unwrap();
            let mut buf = [0u8; 1024];
            loop {
                let n = match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                telnet.receive(&buf[..n], &mut Vec::new(), &mut Vec::new());
                let mut out = Vec::new();
                for sub in telnet.take_subnegotiations() {
                    record.lock().unwrap().push(sub.clone());
                    let (code, value) = (sub[1], &sub[2..]);
                    let answer: Vec<u8> = match (kind, code) {
                        (_, 10 | 11) => continue, // masks: not answered
                        (Server::Cisco, 1) => {
                            let rate = match *value {
                                [a, b, c, d] => u32::from_be_bytes([a, b, c, d]),
                                [i] => crate::remote::rfc2217::cisco_rate(i).unwrap(),
                                _ => panic!("bad rate {value:?}"),
                            };
                            vec![101, cisco_index(rate).unwrap()]
                        }
                        (Server::Keeps9600, 1) => vec![101, 0, 0, 0x25, 0x80],
                        _ => [&[code + 100][..], value].concat(),
                    };
                    Telnet::subnegotiation(OPT_COM_PORT, &answer, &mut out);
                }
                if !out.is_empty() {
                    stream.write_all(&out).await.unwrap();
                }
            }
        });
        (url, seen)
    }

    /// Opens `url` as a port would, with its reader running.
    async fn open(url: &str) -> Box<dyn LineControl> {
        let line = LineSettings::default();
        let (mut reader, _writer, control) = super::open(url, &line).await.unwrap();
        crate::task::spawn(async move {
            while let Ok(n) = reader.read_data(&mut |_: &[u8]| {}).await {
                if n == 0 {
                    return;
                }
            }
        });
        control.expect("an rfc2217:// port has a control handle")
    }

    fn at(baud: u32) -> LineSettings {
        LineSettings {
            baud,
            ..LineSettings::default()
        }
    }

    #[tokio::test]
    async fn a_cisco_server_gets_rates_as_one_byte_once_it_answered_so() {
        let (url, seen) = serve(Server::Cisco).await;
        let mut ctl = open(&url).await;
        ctl.apply_settings(at(9600)).await.unwrap();
        ctl.apply_settings(at(115200)).await.unwrap();
        let e = ctl.apply_settings(at(14400)).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("no 14400"), "{e}");
        let com = ctl.com_port().unwrap().view();
        assert_eq!(com.negotiation, Negotiation::Agreed);
        assert!(com.com.cisco_baud);
        let rates: Vec<Vec<u8>> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s[1] == 1)
            .cloned()
            .collect();
        assert_eq!(rates, [vec![44, 1, 0, 0, 0x25, 0x80], vec![44, 1, 14]]);
        let masks: Vec<Vec<u8>> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s[1] == 10 || s[1] == 11)
            .cloned()
            .collect();
        assert_eq!(
            masks,
            [vec![44, 11, MODEMSTATE_MASK], vec![44, 10, LINESTATE_MASK]],
            "asked once, at agreement"
        );
    }

    #[tokio::test]
    async fn a_refusal_is_unsupported_and_says_so() {
        let (url, seen) = serve(Server::Refuses).await;
        let mut ctl = open(&url).await;
        let e = ctl.apply_settings(at(9600)).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
        assert!(e.to_string().contains("refused COM-PORT-OPTION"), "{e}");
        let e = ctl.set_break(true).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
        assert_eq!(
            ctl.com_port().unwrap().view().negotiation,
            Negotiation::Refused
        );
        assert!(
            seen.lock().unwrap().is_empty(),
            "no command after a refusal"
        );
    }

    #[tokio::test]
    async fn a_rate_the_server_did_not_take_is_an_error() {
        let (url, _) = serve(Server::Keeps9600).await;
        let mut ctl = open(&url).await;
        ctl.apply_settings(at(9600)).await.unwrap();
        let e = ctl.apply_settings(at(115200)).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert!(
            e.to_string()
                .contains("answered SET-BAUDRATE with 9600 baud instead of 115200 baud"),
            "{e}"
        );
        // DTR: the server echoes the code, so it is acknowledged.
        ctl.write_line(ModemLine::Dtr, true).await.unwrap();
        let lines = ctl.modem_status().await.unwrap();
        assert!(lines.dtr && !lines.rts, "{lines:?}");
    }
}
