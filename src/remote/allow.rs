//! Which remote consoles an ad-hoc `connect` may reach: the entries of
//! `[server] adhoc_remotes`, parsed, and the check of a URL against them.
//!
//! An entry is `HOST:PORTS`. `HOST` is an IPv4 address (`10.0.0.5`), an
//! IPv4 CIDR range (`10.0.0.0/8`), an IPv6 address or range in brackets
//! (`[2001:db8::5]`, `[2001:db8::]/32`) or a DNS name written in full
//! (`ts1.lab.example.net`); `PORTS` is a port (`2001`), a range
//! (`2000-2099`) or `*` (every port). There are no globs: a range of
//! addresses is a CIDR range, every address `0.0.0.0/0` or `[::]/0`.
//!
//! A URL is checked by where it leads, not by how it is spelt: its host is
//! resolved first ([`super::resolve`]), IPv4-mapped IPv6 addresses count
//! as the IPv4 address they map, and the connection then goes to the
//! address that passed. Address entries match the resolved address; a
//! name entry matches the host as written (case-insensitive, a trailing
//! dot ignored). Loopback, unspecified and link-local addresses, and this
//! host's own addresses, are [`Reserved`]: only an address entry that lies
//! within the reserved range names them (`127.0.0.1:7000` or
//! `127.0.0.0/8:*` names loopback; `0.0.0.0/0:*` and every name entry do
//! not).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::RangeInclusive;

use serde::{Serialize, Serializer};

use super::RemoteAddr;
use super::resolve::{self, Destination};

/// One `adhoc_remotes` entry: which hosts and which ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRule {
    /// The entry as written, for messages.
    text: String,
    host: HostPattern,
    ports: RangeInclusive<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// An address (a range of one) or a CIDR range.
    Net(IpNet),
    /// A DNS name, lower case, without a trailing dot.
    Name(String),
}

/// Why an entry is not one: where in it (a byte offset) and what to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryError {
    /// Byte offset in the entry of the part that is wrong.
    pub at: usize,
    /// What is wrong, quoting the entry, and what to write instead.
    pub message: String,
}

impl RemoteRule {
    /// Parses an entry (see the module docs); the error says where it
    /// goes wrong and what to write.
    pub fn parse(text: &str) -> Result<RemoteRule, EntryError> {
        let fail = |at: usize, why: String| EntryError {
            at,
            message: format!("{text:?}: {why}"),
        };
        if text.is_empty() {
            return Err(fail(
                0,
                "the entry is empty; write host:port, e.g. \"10.0.0.0/24:2000-2099\"".into(),
            ));
        }
        if text.contains("://") {
            return Err(fail(
                0,
                "write host:port without a scheme (an entry allows telnet://, rfc2217:// and tcp:// alike), e.g. \"10.0.0.5:2001\"".into(),
            ));
        }
        if let Some(at) = text.find(char::is_whitespace) {
            return Err(fail(
                at,
                "it holds a space; write host:port and nothing else".into(),
            ));
        }
        let (host, port_at) = split_host(text).map_err(|(at, why)| fail(at, why))?;
        let host = parse_host(host).map_err(|(at, why)| fail(at, why))?;
        let ports = parse_ports(&text[port_at..]).map_err(|why| fail(port_at, why))?;
        Ok(RemoteRule {
            text: text.to_owned(),
            host,
            ports,
        })
    }

    /// The entry as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether this entry could let `host` (as written in a URL) through
    /// on `port`, before anything is resolved: the port is in its range,
    /// and it is an address entry (the addresses `host` leads to decide)
    /// or a name entry for that very name.
    pub fn may_admit(&self, host: &str, port: u16) -> bool {
        self.ports.contains(&port)
            && match &self.host {
                HostPattern::Net(_) => true,
                HostPattern::Name(name) => *name == host_key(host),
            }
    }

    /// Whether this entry lets `host` (as written) through on `port` to
    /// `dest`, one of the addresses `host` resolved to. A reserved
    /// destination needs an address entry within its reserved range.
    pub fn admits(&self, host: &str, port: u16, dest: Destination) -> bool {
        if !self.may_admit(host, port) {
            return false;
        }
        let net = match &self.host {
            HostPattern::Net(net) if !net.contains(dest.ip) => return false,
            HostPattern::Net(net) => Some(net),
            HostPattern::Name(_) => None,
        };
        match dest.reserved() {
            None => true,
            Some(reserved) => net.is_some_and(|net| net.within(&reserved.range(dest.ip))),
        }
    }
}

