//! The async driver: one task per simulated device, between its pty master
//! and its state machine.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::cisco::CiscoSwitch;
use super::huawei::HuaweiRouter;
use super::junos::JunosRouter;
use super::menu::BiosMenu;
use super::options::SimOptions;
use super::procurve::ProCurveSwitch;
use super::pty::{Link, Pty};
use super::shell::ColourShell;
use super::uboot::UBoot;
use super::utf8::Utf8Router;

/// Which device a simulator plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// A Cisco IOS switch named `SW1` ([`CiscoSwitch`]); CLI name `cisco-ios`.
    CiscoIos,
    /// A Juniper MX router, `admin@mx1> ` ([`JunosRouter`]); CLI name
    /// `juniper-junos`.
    JuniperJunos,
    /// A Huawei VRP router, `<HUAWEI>` ([`HuaweiRouter`]); CLI name
    /// `huawei-vrp`.
    HuaweiVrp,
    /// An HP ProCurve switch, `ProCurve# ` ([`ProCurveSwitch`]); CLI name
    /// `hp-procurve`.
    HpProcurve,
    /// A Linux bash with a coloured prompt and `ls --color`
    /// ([`ColourShell`]); CLI name `ansi-colour`.
    AnsiColour,
    /// A full-screen BIOS/BMC setup menu ([`BiosMenu`]); CLI name `menu`.
    Menu,
    /// A router printing multi-byte UTF-8, written one byte per write
    /// ([`Utf8Router`]); CLI name `utf8-slow`.
    Utf8Slow,
    /// Prints nothing, only records what it receives (tests make it print
    /// with [`SimHandle::inject`]); CLI name `silent`.
    Silent,
    /// A U-Boot-like boot loader, `=> ` ([`UBoot`]): `loady`, `loadx`;
    /// CLI name `u-boot`.
    UBoot,
}

impl Profile {
    /// Every profile, in the order the CLI lists them.
    pub const ALL: [Profile; 9] = [
        Profile::CiscoIos,
        Profile::JuniperJunos,
        Profile::HuaweiVrp,
        Profile::HpProcurve,
        Profile::AnsiColour,
        Profile::Menu,
        Profile::Utf8Slow,
        Profile::Silent,
        Profile::UBoot,
    ];

