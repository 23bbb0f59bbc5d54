//! What a test (or `serialgate simulate`) may ask of a simulated device
//! beyond its profile: a login, an enable secret, how long its minutes
//! last, where it boots, how long its boot can be stopped, which blocks of
//! a transfer its line damages.

use std::time::Duration;

/// The enable password of the simulated switch (Cisco), unless
/// [`SimOptions::enable_secret`] says another.
pub const ENABLE_PASSWORD: &str = "cisco";
/// Lines in the output of `show tech-support` by default (78 characters
/// each, ~4 MB; [`SimOptions::tech_support_lines`] sets another count).
pub const TECH_SUPPORT_LINES: usize = 50_000;

/// Options a test (or `serialgate simulate`) gives a simulated device.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// When set, the device asks for a login first (and again after
    /// `exit`/`logout`/`quit` from the top exec level).
    pub login: Option<Credentials>,
    /// The enable secret (Cisco `enable`); default "cisco" (the existing
    /// [`ENABLE_PASSWORD`]).
    pub enable_secret: String,
    /// How long a device "minute" lasts for timers (commit confirmed N,
    /// revert timer N, reload in N). Default 60 s; tests use e.g. 200 ms.
    pub minute: Duration,
    /// Cisco only: start at the ROMMON prompt instead of the IOS CLI.
    pub rommon: bool,
    /// Cisco only: lines of `show tech-support` (80 bytes each with the
    /// line end); default [`TECH_SUPPORT_LINES`], about 4 MB. A modular
    /// switch prints 5 to 30 MB.
    pub tech_support_lines: usize,
    /// How long a booting device stays in its first seconds, where a
    /// break (ROMMON) or any key (U-Boot's autoboot) stops it in the boot
    /// loader; zero boots straight through (as before this existed).
    pub boot_window: Duration,
    /// Blocks the boot loaders' receivers damage or lose on arrival.
    pub faults: BlockFaults,
    /// While the device models a line speed (ROMMON after `xmodem -s`),
    /// take what arrives no faster than that line carries it (10 bits a
    /// byte), as a real UART would; off, a pty moves data at memory speed.
    pub pace: bool,
}

/// Blocks of an XMODEM/YMODEM transfer that the line damages or loses,
/// counted by arrival: 0 is the first block the receiver asked for (YMODEM's
/// header, else block 1), and a block sent again counts again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockFaults {
    /// Arrivals with one byte flipped (a NAK and a retry follow).
    pub corrupt: Vec<u64>,
    /// Arrivals lost whole (a timeout, a NAK and a retry follow).
    pub drop: Vec<u64>,
}

impl BlockFaults {
    /// Arrival numbers from `3,17,200`, as `serialgate simulate` takes them.
    pub fn parse_list(text: &str) -> Option<Vec<u64>> {
        text.split(',')
            .filter(|part| !part.trim().is_empty())
            .map(|part| part.trim().parse().ok())
            .collect()
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            login: None,
            enable_secret: ENABLE_PASSWORD.to_owned(),
            minute: Duration::from_secs(60),
            rommon: false,
            tech_support_lines: TECH_SUPPORT_LINES,
            boot_window: Duration::ZERO,
            faults: BlockFaults::default(),
            pace: false,
        }
    }
}

/// A user name and password a device's login accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// The user name typed at `Username:` or `login:`.
    pub username: String,
    /// The password typed (unechoed) at `Password:`.
    pub password: String,
}

impl Credentials {
    /// Credentials from `USER:PASS` (the password may contain `:`), as
    /// `serialgate simulate --login` takes them.
    pub fn parse(text: &str) -> Option<Credentials> {
        let (username, password) = text.split_once(':')?;
        (!username.is_empty()).then(|| Credentials {
            username: username.to_owned(),
            password: password.to_owned(),
        })
    }

    /// Whether `username` and `password` are these.
    pub fn accept(&self, username: &[u8], password: &[u8]) -> bool {
        username == self.username.as_bytes() && password == self.password.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_from_user_colon_pass() {
        let c = Credentials::parse("admin:s3:cret").unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("admin", "s3:cret")
        );
        assert!(c.accept(b"admin", b"s3:cret"));
        assert!(!c.accept(b"admin", b"s3"));
        assert_eq!(Credentials::parse("nopass"), None);
        assert_eq!(Credentials::parse(":x"), None);
        assert_eq!(SimOptions::default().enable_secret, "cisco");
    }
}