impl fmt::Display for RemoteRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for RemoteRule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// A URL host as name entries match it: lower case, without one trailing
/// dot (`TS1.Lab.` is `ts1.lab`).
fn host_key(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// Splits an entry into its host part and the offset of its port part
/// (after the `:`).
fn split_host(text: &str) -> Result<(&str, usize), (usize, String)> {
    let no_port = |host: &str| {
        (
            text.len(),
            format!(
                "no port after the host; add one, e.g. \"{host}:2001\", \"{host}:2000-2099\" or \"{host}:*\" for every port"
            ),
        )
    };
    if text.starts_with('[') {
        let Some(close) = text.find(']') else {
            return Err((
                0,
                "an IPv6 address in brackets needs its closing ], e.g. \"[2001:db8::5]:*\"".into(),
            ));
        };
        let after = &text[close + 1..];
        let Some(colon) = after.find(':') else {
            return Err(no_port(text));
        };
        let end = close + 1 + colon;
        return Ok((&text[..end], end + 1));
    }
    match text.rsplit_once(':') {
        None => Err(no_port(text)),
        Some((host, _)) if host.contains(':') => Err((
            0,
            "an IPv6 address goes in brackets, e.g. \"[2001:db8::5]:*\" or \"[2001:db8::]/32:*\""
                .into(),
        )),
        Some((host, _)) => Ok((host, host.len() + 1)),
    }
}

/// Parses a host part: an address, a CIDR range or a DNS name. The error
/// carries the offset in `host` of what is wrong.
fn parse_host(host: &str) -> Result<HostPattern, (usize, String)> {
    if host.is_empty() {
        return Err((
            0,
            "no host before the port; write an address, a CIDR range or a name, e.g. \"10.0.0.0/24:2001\"".into(),
        ));
    }
    if let Some(rest) = host.strip_prefix('[') {
        return parse_v6(rest).map(HostPattern::Net);
    }
    if let Some(at) = host.find(['*', '?', '[', ']', '{', '}']) {
        return Err((
            at,
            "entries are not globs: write a range of addresses as a CIDR range (e.g. 10.0.0.0/24, every IPv4 address 0.0.0.0/0) and a name in full".into(),
        ));
    }
    if let Some((addr, len)) = host.split_once('/') {
        let ip = parse_v4(addr).map_err(|why| (0, why))?;
        let len = parse_prefix(len, 32).map_err(|why| (addr.len() + 1, why))?;
        return IpNet::new(ip.into(), len)
            .map(HostPattern::Net)
            .map_err(|why| (0, why));
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(HostPattern::Net(IpNet::single(ip.into())));
    }
    if looks_numeric(host) {
        let number = host.strip_suffix('.').unwrap_or(host);
        return Err(match parse_v4(number) {
            Ok(ip) => (
                0,
                format!("write the address without the trailing dot: {ip}"),
            ),
            Err(why) => (0, why),
        });
    }
    check_name(host).map(HostPattern::Name)
}

/// Parses the inside of `[...]` (and a `/len` after it): an IPv6 address
/// or range. IPv4-mapped addresses are refused: they are matched as the
/// IPv4 address they map, so an entry for them is written that way.
fn parse_v6(rest: &str) -> Result<IpNet, (usize, String)> {
    // `rest` is what follows the `[`; offsets are in the host part.
    let close = rest.find(']').unwrap_or(rest.len());
    let inside = &rest[..close];
    let after = &rest[(close + 1).min(rest.len())..];
    if inside.contains('/') {
        return Err((
            1,
            "write the prefix length after the brackets, e.g. \"[2001:db8::]/32:*\"".into(),
        ));
    }
    let Ok(ip) = inside.parse::<Ipv6Addr>() else {
        return Err((
            1,
            format!(
                "{inside:?} is not an IPv6 address; only IPv6 addresses go in brackets, e.g. \"[2001:db8::5]:*\""
            ),
        ));
    };
    let len = match after {
        "" => 128,
        _ => match after.strip_prefix('/') {
            Some(len) => parse_prefix(len, 128).map_err(|why| (close + 3, why))?,
            None => {
                return Err((
                    close + 2,
                    "after the brackets comes :port or /prefix-length, e.g. \"[2001:db8::]/32:*\""
                        .into(),
                ));
            }
        },
    };
    if len >= 96
        && let Some(v4) = ip.to_ipv4_mapped()
    {
        return Err((
            1,
            format!(
                "an IPv4-mapped address counts as the IPv4 address it maps; write {v4} (a range as {v4}/{})",
                len - 96
            ),
        ));
    }
    IpNet::new(ip.into(), len).map_err(|why| (1, why))
}

/// Parses an IPv4 address written as four decimal numbers; the error
/// says what the resolver would make of another spelling.
fn parse_v4(text: &str) -> Result<Ipv4Addr, String> {
    if let Ok(ip) = text.parse::<Ipv4Addr>() {
        return Ok(ip);
    }
    Err(match inet_aton(text) {
        Some(ip) => format!(
            "{text:?} is {ip} in a spelling the resolver also reads; write addresses as four decimal numbers: {ip}"
        ),
        None => format!(
            "{text:?} is not an IPv4 address; write four decimal numbers, e.g. 10.0.0.0/24, or an IPv6 address in brackets"
        ),
    })
}

/// Parses a prefix length of at most `max` bits.
fn parse_prefix(text: &str, max: u8) -> Result<u8, String> {
    text.parse::<u8>()
        .ok()
        .filter(|len| *len <= max && !text.starts_with('+'))
        .ok_or_else(|| format!("{text:?} is not a prefix length; write 0 to {max}"))
}

/// Whether a host part would be read by the resolver as an address rather
/// than a name: the classic `inet_aton` forms (`127.1`, `0x7f.1`,
/// `2130706433`, `0177.0.0.1`), or a last label that is a number (which no
/// name has).
fn looks_numeric(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    inet_aton(host).is_some()
        || host
            .rsplit('.')
            .next()
            .is_some_and(|last| !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()))
}

