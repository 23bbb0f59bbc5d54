//! Where a remote console's host leads: its addresses as the system
//! resolver gives them (every spelling it accepts, `127.1` and
//! `localhost` alike), within a deadline, IPv4-mapped IPv6 addresses
//! turned into the IPv4 address they map, and whether an address is one
//! of this host's own. [`super::allow`] checks what this finds.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, UdpSocket};
use std::time::Duration;

use crate::error::shown;

/// How long resolving a host name may take.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// One address a URL's host resolved to, as the check sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Destination {
    /// The address, IPv4-mapped IPv6 already turned into IPv4.
    pub ip: IpAddr,
    /// Whether it is an address of this host's interfaces.
    pub this_host: bool,
}

/// The addresses `host` resolves to (see [`resolve`]), each marked with
/// whether it is this host's own.
pub async fn destinations(host: &str, port: u16) -> Result<Vec<Destination>, String> {
    Ok(resolve(host, port)
        .await?
        .into_iter()
        .map(|ip| Destination {
            ip,
            this_host: is_this_host(ip),
        })
        .collect())
}

/// Resolves `host` with the system resolver within [`RESOLVE_TIMEOUT`]:
/// its addresses in the resolver's order, without repeats, IPv4-mapped
/// IPv6 addresses as IPv4. The error says what happened, quoting the host.
pub async fn resolve(host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    let lookup = tokio::net::lookup_host((host, port));
    let found = match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => return Err(format!("{} does not resolve ({e})", shown(host))),
        Err(_) => {
            return Err(format!(
                "{} did not resolve within {}s",
                shown(host),
                RESOLVE_TIMEOUT.as_secs()
            ));
        }
    };
    let mut ips = Vec::new();
    for addr in found {
        let ip = addr.ip().to_canonical();
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    if ips.is_empty() {
        return Err(format!("{} resolves to no address", shown(host)));
    }
    Ok(ips)
}

/// Whether `ip` is an address of this host (one of its interfaces', or in
/// a local route): a service listening on every address answers there.
/// Asked of the kernel's routing by connecting a UDP socket, which sends
/// nothing: the route to an address of this host is local, and the source
/// address it picks is the address itself or a loopback one. An address
/// there is no route to is not this host's (nothing would connect).
pub fn is_this_host(ip: IpAddr) -> bool {
    let any: IpAddr = match ip {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let Ok(socket) = UdpSocket::bind((any, 0)) else {
        return false;
    };
    match socket.connect((ip, 9)).and_then(|()| socket.local_addr()) {
        Ok(local) => local.ip() == ip || local.ip().is_loopback(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn spellings_resolve_to_their_address() {
        for (host, want) in [
            ("127.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("0x7f.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("0", "0.0.0.0"),
            ("::", "::"),
            ("::ffff:127.0.0.1", "127.0.0.1"),
            ("::ffff:7f00:1", "127.0.0.1"),
            ("0:0:0:0:0:0:0:1", "::1"),
        ] {
            let ips = resolve(host, 7000).await.unwrap();
            assert_eq!(ips, vec![want.parse::<IpAddr>().unwrap()], "{host}");
        }
        let e = resolve("no-such-host.invalid", 7000).await.unwrap_err();
        assert!(e.starts_with("\"no-such-host.invalid\" "), "{e}");
    }

    #[test]
    fn this_hosts_addresses() {
        assert!(is_this_host(Ipv4Addr::LOCALHOST.into()));
        assert!(is_this_host("127.0.0.2".parse().unwrap()));
        // TEST-NET-3 is never assigned to a host.
        assert!(!is_this_host("203.0.113.77".parse().unwrap()));
    }
}
