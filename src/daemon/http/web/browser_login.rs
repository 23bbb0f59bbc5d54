//! The web view's browser logins, kept on the server (a browser signed in
//! with a token; not an MCP session nor a person's console attachment): a
//! browser holds only a random login id in an `HttpOnly`,
//! `SameSite=Strict` cookie, never the token. The store maps the id's SHA-256 digest (so a lookup's
//! timing says nothing about ids) to the token's name and its secret's
//! digest; every request resolves the token again from the config in
//! force, so a token removed or given a new secret by a reload ends its
//! browser logins at once.
//!
//! Bounded, so that one token's sign-ins never end another token's
//! logins: a token keeps at most [`MAX_LOGINS_PER_TOKEN`], and a sign-in
//! beyond that ends the same token's login idle longest; the tokens of
//! one access and every weaker one together keep at most their share of
//! [`MAX_LOGINS`] ([`TokenAccess::share_of`]: half for read, three
//! quarters with write), and all tokens together all of it. A sign-in at
//! one of those ends the signing-in token's own login idle longest, or,
//! if it has none, is refused ([`LoginRefused::Crowded`],
//! [`LoginRefused::Full`]): so read tokens, however many, never keep an
//! operator or an admin from signing in. A login ends after
//! [`IDLE_EXPIRY`] without a request, [`ABSOLUTE_EXPIRY`] after sign-in,
//! or at sign-out.
//!
//! With a state directory (`[server] state_dir`), the store is kept in its
//! file `web-sessions` (mode 600; digests only, never an id), written at
//! every sign-in and sign-out and when a login's last use moved by more
//! than [`SAVE_EVERY`]: a restarted daemon knows its browsers, and their
//! pages reconnect by themselves instead of asking for the token again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, header};
use sha2::Digest;
use subtle::ConstantTimeEq;

use crate::access::Caller;
use crate::access::shares::HeldByAccess;
use crate::config::{TokenAccess, TokenConfig};
use crate::gateway::Gateway;
use crate::logfile::LogDir;

/// The cookie's name.
pub const COOKIE: &str = "serialgate_session";
/// Browser logins kept at once (each is a few dozen bytes).
pub const MAX_LOGINS: usize = 256;
/// Browser logins one token keeps at once.
pub const MAX_LOGINS_PER_TOKEN: usize = 32;
/// A login unused this long ends.
pub const IDLE_EXPIRY: Duration = Duration::from_secs(8 * 3600);
/// A login ends this long after its sign-in, used or not.
pub const ABSOLUTE_EXPIRY: Duration = Duration::from_secs(24 * 3600);
/// How far a login's last use may move before the file is written again
/// (idle expiry after a restart is this much early at most).
pub const SAVE_EVERY: Duration = Duration::from_secs(60);
/// The store's file in the state directory.
pub const STORE_FILE: &str = "web-sessions";
/// Length of a login id in the cookie: 32 random bytes, hex.
const ID_CHARS: usize = 64;
/// The first line of the store's file: its format.
const STORE_HEADER: &str = "# serialgate web sessions v1";
/// Largest store file read back (far above [`MAX_LOGINS`] lines).
const MAX_STORE_BYTES: u64 = 1 << 20;

/// One signed-in browser.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    /// The token's name in `[[tokens]]`.
    token: String,
    /// The token's secret digest at sign-in: a new secret ends the login.
    secret: [u8; 32],
    signed_in: SystemTime,
    last_seen: SystemTime,
    /// `last_seen` as the file last recorded it.
    saved_seen: SystemTime,
}

/// The logins and where they are kept.
#[derive(Default)]
struct Store {
    entries: HashMap<[u8; 32], Entry>,
    /// The state directory, when logins outlive the daemon.
    dir: Option<LogDir>,
}

/// Why no login was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefused {
    /// The OS gave no random bytes for an id.
    NoRandomness,
    /// Every one of the [`MAX_LOGINS`] is taken, none by the signing-in
    /// token (whose own would be the one to end).
    Full,
    /// The tokens of the signing-in token's access and weaker ones hold
    /// their share, none of it the signing-in token's.
    Crowded {
        /// The signing-in token's access.
        access: TokenAccess,
        /// The most those tokens keep together.
        share: usize,
    },
}

/// The browser logins of the web view, shared by its routes and by the
/// console WebSocket's authentication. A cheap clonable handle.
#[derive(Clone, Default)]
pub struct BrowserLogins {
    store: Arc<Mutex<Store>>,
    /// Bumped whenever a login ends, so that the consoles and feeds it
    /// opened re-check their caller.
    ended: Arc<tokio::sync::watch::Sender<u64>>,
}