/// The IPv4 address the C library's `inet_aton` reads from `text`: one to
/// four parts, each decimal, octal (leading `0`) or hex (`0x`), the last
/// one filling the remaining bytes.
fn inet_aton(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut values = Vec::with_capacity(parts.len());
    for part in &parts {
        let (digits, radix) =
            if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
                (hex, 16)
            } else if part.len() > 1 && part.starts_with('0') {
                (&part[1..], 8)
            } else {
                (*part, 10)
            };
        if digits.is_empty() && radix != 8 {
            return None;
        }
        if !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        values.push(u32::from_str_radix(digits, radix).ok()?);
    }
    let (last, leading) = values.split_last()?;
    if leading.iter().any(|v| *v > 255) {
        return None;
    }
    let last_bits = 8 * (4 - leading.len() as u32);
    if last_bits < 32 && *last >= 1 << last_bits {
        return None;
    }
    let mut ip = 0u32;
    for (i, v) in leading.iter().enumerate() {
        ip |= v << (24 - 8 * i as u32);
    }
    Some(Ipv4Addr::from(ip | last))
}

/// Checks a DNS name entry: labels of letters, digits, `-` and `_`, 1 to
/// 63 characters each, at most 253 in all, an optional trailing dot.
/// `localhost` is refused: it always leads to loopback, which a name
/// never allows.
fn check_name(host: &str) -> Result<String, (usize, String)> {
    let name = host_key(host);
    if name.len() > 253 {
        return Err((0, "a name is at most 253 characters long".into()));
    }
    let mut at = 0;
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err((
                at,
                "a name is made of dot-separated labels of 1 to 63 characters; write it in full, e.g. ts1.lab.example.net".into(),
            ));
        }
        if let Some(i) = label.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        {
            return Err((
                at + i,
                "a name holds letters, digits, '-' and '_' only; write an address, a CIDR range or a name in full".into(),
            ));
        }
        at += label.len() + 1;
    }
    if name == "localhost" || name.ends_with(".localhost") {
        return Err((
            0,
            "localhost leads to this host's loopback address, which no name entry allows; write 127.0.0.1:PORT (or [::1]:PORT) to allow a console there".into(),
        ));
    }
    Ok(name)
}

/// Parses a port part: `2001`, `2000-2099` or `*`.
fn parse_ports(text: &str) -> Result<RangeInclusive<u16>, String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|n| *n > 0 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    let bad = || {
        format!(
            "{text:?} is not a port: write a port (2001), a range (2000-2099) or * (every port), from 1 to 65535"
        )
    };
    if text == "*" {
        return Ok(1..=u16::MAX);
    }
    match text.split_once('-') {
        None => port(text).map(|p| p..=p).ok_or_else(bad),
        Some((first, last)) => match (port(first), port(last)) {
            (Some(first), Some(last)) if first <= last => Ok(first..=last),
            (Some(_), Some(_)) => Err(format!(
                "{text:?} is an empty range: write the lower port first, e.g. 2000-2099"
            )),
            _ => Err(bad()),
        },
    }
}

