//! A real program as the device behind a serial line: the program runs on a
//! pseudo-terminal of its own, as its controlling terminal (a session
//! leader, as under a getty), and a relay joins that terminal to a second
//! pseudo-terminal whose slave the daemon opens as its serial device. When
//! the program exits it is started again, as `getty` respawns `login`.
//!
//! Two pseudo-terminals, not one, because the program's terminal must be
//! cooked (echo, line discipline, signals, a window size) the way a
//! device's own console is, while the daemon's side is a raw serial line
//! whose settings the daemon sets as it likes.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::pty::{Winsize, openpty};
use serialgate_sim::pty::{Link, Pty};
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The program to run and the terminal it runs on.
#[derive(Debug, Clone)]
pub struct Program {
    command: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    dir: Option<PathBuf>,
    rows: u16,
    cols: u16,
}

impl Program {
    /// `command` (a path, or a name looked up in `PATH`), with `TERM=vt220`
    /// (what `agetty` gives a serial line) on an 80×24 terminal.
    pub fn new(command: impl Into<OsString>) -> Program {
        Program {
            command: command.into(),
            args: Vec::new(),
            env: vec![("TERM".into(), "vt220".into())],
            dir: None,
            rows: 24,
            cols: 80,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Program {
        self.args.push(arg.into());
        self
    }

    /// Sets an environment variable (later settings of a name win).
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Program {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Runs the program in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Program {
        self.dir = Some(dir.into());
        self
    }

    /// The terminal's window size, what `stty size` shows the program.
    pub fn size(mut self, rows: u16, cols: u16) -> Program {
        self.rows = rows;
        self.cols = cols;
        self
    }

    /// Starts the program on a terminal of its own, the slave of `pty` its
    /// stdin, stdout, stderr and controlling terminal.
    fn start(&self) -> io::Result<(Child, AsyncFd<OwnedFd>)> {
        let size = Winsize {
            ws_row: self.rows,
            ws_col: self.cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pair = openpty(Some(&size), None)?;
        for fd in [&pair.master, &pair.slave] {
            fcntl(fd.as_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
        }
        let flags = OFlag::from_bits_truncate(fcntl(pair.master.as_fd(), FcntlArg::F_GETFL)?);
        fcntl(
            pair.master.as_fd(),
            FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK),
        )?;
        let mut command = Command::new(&self.command);
        command.args(&self.args).env_clear();
        for name in ["PATH", "HOME", "USER", "LANG"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        command
            .stdin(Stdio::from(pair.slave.try_clone()?))
            .stdout(Stdio::from(pair.slave.try_clone()?))
            .stderr(Stdio::from(pair.slave.try_clone()?));
        // SAFETY: between fork and exec the closure calls only
        // async-signal-safe functions (setsid, ioctl) on descriptor 0, which
        // the spawn has already made the terminal's slave.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn()?;
        // The parent keeps only the master: when the program and all it
        // started have closed the slave, reading the master ends.
        drop(pair.slave);
        // SAFETY: the `OwnedFd` is moved into the `AsyncFd`, and nothing
        // else closes or replaces the descriptor while it is registered.
        let master = unsafe { AsyncFd::register(pair.master) }?;
        Ok((child, master))
    }
}

/// A running program behind a serial line; stops it when dropped.
pub struct ProgramLine {
    path: PathBuf,
    starts: Arc<AtomicUsize>,
    children: Arc<Mutex<Option<Child>>>,
    stop: Arc<Notify>,
    relay: JoinHandle<()>,
    _link: Link,
}

impl std::fmt::Debug for ProgramLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramLine")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ProgramLine {
    /// Starts `program` and the line, whose device the daemon opens at
    /// `link` (a symlink to the line's pty slave). Must be called within a
    /// tokio runtime.
    pub fn spawn(program: Program, link: &Path) -> io::Result<ProgramLine> {
        let line = Arc::new(Pty::open()?);
        let link = Link::create(link, line.slave_path())?;
        let starts = Arc::new(AtomicUsize::new(0));
        let children = Arc::new(Mutex::new(None));
        let stop = Arc::new(Notify::new());
        let relay = tokio::spawn(relay(
            program,
            line,
            starts.clone(),
            children.clone(),
            stop.clone(),
        ));
        Ok(ProgramLine {
            path: link.path().to_owned(),
            starts,
            children,
            stop,
            relay,
            _link: link,
        })
    }

    /// What the daemon opens as the device.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many times the program has been started (1 until it first
    /// exits and is respawned).
    pub fn starts(&self) -> usize {
        self.starts.load(Ordering::SeqCst)
    }

    /// The running program's process id, if one runs.
    pub fn pid(&self) -> Option<u32> {
        self.children
            .lock()
            .ok()
            .and_then(|c| c.as_ref().map(Child::id))
    }
}

impl Drop for ProgramLine {
    fn drop(&mut self) {
        self.stop.notify_one();
        self.relay.abort();
        if let Ok(mut child) = self.children.lock()
            && let Some(child) = child.as_mut()
        {
            kill_session(child);
        }
    }
}

/// Ends the program and everything in its session (it is the session
/// leader, so its process group is its pid).
fn kill_session(child: &mut Child) {
    // SAFETY: kill with a negative pid signals a process group; no memory
    // is involved.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// How long to wait before starting a program again that exited at once,
/// so that a program that cannot start is not respawned in a tight loop.
const RESPAWN_PAUSE: Duration = Duration::from_millis(200);

/// Copies bytes both ways between the line and the program's terminal,
/// starting the program again each time its terminal closes.
async fn relay(
    program: Program,
    line: Arc<Pty>,
    starts: Arc<AtomicUsize>,
    children: Arc<Mutex<Option<Child>>>,
    stop: Arc<Notify>,
) {
    loop {
        let (child, terminal) = match program.start() {
            Ok(started) => started,
            Err(e) => {
                eprintln!("program line: cannot start {:?}: {e}", program.command);
                return;
            }
        };
        let started = std::time::Instant::now();
        if let Ok(mut slot) = children.lock() {
            *slot = Some(child);
        }
        starts.fetch_add(1, Ordering::SeqCst);
        let terminal = Arc::new(terminal);
        let to_program = tokio::spawn(line_to_program(line.clone(), terminal.clone()));
        tokio::select! {
            () = program_to_line(&terminal, &line) => {}
            () = stop.notified() => {
                to_program.abort();
                return;
            }
        }
        to_program.abort();
        let finished = children.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = finished {
            // Its terminal closed: the program and its children are gone,
            // or the leader is about to be.
            let _ = tokio::task::spawn_blocking(move || kill_session(&mut child)).await;
        }
        if started.elapsed() < RESPAWN_PAUSE {
            tokio::time::sleep(RESPAWN_PAUSE).await;
        }
    }
}

/// What the daemon writes reaches the program as typed keys.
async fn line_to_program(line: Arc<Pty>, terminal: Arc<AsyncFd<OwnedFd>>) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match line.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if write_all(&terminal, &buf[..n]).await.is_err() {
            return;
        }
    }
}

/// What the program prints reaches the daemon; returns when the program's
/// terminal closes.
async fn program_to_line(terminal: &AsyncFd<OwnedFd>, line: &Pty) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match read(terminal, &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if line.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

async fn read(fd: &AsyncFd<OwnedFd>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        let mut ready = fd.readable().await?;
        match ready.try_io(|fd| nix::unistd::read(fd.get_ref(), buf).map_err(io::Error::from)) {
            Ok(result) => return result,
            Err(_would_block) => continue,
        }
    }
}

async fn write_all(fd: &AsyncFd<OwnedFd>, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        let mut ready = fd.writable().await?;
        match ready.try_io(|fd| nix::unistd::write(fd.get_ref(), buf).map_err(io::Error::from)) {
            Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => buf = &buf[n..],
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => continue,
        }
    }
    Ok(())
}
