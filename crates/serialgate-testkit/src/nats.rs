//! A real `nats-server` for the fleet's tests: a config written into the
//! test's directory, on free loopback ports, killed and started again on
//! the same ports (a site's uplink cut and restored).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Where `nats-server` is: on `PATH`, or `/usr/sbin` (Debian's package
/// puts it there, which a user's `PATH` may lack).
pub fn binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("nats-server"))
            .collect::<Vec<_>>()
    });
    on_path
        .chain([PathBuf::from("/usr/sbin/nats-server")])
        .find(|p| p.is_file())
}

/// A free TCP port on loopback (bound, then let go).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One running `nats-server`.
pub struct NatsServer {
    binary: PathBuf,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    /// Its client port.
    pub port: u16,
}

impl NatsServer {
    /// Starts `binary` with `body` (the config without `listen`) in `dir`
    /// as `name.conf`, on a free port; waits until it takes connections.
    pub async fn start(binary: &Path, dir: &Path, name: &str, body: &str) -> NatsServer {
        let port = free_port();
        let config = dir.join(format!("{name}.conf"));
        std::fs::write(&config, format!("listen: \"127.0.0.1:{port}\"\n{body}"))
            .expect("write the nats-server config");
        let mut server = NatsServer {
            binary: binary.to_owned(),
            config,
            log: dir.join(format!("{name}.log")),
            child: None,
            port,
        };
        server.restart().await;
        server
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// What the server logged so far.
    pub fn logged(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the server (SIGKILL: an uplink cut, not a goodbye).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again with the same config and ports; waits
    /// until it takes connections.
    pub async fn restart(&mut self) {
        self.kill();
        let child = Command::new(&self.binary)
            .arg("-c")
            .arg(&self.config)
            .arg("-l")
            .arg(&self.log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let port = self.port;
        crate::wait::eventually(
            "nats-server takes connections",
            Duration::from_secs(10),
            || async move {
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            },
        )
        .await;
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