/// An IPv4 or IPv6 network: an address and a prefix length, with no bits
/// set past the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// The network `addr/prefix`; an error when `addr` has bits set past
    /// the prefix (a typo more often than not), naming the range meant.
    pub fn new(addr: IpAddr, prefix: u8) -> Result<IpNet, String> {
        let net = IpNet { addr, prefix };
        let base = net.base();
        if base != addr {
            let shown = |ip: IpAddr| match ip {
                IpAddr::V4(ip) => ip.to_string(),
                IpAddr::V6(ip) => format!("[{ip}]"),
            };
            return Err(format!(
                "{}/{prefix} has bits set past the prefix length; the range is {}/{prefix}, write that",
                shown(addr),
                shown(base)
            ));
        }
        Ok(net)
    }

    /// The network of one address.
    pub fn single(addr: IpAddr) -> IpNet {
        let prefix = if addr.is_ipv4() { 32 } else { 128 };
        IpNet { addr, prefix }
    }

    fn bits(addr: IpAddr) -> (u128, u8) {
        match addr {
            IpAddr::V4(ip) => (u32::from(ip).into(), 32),
            IpAddr::V6(ip) => (u128::from(ip), 128),
        }
    }

    fn mask(prefix: u8, width: u8) -> u128 {
        let all = if width == 32 {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        };
        if prefix == 0 {
            0
        } else {
            all & !((1u128 << (width - prefix)) - 1)
        }
    }

    /// The address with the bits past the prefix cleared.
    fn base(&self) -> IpAddr {
        let (bits, width) = Self::bits(self.addr);
        let base = bits & Self::mask(self.prefix, width);
        match self.addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(base as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(base)),
        }
    }

    /// Whether `ip` (of the same family) lies in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        if ip.is_ipv4() != self.addr.is_ipv4() {
            return false;
        }
        let (bits, width) = Self::bits(ip);
        let (base, _) = Self::bits(self.addr);
        bits & Self::mask(self.prefix, width) == base
    }

    /// Whether this whole network lies within `outer`.
    pub fn within(&self, outer: &IpNet) -> bool {
        self.prefix >= outer.prefix && outer.contains(self.addr)
    }
}

/// The addresses that reach this host or nothing in particular rather
/// than a console server: only an entry that names them lets them
/// through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reserved {
    /// `0.0.0.0/8` and `::`: "this host" to the kernel.
    Unspecified,
    /// `127.0.0.0/8` and `::1`.
    Loopback,
    /// `169.254.0.0/16` and `fe80::/10` (cloud metadata services, devices
    /// on the local link).
    LinkLocal,
    /// IPv4-compatible IPv6 addresses (`::a.b.c.d`, deprecated).
    Ipv4Compatible,
    /// An address of one of this host's interfaces (a service listening on
    /// every address answers there too).
    ThisHost,
}

impl Reserved {
    /// The reserved range `ip` is in, that an entry must lie within to
    /// name it.
    pub fn range(self, ip: IpAddr) -> IpNet {
        let net = |addr: IpAddr, prefix| IpNet { addr, prefix };
        match (self, ip) {
            (Reserved::ThisHost, ip) => IpNet::single(ip),
            (Reserved::Unspecified, IpAddr::V4(_)) => net(Ipv4Addr::UNSPECIFIED.into(), 8),
            (Reserved::Loopback, IpAddr::V4(_)) => net(Ipv4Addr::new(127, 0, 0, 0).into(), 8),
            (Reserved::LinkLocal, IpAddr::V4(_)) => net(Ipv4Addr::new(169, 254, 0, 0).into(), 16),
            (Reserved::Unspecified, IpAddr::V6(_)) => IpNet::single(Ipv6Addr::UNSPECIFIED.into()),
            (Reserved::Loopback, IpAddr::V6(_)) => IpNet::single(Ipv6Addr::LOCALHOST.into()),
            (Reserved::LinkLocal, IpAddr::V6(_)) => {
                net(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0).into(), 10)
            }
            (Reserved::Ipv4Compatible, IpAddr::V6(_)) => net(Ipv6Addr::UNSPECIFIED.into(), 96),
            (Reserved::Ipv4Compatible, IpAddr::V4(_)) => IpNet::single(ip),
        }
    }

    /// What the range is, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Reserved::Unspecified => "the unspecified address, which reaches this host",
            Reserved::Loopback => "a loopback address of this host",
            Reserved::LinkLocal => "a link-local address",
            Reserved::Ipv4Compatible => "a deprecated IPv4-compatible address",
            Reserved::ThisHost => "an address of this host",
        }
    }
}