fn digest(id: &str) -> [u8; 32] {
    sha2::Sha256::digest(id.as_bytes()).into()
}

impl BrowserLogins {
    /// Logins kept in `dir`'s [`STORE_FILE`] (the directory is created,
    /// mode 750, and refused when others may write to it), loaded from it
    /// now: those not expired, at most [`MAX_LOGINS`]. A missing file is
    /// an empty store; one that cannot be read is logged and started over.
    pub fn persistent(dir: &Path) -> std::io::Result<BrowserLogins> {
        let dir = LogDir::open(dir)?;
        let now = SystemTime::now();
        let mut entries = match dir.open_read(STORE_FILE) {
            Ok(file) => {
                use std::io::Read;
                let mut text = String::new();
                match file.take(MAX_STORE_BYTES).read_to_string(&mut text) {
                    Ok(_) => parse_store(&text),
                    Err(e) => {
                        tracing::warn!(
                            "web sessions: cannot read {STORE_FILE}: {e}; starting with none"
                        );
                        HashMap::new()
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => {
                tracing::warn!("web sessions: {e}; starting with none");
                HashMap::new()
            }
        };
        entries.retain(|_, e| !expired(e, now));
        trim_to_caps(&mut entries);
        tracing::info!(
            "web sessions: {} kept from before in {}",
            entries.len(),
            dir.path().join(STORE_FILE).display()
        );
        Ok(BrowserLogins {
            store: Arc::new(Mutex::new(Store {
                entries,
                dir: Some(dir),
            })),
            ended: Arc::default(),
        })
    }

    /// Starts a login for `token`, one of the config's `tokens` (which say
    /// the other logins' access); returns the id for the cookie. At a cap,
    /// only `token`'s own login idle longest may end (see the module doc);
    /// nothing is stored when it is refused.
    pub fn create(
        &self,
        token: &TokenConfig,
        tokens: &[TokenConfig],
    ) -> Result<String, LoginRefused> {
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).map_err(|_| LoginRefused::NoRandomness)?;
        let id: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let now = SystemTime::now();
        let mut store = crate::sync::lock(&self.store);
        let before = store.entries.len();
        store.entries.retain(|_, e| !expired(e, now));
        if store.entries.len() < before {
            self.tell_ended();
        }
        let own = store
            .entries
            .values()
            .filter(|e| e.token == token.name)
            .count();
        // A login whose token is gone counts as the weakest.
        let mut held = HeldByAccess::default();
        for entry in store.entries.values() {
            let access = tokens.iter().find(|t| t.name == entry.token);
            held.add(access.map_or(TokenAccess::Read, |t| t.access));
        }
        let share = token.access.share_of(MAX_LOGINS);
        let crowded = held.at_or_below(token.access) >= share;
        let full = store.entries.len() >= MAX_LOGINS;
        if own >= MAX_LOGINS_PER_TOKEN || ((full || crowded) && own > 0) {
            self.tell_ended();
            evict_idlest(&mut store.entries, Some(&token.name));
            tracing::info!(
                "web sessions: token {:?} signed in again at a cap, its own login idle longest was ended",
                token.name
            );
        } else if crowded {
            tracing::warn!(
                "web sessions: the {share} open to {} tokens are taken by others; refused a sign-in of token {:?}",
                token.access.name(),
                token.name
            );
            return Err(LoginRefused::Crowded {
                access: token.access,
                share,
            });
        } else if full {
            tracing::warn!(
                "web sessions: all {MAX_LOGINS} taken by other tokens; refused a sign-in of token {:?}",
                token.name
            );
            return Err(LoginRefused::Full);
        }
        store.entries.insert(
            digest(&id),
            Entry {
                token: token.name.clone(),
                secret: *token.secret.digest(),
                signed_in: now,
                last_seen: now,
                saved_seen: now,
            },
        );
        store.save();
        Ok(id)
    }

    /// The caller a request's login cookie stands for, if it names a
    /// live login whose token is still configured with the same secret.
    /// A login found dead is removed.
    pub fn caller(&self, headers: &HeaderMap, gateway: &Gateway) -> Option<Caller> {
        let id = login_id(headers)?;
        let key = digest(id);
        let now = SystemTime::now();
        let mut store = crate::sync::lock(&self.store);
        let entry = store.entries.get_mut(&key)?;
        let config = gateway.config();
        let token = config.tokens.iter().find(|t| t.name == entry.token);
        let valid = !expired(entry, now)
            && token.is_some_and(|t| bool::from(t.secret.digest()[..].ct_eq(&entry.secret[..])));
        if !valid {
            store.entries.remove(&key);
            store.save();
            self.tell_ended();
            return None;
        }
        entry.last_seen = now;
        if age(entry.saved_seen, now) > SAVE_EVERY {
            store.save();
        }
        token.map(Caller::from_token)
    }

    /// When the login a request's cookie names passes its absolute
    /// lifetime ([`ABSOLUTE_EXPIRY`] after sign-in), as a monotonic
    /// instant (a second past it, so that the store finds it expired
    /// then); `None` for no live login.
    pub fn expires_at(&self, headers: &HeaderMap) -> Option<tokio::time::Instant> {
        let id = login_id(headers)?;
        let store = crate::sync::lock(&self.store);
        let entry = store.entries.get(&digest(id))?;
        let left = ABSOLUTE_EXPIRY.saturating_sub(age(entry.signed_in, SystemTime::now()));
        Some(tokio::time::Instant::now() + left + Duration::from_secs(1))
    }

    /// Ends the login a request's cookie names (sign-out).
    pub fn end(&self, headers: &HeaderMap) {
        if let Some(id) = login_id(headers) {
            let mut store = crate::sync::lock(&self.store);
            if store.entries.remove(&digest(id)).is_some() {
                store.save();
                self.tell_ended();
            }
        }
    }

    /// Changes whenever a login ends (sign-out, expiry, eviction, its
    /// token removed or given a new secret).
    pub fn watch_ended(&self) -> tokio::sync::watch::Receiver<u64> {
        self.ended.subscribe()
    }

    fn tell_ended(&self) {
        self.ended.send_modify(|count| *count += 1);
    }
}

impl Store {
    /// Writes every login to the file, if logins are kept in one. A
    /// write that fails is logged; the logins stay in memory.
    fn save(&mut self) {
        let Some(dir) = &self.dir else { return };
        let text = render_store(&self.entries);
        match dir.replace(STORE_FILE, text.as_bytes()) {
            Ok(()) => self
                .entries
                .values_mut()
                .for_each(|e| e.saved_seen = e.last_seen),
            Err(e) => tracing::warn!("web sessions: cannot save them: {e}"),
        }
    }
}

/// Removes the login idle longest (of `token` only, when given).
fn evict_idlest(entries: &mut HashMap<[u8; 32], Entry>, token: Option<&str>) {
    if let Some(oldest) = entries
        .iter()
        .filter(|(_, e)| token.is_none_or(|t| e.token == t))
        .min_by_key(|(_, e)| e.last_seen)
        .map(|(k, _)| *k)
    {
        entries.remove(&oldest);
    }
}

/// Brings logins read back from the file within both caps, ending the
/// idlest of a token over its share first.
fn trim_to_caps(entries: &mut HashMap<[u8; 32], Entry>) {
    let mut per_token: HashMap<String, usize> = HashMap::new();
    for e in entries.values() {
        *per_token.entry(e.token.clone()).or_default() += 1;
    }
    for (token, count) in per_token {
        for _ in MAX_LOGINS_PER_TOKEN..count {
            evict_idlest(entries, Some(&token));
        }
    }
    while entries.len() > MAX_LOGINS {
        evict_idlest(entries, None);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The store as its file holds it: a header, then one line per login:
/// the id's digest, the secret's digest, sign-in and last use in Unix
/// seconds, and the token's name, all hex or decimal (a name may hold any
/// character).
fn render_store(entries: &HashMap<[u8; 32], Entry>) -> String {
    let mut text = format!("{STORE_HEADER}\n");
    for (key, e) in entries {
        text.push_str(&format!(
            "{} {} {} {} {}\n",
            hex(key),
            hex(&e.secret),
            unix(e.signed_in),
            unix(e.last_seen),
            hex(e.token.as_bytes())
        ));
    }
    text
}

/// The logins in a store file's text; a line that is not one is skipped
/// (and logged once), so a damaged file loses only what is damaged.
fn parse_store(text: &str) -> HashMap<[u8; 32], Entry> {
    let mut lines = text.lines();
    if lines.next() != Some(STORE_HEADER) {
        tracing::warn!("web sessions: {STORE_FILE} is not a session store; starting with none");
        return HashMap::new();
    }
    let mut skipped = 0usize;
    let mut entries = HashMap::new();
    for line in lines {
        match parse_line(line) {
            Some((key, entry)) => {
                entries.insert(key, entry);
            }
            None => skipped += 1,
        }
    }
    if skipped > 0 {
        tracing::warn!("web sessions: {skipped} damaged line(s) in {STORE_FILE} skipped");
    }
    entries
}

fn parse_line(line: &str) -> Option<([u8; 32], Entry)> {
    let mut fields = line.split(' ');
    let key: [u8; 32] = unhex(fields.next()?)?.try_into().ok()?;
    let secret: [u8; 32] = unhex(fields.next()?)?.try_into().ok()?;
    let at = |field: &str| -> Option<SystemTime> {
        UNIX_EPOCH.checked_add(Duration::from_secs(field.parse().ok()?))
    };
    let signed_in = at(fields.next()?)?;
    let last_seen = at(fields.next()?)?;
    let token = String::from_utf8(unhex(fields.next()?)?).ok()?;
    if fields.next().is_some() || token.is_empty() {
        return None;
    }
    Some((
        key,
        Entry {
            token,
            secret,
            signed_in,
            last_seen,
            saved_seen: last_seen,
        },
    ))
}

/// How long ago `then` was; a clock set back counts as no time.
fn age(then: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(then).unwrap_or_default()
}

fn expired(entry: &Entry, now: SystemTime) -> bool {
    age(entry.last_seen, now) > IDLE_EXPIRY || age(entry.signed_in, now) > ABSOLUTE_EXPIRY
}

/// The login id in a request's `Cookie` headers: the value of
/// [`COOKIE`], if it has the shape of an id (anything else is ignored
/// before the store is looked at).
pub fn login_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .filter(|v| v.len() == ID_CHARS && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The `Set-Cookie` value that gives a browser its login. No `Secure`:
/// the daemon serves plain HTTP (TLS, if any, is a proxy's; see the
/// README's security notes).
pub fn set_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        ABSOLUTE_EXPIRY.as_secs()
    )
}

/// The `Set-Cookie` value that removes the login cookie.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_a_well_formed_id_is_read_from_the_cookie() {
        let mut h = HeaderMap::new();
        assert_eq!(login_id(&h), None);
        let id = "a".repeat(ID_CHARS);
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("theme=dark; {COOKIE}={id}")).unwrap(),
        );
        assert_eq!(login_id(&h), Some(id.as_str()));
        for bad in [
            format!("{COOKIE}=short"),
            format!("{COOKIE}={}", "g".repeat(ID_CHARS)),
            format!("{COOKIE}={}", "a".repeat(ID_CHARS + 1)),
            format!("x{COOKIE}={id}"),
        ] {
            h.insert(header::COOKIE, HeaderValue::from_str(&bad).unwrap());
            assert_eq!(login_id(&h), None, "{bad}");
        }
    }

    #[test]
    fn sessions_expire_idle_and_absolutely() {
        let now = SystemTime::now();
        let entry = |signed_in_ago: Duration, idle: Duration| Entry {
            token: "noc".into(),
            secret: [0; 32],
            signed_in: now - signed_in_ago,
            last_seen: now - idle,
            saved_seen: now - idle,
        };
        let minute = Duration::from_secs(60);
        assert!(!expired(&entry(minute, minute), now));
        assert!(expired(
            &entry(IDLE_EXPIRY + minute, IDLE_EXPIRY + minute),
            now
        ));
        assert!(expired(&entry(ABSOLUTE_EXPIRY + minute, minute), now));
    }

    fn read_token(name: &str) -> TokenConfig {
        TokenConfig {
            name: name.into(),
            secret_file: "/s".into(),
            secret: crate::config::TokenSecret::new(format!("{name}-secret").as_bytes()),
            ports: vec!["*".into()],
            access: crate::config::TokenAccess::Read,
            use_credentials: false,
            power: false,
            policy: None,
            approve: false,
        }
    }

    fn token_of(name: &str, access: TokenAccess) -> TokenConfig {
        TokenConfig {
            access,
            ..read_token(name)
        }
    }

    #[test]
    fn a_token_at_a_cap_ends_only_its_own_logins() {
        let logins = BrowserLogins::default();
        let admin = token_of("admin", TokenAccess::Admin);
        let guesser = read_token("guesser");
        let mut tokens = vec![admin.clone(), guesser.clone(), read_token("newcomer")];
        tokens.extend(
            (0..MAX_LOGINS / MAX_LOGINS_PER_TOKEN)
                .map(|t| token_of(&format!("t{t}"), TokenAccess::Admin)),
        );
        let admin_id = logins.create(&admin, &tokens).unwrap();
        for _ in 0..MAX_LOGINS_PER_TOKEN + 10 {
            logins.create(&guesser, &tokens).unwrap();
        }
        let count = |name: &str| {
            crate::sync::lock(&logins.store)
                .entries
                .values()
                .filter(|e| e.token == name)
                .count()
        };
        assert_eq!(count("guesser"), MAX_LOGINS_PER_TOKEN);
        assert!(
            crate::sync::lock(&logins.store)
                .entries
                .contains_key(&digest(&admin_id))
        );
        // Fill the whole store with other admin tokens: a token with no
        // login is refused, one with a login ends its own.
        for t in 0..MAX_LOGINS / MAX_LOGINS_PER_TOKEN {
            for _ in 0..MAX_LOGINS_PER_TOKEN {
                let _ = logins.create(&tokens[3 + t], &tokens);
            }
        }
        assert_eq!(crate::sync::lock(&logins.store).entries.len(), MAX_LOGINS);
        assert_eq!(
            logins.create(&read_token("newcomer"), &tokens),
            Err(LoginRefused::Full),
        );
        logins.create(&admin, &tokens).unwrap();
        assert_eq!(count("admin"), 1);
        assert_eq!(crate::sync::lock(&logins.store).entries.len(), MAX_LOGINS);
    }

    #[test]
    fn read_tokens_together_keep_half_the_logins_and_leave_room_above() {
        let logins = BrowserLogins::default();
        let readers: Vec<TokenConfig> = (0..8).map(|i| read_token(&format!("r{i}"))).collect();
        let noc = token_of("noc", TokenAccess::Write);
        let admin = token_of("admin", TokenAccess::Admin);
        let mut tokens = readers.clone();
        tokens.extend([noc.clone(), admin.clone()]);
        let mut refused = None;
        'fill: for reader in &readers {
            for _ in 0..MAX_LOGINS_PER_TOKEN {
                if let Err(e) = logins.create(reader, &tokens) {
                    refused = Some((reader.name.clone(), e));
                    break 'fill;
                }
            }
        }
        assert_eq!(
            refused,
            Some((
                "r4".to_owned(),
                LoginRefused::Crowded {
                    access: TokenAccess::Read,
                    share: MAX_LOGINS / 2
                }
            ))
        );
        assert_eq!(
            crate::sync::lock(&logins.store).entries.len(),
            MAX_LOGINS / 2
        );
        // A reader with logins signs in again in place of its own idlest.
        logins.create(&readers[0], &tokens).unwrap();
        // The operator and the admin sign in.
        logins.create(&noc, &tokens).unwrap();
        logins.create(&admin, &tokens).unwrap();
    }

    #[test]
    fn the_cookie_is_http_only_and_strict() {
        let c = set_cookie("ab");
        assert!(
            c.contains("HttpOnly") && c.contains("SameSite=Strict"),
            "{c}"
        );
        assert!(clear_cookie().contains("Max-Age=0"));
    }

    #[test]
    fn the_store_file_round_trips_and_damage_loses_only_itself() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut entries = HashMap::new();
        for (i, token) in ["noc", "name with spaces\nand a newline"]
            .iter()
            .enumerate()
        {
            entries.insert(
                [i as u8; 32],
                Entry {
                    token: (*token).into(),
                    secret: [7; 32],
                    signed_in: now,
                    last_seen: now + Duration::from_secs(5),
                    saved_seen: now + Duration::from_secs(5),
                },
            );
        }
        let text = render_store(&entries);
        assert!(!text.contains("noc"), "names are hex: {text}");
        assert_eq!(parse_store(&text), entries);
        let damaged = format!("{text}zz 12 x\n{}\n", "a".repeat(500));
        assert_eq!(parse_store(&damaged), entries);
        assert!(parse_store("not a store\n").is_empty());
    }

    #[test]
    fn a_persistent_store_is_private_and_outlives_its_handle() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let sessions = BrowserLogins::persistent(&state).unwrap();
        let token = TokenConfig {
            name: "noc".into(),
            secret_file: "/s".into(),
            secret: crate::config::TokenSecret::new(b"noc-secret"),
            ports: vec!["*".into()],
            access: crate::config::TokenAccess::Read,
            use_credentials: false,
            power: false,
            policy: None,
            approve: false,
        };
        let id = sessions
            .create(&token, std::slice::from_ref(&token))
            .unwrap();
        let file = state.join(STORE_FILE);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!std::fs::read_to_string(&file).unwrap().contains(&id));
        drop(sessions);
        let again = BrowserLogins::persistent(&state).unwrap();
        let store = crate::sync::lock(&again.store);
        assert_eq!(store.entries[&digest(&id)].token, "noc");
        drop(store);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            axum::http::HeaderValue::from_str(&format!("{COOKIE}={id}")).unwrap(),
        );
        again.end(&headers);
        assert!(
            BrowserLogins::persistent(&state)
                .unwrap()
                .store
                .lock()
                .unwrap()
                .entries
                .is_empty()
        );
    }
}