    /// The CLI name, e.g. `cisco-ios`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::CiscoIos => "cisco-ios",
            Profile::JuniperJunos => "juniper-junos",
            Profile::HuaweiVrp => "huawei-vrp",
            Profile::HpProcurve => "hp-procurve",
            Profile::AnsiColour => "ansi-colour",
            Profile::Menu => "menu",
            Profile::Utf8Slow => "utf8-slow",
            Profile::Silent => "silent",
            Profile::UBoot => "u-boot",
        }
    }

    /// The name of serialgate's built-in preset that fits the device.
    pub fn preset(self) -> &'static str {
        match self {
            Profile::CiscoIos | Profile::Utf8Slow => "cisco-ios",
            Profile::JuniperJunos => "juniper-junos",
            Profile::HuaweiVrp => "huawei-vrp",
            Profile::HpProcurve => "hp-procurve",
            Profile::AnsiColour => "linux",
            Profile::Menu | Profile::Silent | Profile::UBoot => "generic",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;

    fn from_str(name: &str) -> Result<Profile, String> {
        Profile::ALL
            .into_iter()
            .find(|profile| profile.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown device profile `{name}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// A profile's state machine. (The switch and the router are boxed: they
/// carry their configurations and are far larger than the others.)
enum Device {
    Cisco(Box<CiscoSwitch>),
    Junos(Box<JunosRouter>),
    Huawei(HuaweiRouter),
    ProCurve(ProCurveSwitch),
    Shell(ColourShell),
    Menu(BiosMenu),
    Utf8(Utf8Router),
    Silent,
    UBoot(Box<UBoot>),
}

/// How long a device that writes one byte at a time waits between bytes,
/// so that each arrives in a read of its own.
const BYTE_PACE: Duration = Duration::from_millis(1);

impl Device {
    fn new(profile: Profile, options: &SimOptions) -> Device {
        match profile {
            Profile::CiscoIos => Device::Cisco(Box::new(CiscoSwitch::with_options("SW1", options))),
            Profile::JuniperJunos => Device::Junos(Box::new(JunosRouter::with_options(options))),
            Profile::HuaweiVrp => Device::Huawei(HuaweiRouter::with_options(options)),
            Profile::HpProcurve => Device::ProCurve(ProCurveSwitch::new()),
            Profile::AnsiColour => Device::Shell(ColourShell::new()),
            Profile::Menu => Device::Menu(BiosMenu::new()),
            Profile::Utf8Slow => Device::Utf8(Utf8Router::new()),
            Profile::Silent => Device::Silent,
            Profile::UBoot => Device::UBoot(Box::new(UBoot::with_options(options))),
        }
    }

    fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match self {
            Device::Cisco(switch) => switch.feed(input, out),
            Device::Junos(router) => router.feed(input, out),
            Device::Huawei(router) => router.feed(input, out),
            Device::ProCurve(switch) => switch.feed(input, out),
            Device::Shell(shell) => shell.feed(input, out),
            Device::Menu(menu) => menu.feed(input, out),
            Device::Utf8(router) => router.feed(input, out),
            Device::Silent => {}
            Device::UBoot(loader) => loader.feed(input, out),
        }
    }

    /// The speed the device's UART runs at when it models one; a
    /// terminal at another speed reads garbage and is read as garbage.
    fn line_speed(&self) -> Option<u32> {
        match self {
            Device::Cisco(switch) => switch.line_speed(),
            _ => None,
        }
    }

    /// When the device's next timer fires (a revert timer, a commit
    /// confirmed, a scheduled reload), if one is armed.
    fn next_deadline(&mut self) -> Option<Instant> {
        match self {
            Device::Cisco(switch) => switch.next_deadline(),
            Device::Junos(router) => router.next_deadline(),
            Device::UBoot(loader) => loader.next_deadline(),
            _ => None,
        }
    }

    /// Fires the timers due at `now`, appending what the device prints.
    fn tick(&mut self, now: Instant, out: &mut Vec<u8>) {
        match self {
            Device::Cisco(switch) => switch.tick(now, out),
            Device::Junos(router) => router.tick(now, out),
            Device::UBoot(loader) => loader.tick(now, out),
            _ => {}
        }
    }

    /// The configuration in force (see [`SimHandle::configuration`]).
    fn configuration(&self) -> Vec<String> {
        match self {
            Device::Cisco(switch) => switch.configuration(),
            Device::Junos(router) => router.configuration(),
            Device::Huawei(router) => router.configuration(),
            _ => Vec::new(),
        }
    }

    /// Whether the device is in a configuration mode.
    fn in_config_mode(&self) -> bool {
        match self {
            Device::Cisco(switch) => switch.in_config_mode(),
            Device::Junos(router) => router.in_config_mode(),
            Device::Huawei(router) => router.in_config_mode(),
            _ => false,
        }
    }

    /// Power comes back: a device that models its boot prints it (the
    /// switch's boot loader banner and its boot window); the others go on
    /// where they were.
    fn power_restored(&mut self, out: &mut Vec<u8>) {
        if let Device::Cisco(switch) = self {
            switch.power_restored(out);
        }
    }

    /// Whether the device writes one byte per write, [`BYTE_PACE`] apart.
    fn byte_at_a_time(&self) -> bool {
        matches!(self, Device::Utf8(_))
    }
}

/// Whether the device models a line speed and the terminal's side of the
/// pty is set to another.
fn speeds_differ(pty: &Pty, device_speed: Option<u32>) -> bool {
    device_speed.is_some_and(|speed| pty.peer_speed().is_some_and(|peer| peer != speed))
}

/// What crosses a line whose two ends disagree on the speed: framing
/// errors and bytes of nothing like what was sent (never ASCII, so never a
/// protocol's control byte or a prompt).
fn garble(bytes: &mut [u8]) {
    for b in bytes {
        *b = 0x80 | (*b).rotate_left(3);
    }
}

/// Writes some of `bytes`, garbled first if the speeds now disagree.
async fn write_at_speed(pty: &Pty, device: &Mutex<Device>, bytes: &mut [u8]) -> io::Result<usize> {
    let device_speed = device.lock().unwrap().line_speed();
    if speeds_differ(pty, device_speed) {
        garble(bytes);
    }
    pty.write(bytes).await
}

/// What the handle and the device task share.
#[derive(Default)]
struct Shared {
    /// Every byte the device has received.
    received: Mutex<Vec<u8>>,
    /// Woken on every append to `received`, and when the task ends.
    arrived: Notify,
    /// The task has ended: nothing more will arrive.
    stopped: AtomicBool,
}

/// Bytes to print, and who to tell once they are written to the master.
struct Inject(Vec<u8>, oneshot::Sender<()>);

/// A simulated device running on a pseudo-terminal.
///
/// Open [`path`](Self::path) as a serial port and talk to the device. The
/// device runs in a tokio task until [`close`](Self::close),
/// [`unplug`](Self::unplug) or drop, which close the pty (the other side
/// sees an unplug) and remove the link.
pub struct SimHandle {
    path: PathBuf,
    slave_path: PathBuf,
    shared: Arc<Shared>,
    /// The device's state machine, which the task feeds and the handle
    /// reads (configuration, mode).
    device: Arc<Mutex<Device>>,
    injects: mpsc::UnboundedSender<Inject>,
    /// The device's power input: `false` cuts it, `true` restores it.
    power: mpsc::UnboundedSender<bool>,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
    link: Mutex<Option<Link>>,
}

impl fmt::Debug for SimHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimHandle")
            .field("path", &self.path)
            .field("slave_path", &self.slave_path)
            .finish_non_exhaustive()
    }
}

/// Starts a simulated `profile` device on a new pty, with a symlink to the
/// slave at `link` if given (an existing symlink there is replaced). Must be
/// called within a tokio runtime.
pub async fn spawn(profile: Profile, link: Option<PathBuf>) -> io::Result<SimHandle> {
    spawn_with(profile, link, SimOptions::default()).await
}

/// [`spawn`] with `options`: a login, the enable secret, the length of a
/// device minute for its timers, a Cisco starting in ROMMON.
pub async fn spawn_with(
    profile: Profile,
    link: Option<PathBuf>,
    options: SimOptions,
) -> io::Result<SimHandle> {
    let pty = Pty::open()?;
    let slave_path = pty.slave_path().to_owned();
    let link = link
        .map(|path| Link::create(&path, &slave_path))
        .transpose()?;
    let path = link
        .as_ref()
        .map_or(slave_path.as_path(), Link::path)
        .to_owned();
    let shared = Arc::new(Shared::default());
    let (injects, inject_rx) = mpsc::unbounded_channel();
    let (power, power_rx) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let device = Arc::new(Mutex::new(Device::new(profile, &options)));
    let task = tokio::spawn(run(
        pty,
        device.clone(),
        shared.clone(),
        inject_rx,
        power_rx,
        stop.clone(),
        options.pace,
    ));
    Ok(SimHandle {
        path,
        slave_path,
        shared,
        device,
        injects,
        power,
        stop,
        task: Mutex::new(Some(task)),
        link: Mutex::new(link),
    })
}

impl SimHandle {
    /// What to open as the device: the link if one was asked for, else the
    /// pty slave.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pty slave (`/dev/pts/N`).
    pub fn slave_path(&self) -> &Path {
        &self.slave_path
    }

    /// Makes the device print `bytes`, after whatever it is printing now.
    /// Returns once they are written to the pty, or at once if the device is
    /// closed.
    pub async fn inject(&self, bytes: &[u8]) {
        let (written, wait) = oneshot::channel();
        if self.injects.send(Inject(bytes.to_vec(), written)).is_ok() {
            let _ = wait.await;
        }
    }

    /// Cuts the device's power, as its outlet switching off does: from now
    /// on it prints nothing (what it had not yet written is lost) and
    /// hears nothing, its timers stop, and the pty stays open, as a
    /// serial line stays connected to a dead device.
    pub fn power_off(&self) {
        let _ = self.power.send(false);
    }

    /// Restores the device's power: the switch boots (its boot loader's
    /// banner, then the boot window where a break stops it in ROMMON);
    /// other profiles go on where they were.
    pub fn power_on(&self) {
        let _ = self.power.send(true);
    }

    /// The configuration in force now: Cisco's running-config lines (from
    /// the first `!` to `end`), Junos' active (committed) configuration as
    /// `set` lines, Huawei's current configuration lines. Empty for other
    /// profiles. Tests check what a configuration session changed.
    pub fn configuration(&self) -> Vec<String> {
        self.device.lock().unwrap().configuration()
    }

    /// Whether the device is in a configuration mode (Cisco config and
    /// config-*, Junos `[edit]`, Huawei system view and below) right now.
    pub fn in_config_mode(&self) -> bool {
        self.device.lock().unwrap().in_config_mode()
    }

    /// Every byte the device has received so far.
    pub fn received(&self) -> Vec<u8> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits until the device has received `needle` (at any point since it
    /// started), for at most `timeout`. False on timeout or if the device is
    /// closed without having received it.
    pub async fn wait_received(&self, needle: &[u8], timeout: Duration) -> bool {
        if needle.is_empty() {
            return true;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut from = 0;
        loop {
            let arrived = self.shared.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            {
                let received = self.shared.received.lock().unwrap();
                if memchr::memmem::find(&received[from..], needle).is_some() {
                    return true;
                }
                from = received.len().saturating_sub(needle.len() - 1);
            }
            if self.shared.stopped.load(Ordering::Acquire)
                || tokio::time::timeout_at(deadline, arrived).await.is_err()
            {
                return false;
            }
        }
    }

    /// Stops the device and closes the pty, so whoever has the slave open
    /// sees an unplug (`read` returns 0 or `EIO`), and removes the link.
    /// [`received`](Self::received) stays readable.
    pub async fn close(&self) {
        self.stop.cancel();
        let task = self.task.lock().unwrap().take();
        if let Some(task) = task {
            let _ = task.await;
        }
        self.link.lock().unwrap().take();
    }

    /// Pulls the device's cable: [`close`](Self::close) and drop the handle.
    pub async fn unplug(self) {
        self.close().await;
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.get_mut().unwrap().take() {
            task.abort();
        }
    }
}

/// The device task: reads what the slave's user sends, feeds the device and
/// writes its replies and the injected bytes, in order. Input keeps being
/// read while output waits for a slow reader. It wakes at the device's next
/// deadline, if any, so timers fire without input.
async fn run(
    pty: Pty,
    device: Arc<Mutex<Device>>,
    shared: Arc<Shared>,
    mut injects: mpsc::UnboundedReceiver<Inject>,
    mut power: mpsc::UnboundedReceiver<bool>,
    stop: CancellationToken,
    pace: bool,
) {
    let mut powered = true;
    let mut input = [0u8; 4096];
    // Output not yet written is `output[written..]`; `total_*` count bytes
    // since the start, so that an injection is acknowledged once written.
    let mut output = Vec::new();
    let mut written = 0;
    let (mut total_queued, mut total_written) = (0u64, 0u64);
    let mut acks: VecDeque<(u64, oneshot::Sender<()>)> = VecDeque::new();
    let one_byte = device.lock().unwrap().byte_at_a_time();
    loop {
        let deadline = device.lock().unwrap().next_deadline().filter(|_| powered);
        let wake = tokio::time::Instant::from_std(deadline.unwrap_or_else(Instant::now));
        let end = if one_byte {
            output.len().min(written + 1)
        } else {
            output.len()
        };
        let queued_before = output.len();
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            read = pty.read(&mut input) => match read {
                Ok(0) => break,
                Ok(_) if !powered => {}
                Ok(n) => {
                    let speed = device.lock().unwrap().line_speed();
                    if let Some(speed) = speed.filter(|_| pace) {
                        // The bytes arrive when a line at that speed has
                        // carried them.
                        tokio::time::sleep(Duration::from_secs_f64(n as f64 * 10.0 / f64::from(speed))).await;
                    }
                    shared.received.lock().unwrap().extend_from_slice(&input[..n]);
                    shared.arrived.notify_waiters();
                    let mut device = device.lock().unwrap();
                    if speeds_differ(&pty, device.line_speed()) {
                        garble(&mut input[..n]);
                    }
                    device.feed(&input[..n], &mut output);
                }
                Err(error) => {
                    tracing::debug!(%error, "simulated device: reading the pty master failed");
                    break;
                }
            },
            () = tokio::time::sleep_until(wake), if deadline.is_some() => {
                device.lock().unwrap().tick(Instant::now(), &mut output);
            }
            Some(on) = power.recv() => {
                if !on {
                    // What was queued is lost with the power; whoever
                    // waits for an injection to be written is let go.
                    output.truncate(written);
                    total_queued = total_written;
                    acks.clear();
                } else if !powered {
                    device.lock().unwrap().power_restored(&mut output);
                }
                powered = on;
            }
            inject = injects.recv() => match inject {
                // A dead device prints nothing.
                Some(Inject(_, _)) if !powered => {}
                Some(Inject(bytes, ack)) => {
                    output.extend_from_slice(&bytes);
                    acks.push_back((total_queued + (output.len() - queued_before) as u64, ack));
                }
                None => break,
            },
            write = write_at_speed(&pty, &device, &mut output[written..end]), if written < output.len() => match write {
                Ok(n) => {
                    written += n;
                    total_written += n as u64;
                    if one_byte {
                        // A slow device: the next byte comes a moment later.
                        tokio::time::sleep(BYTE_PACE).await;
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, "simulated device: writing the pty master failed");
                    break;
                }
            },
        }
        total_queued += output.len().saturating_sub(queued_before) as u64;
        if written == output.len() {
            output.clear();
            written = 0;
        }
        while acks.front().is_some_and(|&(end, _)| end <= total_written) {
            let (_, ack) = acks.pop_front().expect("checked");
            let _ = ack.send(());
        }
    }
    shared.stopped.store(true, Ordering::Release);
    shared.arrived.notify_waiters();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
    use tokio::time::timeout;
    use tokio_serial::{SerialPortBuilderExt, SerialStream};

    const DEADLINE: Duration = Duration::from_secs(10);

    fn open(path: &Path) -> SerialStream {
        tokio_serial::new(path.to_string_lossy(), 9600)
            .open_native_async()
            .unwrap()
    }

    /// Reads until what arrived ends with `end`.
    async fn read_until(port: &mut (impl AsyncRead + Unpin), end: &[u8]) -> Vec<u8> {
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !seen.ends_with(end) {
            let n = timeout(DEADLINE, port.read(&mut buf))
                .await
                .expect("deadline")
                .unwrap();
            assert!(n > 0, "EOF after {:?}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        seen
    }

    #[test]
    fn profiles_by_cli_name() {
        assert_eq!("cisco-ios".parse(), Ok(Profile::CiscoIos));
        assert_eq!("silent".parse(), Ok(Profile::Silent));
        for profile in Profile::ALL {
            assert_eq!(profile.name().parse(), Ok(profile));
        }
        let error = "junos".parse::<Profile>().unwrap_err();
        assert!(
            error.contains(
                "cisco-ios, juniper-junos, huawei-vrp, hp-procurve, ansi-colour, menu, utf8-slow, silent"
            ),
            "{error}"
        );
        assert_eq!(Profile::CiscoIos.to_string(), "cisco-ios");
    }

    #[tokio::test]
    async fn cisco_answers_on_a_real_pty() {
        let sim = spawn(Profile::CiscoIos, None).await.unwrap();
        assert!(sim.path().starts_with("/dev/pts/"));
        let mut port = open(sim.path());
        port.write_all(b"show clock\r").await.unwrap();
        let reply = read_until(&mut port, b"SW1>").await;
        let reply = String::from_utf8(reply).unwrap();
        assert!(reply.starts_with("show clock\r\n*"), "{reply:?}");
        assert!(reply.contains(" UTC "), "{reply:?}");
        assert!(reply.ends_with("\r\nSW1>"), "{reply:?}");
        assert!(sim.wait_received(b"clock\r", DEADLINE).await);
        assert_eq!(sim.received(), b"show clock\r");
    }

    #[tokio::test]
    async fn timers_fire_without_input_and_the_handle_sees_the_state() {
        let options = SimOptions {
            minute: Duration::from_millis(50),
            ..SimOptions::default()
        };
        let sim = spawn_with(Profile::JuniperJunos, None, options)
            .await
            .unwrap();
        let mut port = open(sim.path());
        port.write_all(b"configure\r").await.unwrap();
        read_until(&mut port, b"admin@mx1# ").await;
        assert!(sim.in_config_mode());
        port.write_all(b"set system host-name mx2\r").await.unwrap();
        read_until(&mut port, b"admin@mx1# ").await;
        port.write_all(b"commit confirmed 1\r").await.unwrap();
        let seen = read_until(&mut port, b"[edit]\r\nadmin@mx1# ").await;
        let seen = String::from_utf8(seen).unwrap();
        assert!(seen.contains("commit complete\r\n"), "{seen:?}");
        assert!(
            sim.configuration()
                .contains(&"set system host-name mx2".to_owned())
        );
        // Nothing more is sent: the rollback comes on its own.
        read_until(&mut port, b"automatic rollback complete.\r\n\r\n").await;
        assert!(
            sim.configuration()
                .contains(&"set system host-name mx1".to_owned())
        );
        let cisco = spawn(Profile::CiscoIos, None).await.unwrap();
        assert_eq!(
            cisco.configuration().last().map(String::as_str),
            Some("end")
        );
        assert!(!cisco.in_config_mode());
        assert!(
            spawn(Profile::Silent, None)
                .await
                .unwrap()
                .configuration()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn every_profile_answers_on_a_real_pty() {
        for (profile, wake, reply) in [
            (Profile::JuniperJunos, &b"\r"[..], &b"admin@mx1> "[..]),
            (Profile::HuaweiVrp, b"\r", b"<HUAWEI>"),
            (Profile::HpProcurve, b"\r", b"ProCurve# "),
            (Profile::AnsiColour, b"\r", b"\x1b[00m$ "),
            (Profile::Menu, b"\r", b"\x1b[24;80H"),
            (Profile::Utf8Slow, b"\r", b"edge-1#"),
        ] {
            let sim = spawn(profile, None).await.unwrap();
            let mut port = open(sim.path());
            port.write_all(wake).await.unwrap();
            let seen = read_until(&mut port, reply).await;
            assert!(seen.ends_with(reply), "{profile}: {seen:?}");
        }
    }

    #[tokio::test]
    async fn utf8_slow_writes_one_byte_per_read() {
        let sim = spawn(Profile::Utf8Slow, None).await.unwrap();
        let mut port = open(sim.path());
        port.write_all(b"show interfaces description\r")
            .await
            .unwrap();
        let mut seen = Vec::new();
        let mut reads = 0;
        let mut buf = [0u8; 1024];
        while !seen.ends_with(b"edge-1#") {
            let n = timeout(DEADLINE, port.read(&mut buf))
                .await
                .expect("deadline")
                .unwrap();
            assert!(n > 0);
            seen.extend_from_slice(&buf[..n]);
            reads += 1;
        }
        let text = String::from_utf8(seen).expect("whole characters in the end");
        assert!(text.contains("Zürich–Genève ✓"), "{text:?}");
        // Bytes come apart (a busy machine may join a few in one read).
        assert!(
            reads > text.len() / 10,
            "{reads} reads for {} bytes",
            text.len()
        );
    }

    #[tokio::test]
    async fn unplug_is_seen_as_eof_or_eio_by_the_reader() {
        let sim = spawn(Profile::CiscoIos, None).await.unwrap();
        let mut port = open(sim.path());
        port.write_all(b"\r").await.unwrap();
        read_until(&mut port, b"SW1>").await;
        sim.unplug().await;
        let mut buf = [0u8; 64];
        // Linux gives Ok(0) here (and again on every later read).
        match timeout(DEADLINE, port.read(&mut buf))
            .await
            .expect("deadline")
        {
            Ok(n) => assert_eq!(n, 0, "expected EOF"),
            Err(error) => assert_eq!(error.raw_os_error(), Some(libc::EIO), "{error}"),
        }
    }

    #[tokio::test]
    async fn silent_device_behind_a_link_prints_what_is_injected() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("ttyUSB-sim");
        let sim = spawn(Profile::Silent, Some(link.clone())).await.unwrap();
        assert_eq!(sim.path(), link);
        assert_eq!(std::fs::read_link(&link).unwrap(), sim.slave_path());
        let mut port = open(&link);
        sim.inject("Router(config)# héllo ✓\r\n".as_bytes()).await;
        let seen = read_until(&mut port, "✓\r\n".as_bytes()).await;
        assert_eq!(seen, "Router(config)# héllo ✓\r\n".as_bytes());
        port.write_all(&[0x00, 0xff, b'\r']).await.unwrap();
        assert!(sim.wait_received(&[0xff, b'\r'], DEADLINE).await);
        assert!(!sim.wait_received(b"never", Duration::from_millis(50)).await);
        drop(sim);
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "the link is removed on drop"
        );
    }

    #[tokio::test]
    async fn megabytes_reach_a_slow_reader_and_input_is_read_meanwhile() {
        let sim = spawn(Profile::Silent, None).await.unwrap();
        let port = open(sim.path());
        let big: Vec<u8> = (0..8 << 20).map(|i: u32| b'a' + (i % 26) as u8).collect();
        let (mut reader, mut writer) = tokio::io::split(port);
        let expected = big.len();
        let read_all = tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut buf = [0u8; 100];
            while seen.len() < expected {
                let n = reader.read(&mut buf).await.unwrap();
                assert!(n > 0);
                seen.extend_from_slice(&buf[..n]);
            }
            seen
        });
        // While the output drains, the device still takes input.
        let type_ahead = async { writer.write_all(b"typed ahead").await.unwrap() };
        let all = async { tokio::join!(read_all, sim.inject(&big), type_ahead) };
        let (seen, (), ()) = timeout(Duration::from_secs(60), all)
            .await
            .expect("deadline");
        assert!(
            seen.unwrap() == big,
            "the output arrived whole and in order"
        );
        assert!(sim.wait_received(b"typed ahead", DEADLINE).await);
    }
}