impl Destination {
    /// The reserved range it is in, if any; the fixed ranges first, so
    /// that `127.0.0.0/8:*` names every loopback address.
    pub fn reserved(&self) -> Option<Reserved> {
        let fixed = match self.ip {
            IpAddr::V4(ip) => {
                let [a, b, ..] = ip.octets();
                match (a, b) {
                    (0, _) => Some(Reserved::Unspecified),
                    (127, _) => Some(Reserved::Loopback),
                    (169, 254) => Some(Reserved::LinkLocal),
                    _ => None,
                }
            }
            IpAddr::V6(ip) => {
                if ip.is_unspecified() {
                    Some(Reserved::Unspecified)
                } else if ip.is_loopback() {
                    Some(Reserved::Loopback)
                } else if ip.is_unicast_link_local() {
                    Some(Reserved::LinkLocal)
                } else if ip.segments()[..6] == [0; 6] {
                    Some(Reserved::Ipv4Compatible)
                } else {
                    None
                }
            }
        };
        fixed.or(self.this_host.then_some(Reserved::ThisHost))
    }
}

/// Why a URL may not be connected to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No entry covers the host as written and the port (nothing was
    /// resolved).
    Outside,
    /// The host did not resolve: what the resolver said.
    Unresolved(String),
    /// The host resolved, and no entry lets any of its addresses through.
    Refused(Vec<Destination>),
}

