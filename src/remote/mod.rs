//! Remote consoles: terminal servers and ser2net reached over the network
//! instead of a local tty.
//!
//! A port's `device` is either a local path or a URL:
//! - `tcp://host:port`: raw bytes, as they are (Cisco 40xx raw ports);
//! - `telnet://host:port`: telnet ([`telnet`]), as console servers'
//!   reverse-telnet ports and ser2net's `telnet` accepter speak it;
//! - `rfc2217://host:port`: telnet with COM-PORT-OPTION ([`rfc2217`]): the
//!   serial line's settings, BREAK and modem lines set from here, as
//!   ser2net's `telnet(rfc2217)` accepter and many console servers offer.
//!
//! [`RemoteAddr::parse`] tells a URL from a path; [`connect`] opens the TCP
//! connection with a bounded connect time, keepalive and no Nagle delay.
//! [`allow`] decides which URLs an ad-hoc `connect` may reach, by where
//! [`resolve`] finds they lead.

pub mod allow;
pub mod resolve;
pub mod rfc2217;
pub mod telnet;

use std::fmt;
use std::io;
use std::time::Duration;

use tokio::net::TcpStream;

/// How long a connection to a remote console may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle time before TCP keepalive probes start.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// Time between keepalive probes.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes after which the connection counts as dead.
const KEEPALIVE_RETRIES: u32 = 3;

/// How bytes travel to a remote console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Raw TCP: bytes as they are.
    Tcp,
    /// Telnet (RFC 854).
    Telnet,
    /// Telnet with COM-PORT-OPTION (RFC 2217).
    Rfc2217,
}

impl Scheme {
    /// The URL scheme, e.g. `telnet`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Tcp => "tcp",
            Scheme::Telnet => "telnet",
            Scheme::Rfc2217 => "rfc2217",
        }
    }
}

/// A remote console's address, from a `scheme://host:port` device URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteAddr {
    /// How bytes travel.
    pub scheme: Scheme,
    /// Host name or IP address (an IPv6 address without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl RemoteAddr {
    /// Whether `device` is a URL (has a `scheme://`) rather than a path.
    pub fn is_url(device: &str) -> bool {
        device.contains("://")
    }

    /// Parses a device URL: `Ok(None)` for a local path, an error that
    /// says what to write for a malformed URL.
    pub fn parse(device: &str) -> Result<Option<RemoteAddr>, String> {
        let Some((scheme, rest)) = device.split_once("://") else {
            return Ok(None);
        };
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "tcp" => Scheme::Tcp,
            "telnet" => Scheme::Telnet,
            "rfc2217" => Scheme::Rfc2217,
            other => {
                return Err(format!(
                    "unknown scheme {other:?} in {device:?}; use telnet://host:port, rfc2217://host:port, tcp://host:port or a device path"
                ));
            }
        };
        let example = format!("{}://10.0.0.5:2001", scheme.as_str());
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) || rest.chars().any(char::is_whitespace) {
            return Err(format!(
                "{device:?} has more than host:port (a path, query, user or spaces); write it like {example}"
            ));
        }
        let (host, port) = match rest.strip_prefix('[') {
            Some(v6) => match v6.split_once("]:") {
                Some((host, _))
                    if host
                        .split('%')
                        .next()
                        .is_none_or(|ip| ip.parse::<std::net::Ipv6Addr>().is_err()) =>
                {
                    return Err(format!(
                        "{device:?}: only an IPv6 address goes in brackets ({host:?} is not one); write a name or an IPv4 address without them, like {example}"
                    ));
                }
                Some((host, port)) => (host, port),
                None => {
                    return Err(format!(
                        "{device:?}: an IPv6 host needs brackets and a port, like {}://[2001:db8::5]:2001",
                        scheme.as_str()
                    ));
                }
            },
            None => match rest.rsplit_once(':') {
                Some((host, port)) if !host.contains(':') => (host, port),
                _ => {
                    return Err(format!(
                        "{device:?} needs host:port (an IPv6 host in brackets); write it like {example}"
                    ));
                }
            },
        };
        if host.is_empty() {
            return Err(format!("{device:?} has no host; write it like {example}"));
        }
        let port = match port.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => {
                return Err(format!(
                    "{device:?}: the port {port:?} is not a TCP port (1-65535); write it like {example}"
                ));
            }
        };
        Ok(Some(RemoteAddr {
            scheme,
            host: host.to_owned(),
            port,
        }))
    }

    /// `host:port`, an IPv6 host in brackets: what is connected to.
    pub fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// A port name for an ad-hoc connection: `host-port`, with every
    /// character a port name may not hold turned into `-`.
    pub fn default_name(&self) -> String {
        let name: String = format!("{}-{}", self.host, self.port)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        name.trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_owned()
    }
}

impl fmt::Display for RemoteAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.host_port())
    }
}

/// Opens a TCP connection to `addr` within [`CONNECT_TIMEOUT`], with TCP
/// keepalive on (a console server that vanishes is noticed within about a
/// minute and a half even when the console is quiet) and Nagle off (one
/// keystroke is one packet). The error says what happened, e.g.
/// "connection refused".
pub async fn connect(addr: &RemoteAddr) -> io::Result<TcpStream> {
    let target = addr.host_port();
    let connect = TcpStream::connect((addr.host.as_str(), addr.port));
    let stream = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            return Err(io::Error::new(
                e.kind(),
                format!("connecting to {target}: {e}"),
            ));
        }
        Err(_) => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "connecting to {target}: no answer within {}s",
                    CONNECT_TIMEOUT.as_secs()
                ),
            ));
        }
    };
    stream.set_nodelay(true)?;
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths() {
        assert_eq!(RemoteAddr::parse("/dev/ttyUSB0"), Ok(None));
        let a = RemoteAddr::parse("telnet://ts1.lab:2003").unwrap().unwrap();
        assert_eq!(
            (a.scheme, a.host.as_str(), a.port),
            (Scheme::Telnet, "ts1.lab", 2003)
        );
        assert_eq!(a.to_string(), "telnet://ts1.lab:2003");
        assert_eq!(a.default_name(), "ts1.lab-2003");
        let a = RemoteAddr::parse("TCP://[2001:db8::5]:4001/")
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.scheme, a.host_port()),
            (Scheme::Tcp, "[2001:db8::5]:4001".into())
        );
        assert_eq!(a.default_name(), "2001-db8--5-4001");
        let a = RemoteAddr::parse("tcp://[fe80::1%eth0]:23")
            .unwrap()
            .unwrap();
        assert_eq!(a.host, "fe80::1%eth0", "a link-local address with its zone");
        assert_eq!(
            RemoteAddr::parse("rfc2217://10.0.0.1:7000")
                .unwrap()
                .unwrap()
                .scheme,
            Scheme::Rfc2217
        );
        for (bad, says) in [
            ("ssh://h:22", "unknown scheme"),
            ("telnet://h", "needs host:port"),
            ("telnet://:23", "no host"),
            ("telnet://h:0", "not a TCP port"),
            ("telnet://h:70000", "not a TCP port"),
            ("telnet://h:23/x", "more than host:port"),
            ("telnet://u@h:23", "more than host:port"),
            ("tcp://2001:db8::5:23", "needs host:port"),
            ("tcp://[2001:db8::5]", "needs brackets and a port"),
            (
                "tcp://[localhost]:23",
                "only an IPv6 address goes in brackets",
            ),
            (
                "tcp://[eth0%fe80::1]:23",
                "only an IPv6 address goes in brackets",
            ),
        ] {
            let e = RemoteAddr::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