impl Refusal {
    /// The refusal as a message about `url` (as the caller wrote it,
    /// already quoted) and `rules`, saying what to do.
    pub fn message(&self, url: &str, port: u16, rules: &[RemoteRule]) -> String {
        let entries = if rules.is_empty() {
            "none allowed".to_owned()
        } else {
            rules
                .iter()
                .map(RemoteRule::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Refusal::Outside => format!(
                "{url} is outside adhoc_remotes ({entries}); use a host:port matching one of them, or ask the operator to add it to adhoc_remotes in [server]"
            ),
            Refusal::Unresolved(why) => format!(
                "{url} cannot be checked against adhoc_remotes ({entries}): {why}; check the host name, or use the console server's IP address"
            ),
            Refusal::Refused(dests) => {
                let leads: Vec<String> = dests
                    .iter()
                    .map(|d| match d.reserved() {
                        Some(r) => format!("{} ({})", d.ip, r.describe()),
                        None => d.ip.to_string(),
                    })
                    .collect();
                let leads = leads.join(", ");
                match dests.iter().find(|d| d.reserved().is_some()) {
                    Some(d) => {
                        let example = match d.ip {
                            IpAddr::V4(ip) => format!("{ip}:{port}"),
                            IpAddr::V6(ip) => format!("[{ip}]:{port}"),
                        };
                        format!(
                            "{url} leads to {leads}, outside adhoc_remotes ({entries}): loopback, unspecified, link-local and this host's own addresses are reached only through an entry naming them, such as \"{example}\" (0.0.0.0/0, [::]/0 or a name entry does not); ask the operator to add one if a console is meant to be reached there"
                        )
                    }
                    None => format!(
                        "{url} leads to {leads}, outside adhoc_remotes ({entries}); use a host:port matching one of them, or ask the operator to add it to adhoc_remotes in [server]"
                    ),
                }
            }
        }
    }
}

/// Checks `addr` against `rules`: resolves its host (unless no entry
/// could cover it as written) and returns it pinned to the first address
/// an entry lets through, so that the connection, and every reconnect,
/// goes where the check looked.
pub async fn check(addr: &RemoteAddr, rules: &[RemoteRule]) -> Result<RemoteAddr, Refusal> {
    if !rules.iter().any(|r| r.may_admit(&addr.host, addr.port)) {
        return Err(Refusal::Outside);
    }
    let dests = resolve::destinations(&addr.host, addr.port)
        .await
        .map_err(Refusal::Unresolved)?;
    let admitted = dests.iter().find(|dest| {
        rules
            .iter()
            .any(|r| r.admits(&addr.host, addr.port, **dest))
    });
    match admitted {
        Some(dest) => Ok(RemoteAddr {
            scheme: addr.scheme,
            host: dest.ip.to_string(),
            port: addr.port,
        }),
        None => Err(Refusal::Refused(dests)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> RemoteRule {
        RemoteRule::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// A destination that is not one of this host's addresses.
    fn away(text: &str) -> Destination {
        Destination {
            ip: ip(text),
            this_host: false,
        }
    }

    #[test]
    fn good_entries() {
        for (text, host, ports) in [
            ("10.0.0.5:2001", "10.0.0.5", 2001..=2001),
            ("10.0.0.0/8:2000-2099", "10.0.0.1", 2000..=2099),
            ("0.0.0.0/0:*", "203.0.113.9", 1..=65535),
            ("[2001:db8::5]:*", "2001:db8::5", 1..=65535),
            ("[2001:db8::]/32:4001", "2001:db8:ffff::1", 4001..=4001),
            ("[::]/0:*", "2001:db8::1", 1..=65535),
            ("127.0.0.1:7000", "127.0.0.1", 7000..=7000),
        ] {
            let r = rule(text);
            assert_eq!(r.as_str(), text);
            assert_eq!(r.ports, ports, "{text}");
            assert!(
                r.admits(host, *ports.start(), away(host)),
                "{text} admits {host}"
            );
        }
        let r = rule("TS1.Lab.Example.NET.:2001");
        assert_eq!(r.host, HostPattern::Name("ts1.lab.example.net".into()));
        let r = rule("con_1.lab:*");
        assert_eq!(r.host, HostPattern::Name("con_1.lab".into()));
    }

    #[test]
    fn bad_entries_say_where_and_what_to_write() {
        for (text, at, says) in [
            ("", 0, "empty"),
            ("10.0.0.*:20*", 7, "not globs"),
            ("*:*", 0, "not globs"),
            ("ts*.lab:*", 2, "not globs"),
            ("10.0.0.5", 8, "no port"),
            ("[2001:db8::5]", 13, "no port"),
            ("telnet://h:23", 0, "without a scheme"),
            ("10.0.0.5: 23", 9, "space"),
            ("2001:db8::5:23", 0, "in brackets"),
            ("[2001:db8::5:*", 0, "closing ]"),
            ("[2001:db8::/32]:*", 1, "after the brackets"),
            ("[ts1.lab]:*", 1, "not an IPv6 address"),
            ("[2001:db8::]x:*", 12, "after the brackets comes"),
            ("[2001:db8::]/129:*", 13, "not a prefix length"),
            ("127.0.0.1.:*", 0, "without the trailing dot: 127.0.0.1"),
            ("[::ffff:127.0.0.1]:*", 1, "write 127.0.0.1"),
            (
                "[::ffff:0:0]/96:*",
                1,
                "write 0.0.0.0 (a range as 0.0.0.0/0)",
            ),
            ("10.0.0.5/8:*", 0, "the range is 10.0.0.0/8"),
            ("[2001:db8::5]/32:*", 1, "the range is [2001:db8::]/32"),
            ("10.0.0.0/33:*", 9, "not a prefix length"),
            ("10.0.0.0/+8:*", 9, "not a prefix length"),
            ("127.1:*", 0, "\"127.1\" is 127.0.0.1 in a spelling"),
            (
                "0x7f.1:*",
                0,
                "write addresses as four decimal numbers: 127.0.0.1",
            ),
            ("2130706433:*", 0, "127.0.0.1"),
            ("0177.0.0.1:*", 0, "127.0.0.1"),
            ("0:*", 0, "is 0.0.0.0"),
            ("10.0.0.256:*", 0, "not an IPv4 address"),
            ("10.0.0.0./8:*", 0, "not an IPv4 address"),
            ("ts1..lab:*", 4, "labels of 1 to 63"),
            (".lab:*", 0, "labels of 1 to 63"),
            ("ts1.lab!:*", 7, "letters, digits"),
            ("localhost:*", 0, "write 127.0.0.1:PORT"),
            ("LOCALHOST.:*", 0, "write 127.0.0.1:PORT"),
            ("a.localhost:*", 0, "write 127.0.0.1:PORT"),
            (":2001", 0, "no host"),
            ("h:", 2, "not a port"),
            ("h:0", 2, "not a port"),
            ("h:65536", 2, "not a port"),
            ("h:+1", 2, "not a port"),
            ("h:20*", 2, "a range (2000-2099)"),
            ("h:2099-2000", 2, "lower port first"),
            ("h:1-2-3", 2, "not a port"),
        ] {
            let e = RemoteRule::parse(text).expect_err(text);
            assert_eq!(e.at, at, "{text}: {e:?}");
            assert!(
                e.message.starts_with(&format!("{text:?}: ")) && e.message.contains(says),
                "{text}: {:?} lacks {says:?}",
                e.message
            );
        }
    }

    #[test]
    fn inet_aton_reads_what_the_resolver_reads() {
        for (text, want) in [
            ("127.1", Some("127.0.0.1")),
            ("0x7f.1", Some("127.0.0.1")),
            ("0X7F.0.0.1", Some("127.0.0.1")),
            ("2130706433", Some("127.0.0.1")),
            ("0177.0.0.1", Some("127.0.0.1")),
            ("0", Some("0.0.0.0")),
            ("10.1.65535", Some("10.1.255.255")),
            ("10.1.65536", None),
            ("256.0.0.1", None),
            ("1.2.3.4.5", None),
            ("08.0.0.1", None),
            ("0x", None),
            ("ts1", None),
            ("", None),
        ] {
            assert_eq!(inet_aton(text), want.map(|w| w.parse().unwrap()), "{text}");
        }
    }

    #[test]
    fn the_readme_ipv6_entry_means_that_host() {
        let r = rule("[2001:db8::5]:*");
        assert!(r.admits("2001:db8::5", 23, away("2001:db8::5")));
        assert!(!r.admits("0", 23, away("0.0.0.0")));
        for host in ["0", "1", "2", "5", "8", "b", "d", ":"] {
            assert!(!r.admits(host, 23, away("203.0.113.1")), "{host}");
        }
        assert!(!r.admits("2001:db8::6", 23, away("2001:db8::6")));
    }

    #[test]
    fn address_entries_match_where_a_host_leads_not_its_spelling() {
        let lab = rule("10.0.0.0/8:2000-2099");
        // A name that resolves into the range, on a port in the range.
        assert!(lab.admits("con.lab", 2001, away("10.1.2.3")));
        // The text of the host does not matter: 10.0.0.evil.example is a
        // name, and where it leads decides.
        assert!(!lab.admits("10.0.0.evil.example", 2001, away("203.0.113.7")));
        assert!(!lab.admits("10.0.0.5", 2100, away("10.0.0.5")));
        assert!(!lab.admits("10.0.0.5", 2001, away("11.0.0.5")));
        assert!(!lab.admits("[::ffff:a00:5]", 2001, away("2001:db8::5")));
    }

    #[test]
    fn name_entries_match_as_written_and_check_where_they_lead() {
        let ts1 = rule("ts1.example.net:*");
        for host in ["ts1.example.net", "TS1.Example.Net", "ts1.example.net."] {
            assert!(ts1.may_admit(host, 2001), "{host}");
            assert!(ts1.admits(host, 2001, away("203.0.113.5")), "{host}");
        }
        assert!(!ts1.may_admit("ts2.example.net", 2001));
        assert!(!ts1.may_admit("xts1.example.net", 2001));
        assert!(!ts1.may_admit("203.0.113.5", 2001));
        // A name that leads to loopback, link-local or this host is not
        // let through by its name.
        for dest in ["127.0.0.1", "::1", "0.0.0.0", "169.254.169.254", "fe80::1"] {
            assert!(!ts1.admits("ts1.example.net", 2001, away(dest)), "{dest}");
        }
        let mine = Destination {
            ip: ip("192.0.2.2"),
            this_host: true,
        };
        assert!(!ts1.admits("ts1.example.net", 2001, mine));
    }

    #[test]
    fn reserved_addresses_need_an_entry_that_names_them() {
        let any = [rule("0.0.0.0/0:*"), rule("[::]/0:*")];
        for dest in [
            "127.0.0.1",
            "127.255.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "169.254.169.254",
            "::",
            "::1",
            "fe80::1",
            "::7f00:1",
        ] {
            let d = away(dest);
            assert!(d.reserved().is_some(), "{dest}");
            assert!(!any.iter().any(|r| r.admits(dest, 7000, d)), "{dest}");
        }
        let mine = Destination {
            ip: ip("192.0.2.2"),
            this_host: true,
        };
        assert_eq!(mine.reserved(), Some(Reserved::ThisHost));
        assert!(!any.iter().any(|r| r.admits("192.0.2.2", 22, mine)));
        assert!(!rule("192.0.2.0/24:*").admits("192.0.2.2", 22, mine));
        assert!(rule("192.0.2.2:22").admits("192.0.2.2", 22, mine));
        // Named: an address entry within the reserved range.
        for (entry, host, dest) in [
            ("127.0.0.1:7000", "127.1", "127.0.0.1"),
            ("127.0.0.0/8:*", "localhost", "127.0.0.1"),
            ("127.0.0.0/8:*", "127.9.9.9", "127.9.9.9"),
            ("[::1]:7000", "::1", "::1"),
            ("169.254.169.254:7000", "169.254.169.254", "169.254.169.254"),
            ("[fe80::]/10:*", "fe80::1", "fe80::1"),
            ("0.0.0.0:7000", "0", "0.0.0.0"),
        ] {
            assert!(rule(entry).admits(host, 7000, away(dest)), "{entry} {dest}");
        }
        // Not named: a range reaching past the reserved one.
        for (entry, dest) in [
            ("96.0.0.0/3:*", "127.0.0.1"),
            ("126.0.0.0/7:*", "127.0.0.1"),
            ("169.254.0.0/15:*", "169.254.1.1"),
            ("[::]/127:*", "::1"),
            ("[fe80::]/9:*", "fe80::1"),
            ("0.0.0.0/0:*", "0.0.0.0"),
        ] {
            assert!(!rule(entry).admits("h", 7000, away(dest)), "{entry} {dest}");
        }
    }

    #[tokio::test]
    async fn check_pins_the_address_that_passed() {
        let url = |u: &str| RemoteAddr::parse(u).unwrap().unwrap();
        let named = [rule("0.0.0.0/0:*"), rule("127.0.0.1:7000")];
        let pinned = check(&url("tcp://127.1:7000"), &named).await.unwrap();
        assert_eq!(pinned.to_string(), "tcp://127.0.0.1:7000");
        let pinned = check(&url("telnet://[::ffff:7f00:1]:7000"), &named)
            .await
            .unwrap();
        assert_eq!(pinned.to_string(), "telnet://127.0.0.1:7000");
        let broad = [rule("0.0.0.0/0:*"), rule("[::]/0:*")];
        let refusal = check(&url("tcp://127.1:7000"), &broad).await.unwrap_err();
        assert_eq!(
            refusal,
            Refusal::Refused(vec![Destination {
                ip: ip("127.0.0.1"),
                this_host: true
            }])
        );
        let message = refusal.message("\"tcp://127.1:7000\"", 7000, &broad);
        assert!(
            message.starts_with("\"tcp://127.1:7000\" leads to 127.0.0.1 (a loopback address of this host), outside adhoc_remotes (0.0.0.0/0:*, [::]/0:*)")
                && message.contains("such as \"127.0.0.1:7000\""),
            "{message}"
        );
        let lab = [rule("10.0.0.0/8:2000-2099")];
        assert_eq!(
            check(&url("tcp://127.1:7000"), &lab).await,
            Err(Refusal::Outside),
            "no entry covers the port: nothing is resolved"
        );
        assert_eq!(
            check(&url("tcp://10.0.0.5:2001"), &[]).await,
            Err(Refusal::Outside)
        );
        let e = check(&url("tcp://no-such-host.invalid:2001"), &lab)
            .await
            .unwrap_err();
        assert!(
            matches!(&e, Refusal::Unresolved(why) if why.contains("does not resolve")),
            "{e:?}"
        );
    }

    #[test]
    fn networks() {
        let net = |t: &str, p| IpNet::new(ip(t), p).unwrap();
        assert!(net("10.0.0.0", 8).contains(ip("10.255.0.1")));
        assert!(!net("10.0.0.0", 8).contains(ip("11.0.0.0")));
        assert!(!net("10.0.0.0", 8).contains(ip("::ffff:10.0.0.1")));
        assert!(net("0.0.0.0", 0).contains(ip("255.255.255.255")));
        assert!(net("::", 0).contains(ip("ffff::1")));
        assert!(!net("::", 0).contains(ip("10.0.0.1")));
        assert!(net("2001:db8::", 32).contains(ip("2001:db8:1::1")));
        assert!(net("10.1.0.0", 16).within(&net("10.0.0.0", 8)));
        assert!(!net("10.0.0.0", 8).within(&net("10.1.0.0", 16)));
        assert!(IpNet::new(ip("10.0.0.1"), 32).is_ok());
        assert!(IpNet::new(ip("10.0.0.1"), 31).is_err());
    }
}
