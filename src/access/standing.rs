//! A connection's caller kept current: an open console attachment or
//! ports-page feed resolves its caller again whenever the config is
//! reloaded or a browser login ends, so a removed token, a token given a
//! new secret or an ended sign-in closes what it had open, and a lowered
//! access applies from then on. A browser login also ends at its absolute
//! expiry, open or not. Nothing polls: the gateway's config generation and
//! the browser logins' end count are `watch` channels, the expiry a timer.

use tokio::sync::watch;
use tokio::time::Instant;

use super::caller::Caller;
use crate::config::TokenAccess;
use crate::gateway::Gateway;

/// Resolves a browser login's caller again (`None`: the login ended, or
/// its token is gone or has a new secret).
pub type LoginResolver = Box<dyn Fn(&Gateway) -> Option<Caller> + Send + Sync>;

/// How a connection's caller is found again.
enum Source {
    /// The local operator or a loopback caller without auth: nothing a
    /// reload or a sign-out takes away.
    Fixed,
    /// A bearer token: found again by its name in the config in force,
    /// and only while its secret is still the one the connection showed
    /// (the digest as the config held it when the connection opened).
    Token { secret: Option<[u8; 32]> },
    /// A person of `[[people]]` at the SSH door: found again by name, and
    /// only while the key they signed in with is still one of theirs.
    Person { key: Box<russh::keys::PublicKey> },
    /// A browser login: asked of the login store, and re-checked when a
    /// login ends and once its absolute expiry has passed.
    Login {
        resolve: LoginResolver,
        ended: watch::Receiver<u64>,
        expires: Option<Instant>,
    },
}

/// A connection's caller, and what tells it that the caller may have
/// changed.
pub struct Standing {
    caller: Caller,
    gateway: Gateway,
    config: watch::Receiver<u64>,
    source: Source,
}

/// What a re-check found.
#[derive(Debug, PartialEq, Eq)]
pub enum Recheck {
    /// The caller may do what it could before.
    Same,
    /// Its access or ports changed: [`Standing::caller`] is the new one.
    Changed,
}

impl Standing {
    fn new(caller: Caller, gateway: &Gateway, source: Source) -> Standing {
        let mut config = gateway.watch_config();
        config.borrow_and_update();
        Standing {
            caller,
            gateway: gateway.clone(),
            config,
            source,
        }
    }

    /// A caller nothing revokes (the local operator, anonymous).
    pub fn fixed(caller: Caller, gateway: &Gateway) -> Standing {
        Standing::new(caller, gateway, Source::Fixed)
    }

    /// A bearer token's caller, found again by name at every reload; a
    /// new secret for the name closes the connection as a removal does.
    pub fn token(caller: Caller, gateway: &Gateway) -> Standing {
        let secret = token_digest(gateway, &caller.name);
        Standing::new(caller, gateway, Source::Token { secret })
    }

    /// A person's caller at the SSH door, signed in with `key`, resolved
    /// now by `name` from the config in force (a person removed, or their
    /// key, since they signed in gets `Err`, saying so) and again at every
    /// reload: a removed key or person closes the connection, narrowed
    /// ports or access apply at once.
    pub fn person(
        name: &str,
        gateway: &Gateway,
        key: russh::keys::PublicKey,
    ) -> Result<Standing, String> {
        // The generation first, then the caller: a reload in between is
        // seen by the next `changed`, never missed.
        let mut config = gateway.watch_config();
        config.borrow_and_update();
        let caller = person_caller(gateway, name, &key)?;
        Ok(Standing {
            caller,
            gateway: gateway.clone(),
            config,
            source: Source::Person { key: Box::new(key) },
        })
    }

    /// A browser login's caller: `resolve` finds it again at every reload,
    /// whenever `ended` says a login ended, and at `expires` (the moment
    /// the login's absolute lifetime has passed), when nothing else would
    /// tell an open connection that its login is over.
    pub fn login(
        caller: Caller,
        gateway: &Gateway,
        mut ended: watch::Receiver<u64>,
        resolve: LoginResolver,
        expires: Option<Instant>,
    ) -> Standing {
        ended.borrow_and_update();
        Standing::new(
            caller,
            gateway,
            Source::Login {
                resolve,
                ended,
                expires,
            },
        )
    }

    /// The caller as last resolved.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Waits for a reload or the end of a browser login, then resolves
    /// the caller again. `Err` says why the connection must close: its
    /// token is gone, its login ended, or its access no longer opens a
    /// console. Never ends for a fixed caller. Cancel-safe: a wake-up not
    /// yet handled stays pending.
    pub async fn changed(&mut self) -> Result<Recheck, String> {
        self.woken().await;
        self.resolve()
    }

    /// Resolves the caller again at once if a reload, a login's end or
    /// its expiry has come that [`Standing::changed`] has not handled yet
    /// (`Same` when none has), as `changed` would. A connection calls it
    /// before acting on what its client sent, so that a frame read in the
    /// same turn as a reload is judged by the rights now in force, never
    /// by those the reload took away.
    pub fn check_now(&mut self) -> Result<Recheck, String> {
        let reloaded = self.config.has_changed().unwrap_or(false);
        let due = match &mut self.source {
            Source::Fixed => false,
            Source::Token { .. } | Source::Person { .. } => reloaded,
            Source::Login { ended, expires, .. } => {
                let expired = expires.is_some_and(|at| Instant::now() >= at);
                if expired {
                    // Once, as `changed` does.
                    *expires = None;
                }
                reloaded || expired || ended.has_changed().unwrap_or(false)
            }
        };
        if due {
            self.resolve()
        } else {
            Ok(Recheck::Same)
        }
    }

    /// Returns once a reload, a login's end or its expiry has come.
    async fn woken(&mut self) {
        match &mut self.source {
            Source::Fixed => std::future::pending::<()>().await,
            Source::Token { .. } | Source::Person { .. } => {
                if self.config.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            Source::Login { ended, expires, .. } => {
                let expiry = async {
                    match *expires {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    changed = self.config.changed() => {
                        if changed.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                    changed = ended.changed() => {
                        if changed.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                    () = expiry => {
                        // Once: a login the store still finds valid then
                        // (its clock set back) is not asked again each turn.
                        *expires = None;
                    }
                }
            }
        }
    }

    /// The caller found again from the config in force (or the login
    /// store), compared with the one the connection had.
    fn resolve(&mut self) -> Result<Recheck, String> {
        self.config.borrow_and_update();
        let name = self.caller.name.clone();
        let found = match &mut self.source {
            Source::Fixed => Some(self.caller.clone()),
            Source::Token { secret } => {
                let config = self.gateway.config();
                let token = config.token_named(&name).ok_or_else(|| {
                    format!("token {name:?} was removed from the config; this connection is closed")
                })?;
                if Some(*token.secret.digest()) != *secret {
                    return Err(format!(
                        "token {name:?} was given a new secret; this connection is closed. Connect again with the new secret"
                    ));
                }
                Some(Caller::from_token(token))
            }
            Source::Person { key } => Some(person_caller(&self.gateway, &name, key)?),
            Source::Login { resolve, ended, .. } => {
                ended.borrow_and_update();
                Some(resolve(&self.gateway).ok_or_else(|| {
                    format!(
                        "the browser login of token {name:?} ended (signed out, expired, or the token was removed or given a new secret); sign in again"
                    )
                })?)
            }
        };
        let Some(found) = found else {
            return Ok(Recheck::Same);
        };
        if found.access < TokenAccess::Read {
            return Err(format!(
                "token {name:?} now has metrics access, which reaches no port (no console, feed or stream of alerts); this connection is closed"
            ));
        }
        if found.same_rights(&self.caller) {
            return Ok(Recheck::Same);
        }
        self.caller = found;
        Ok(Recheck::Changed)
    }
}

/// The caller of person `name` signed in with `key`, as the config in
/// force has them; `Err` says why they no longer get in.
fn person_caller(
    gateway: &Gateway,
    name: &str,
    key: &russh::keys::PublicKey,
) -> Result<Caller, String> {
    let config = gateway.config();
    let person = config
        .people
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            format!("person {name:?} was removed from the config; this connection is closed")
        })?;
    if !person.has_key(key) {
        return Err(format!(
            "the key person {name:?} signed in with was removed from their authorized_keys; this connection is closed"
        ));
    }
    Ok(Caller::from_person(person))
}

/// The digest of the secret the config in force gives token `name`.
pub(crate) fn token_digest(gateway: &Gateway, name: &str) -> Option<[u8; 32]> {
    gateway
        .config()
        .token_named(name)
        .map(|t| *t.secret.digest())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::config::Config;

    #[tokio::test(start_paused = true)]
    async fn an_open_login_ends_at_its_expiry_with_nothing_else_happening() {
        let gateway = Gateway::start(Config::default_with_builtins(), CancellationToken::new());
        let (_tell, ended) = watch::channel(0);
        let expired = Arc::new(AtomicBool::new(false));
        let store_says = expired.clone();
        let resolve: LoginResolver =
            Box::new(move |_| (!store_says.load(Ordering::SeqCst)).then(Caller::operator));
        let lifetime = Duration::from_secs(24 * 3600);
        let start = Instant::now();
        let mut standing = Standing::login(
            Caller::operator(),
            &gateway,
            ended,
            resolve,
            Some(start + lifetime),
        );
        // The store finds the login expired from its deadline on.
        expired.store(true, Ordering::SeqCst);
        let why = tokio::time::timeout(lifetime * 2, standing.changed())
            .await
            .expect("woken at the expiry")
            .expect_err("the login ended");
        assert!(why.contains("ended"), "{why}");
        assert!(start.elapsed() >= lifetime);
    }

    fn noc(access: TokenAccess) -> crate::config::TokenConfig {
        crate::config::TokenConfig::for_tests("noc", access)
    }

    fn with_tokens(tokens: Vec<crate::config::TokenConfig>) -> Config {
        let mut config = Config::default_with_builtins();
        config.tokens = tokens;
        config
    }

    /// What a client sends in the same turn as a reload meets the new
    /// rights: `check_now` applies a reload `changed` has not handled yet,
    /// once.
    #[tokio::test(start_paused = true)]
    async fn a_reload_not_yet_awaited_is_applied_before_a_clients_frame() {
        let gateway = Gateway::start(
            with_tokens(vec![noc(TokenAccess::Write)]),
            CancellationToken::new(),
        );
        let caller = Caller::from_token(&gateway.config().tokens[0]);
        let mut standing = Standing::token(caller, &gateway);
        assert_eq!(standing.check_now(), Ok(Recheck::Same));
        gateway
            .reload(with_tokens(vec![noc(TokenAccess::Read)]))
            .await;
        assert_eq!(standing.check_now(), Ok(Recheck::Changed));
        assert_eq!(standing.caller().access, TokenAccess::Read);
        // Handled: neither way of asking sees that reload again.
        assert_eq!(standing.check_now(), Ok(Recheck::Same));
        let again = tokio::time::timeout(Duration::from_secs(3600), standing.changed()).await;
        assert!(again.is_err(), "woke without cause: {again:?}");
        // Lowered to metrics: whatever it holds open (a console, the
        // ports feed, a stream of alerts) ends, and is told so.
        gateway
            .reload(with_tokens(vec![noc(TokenAccess::Metrics)]))
            .await;
        let why = standing.check_now().expect_err("metrics reaches no port");
        assert!(why.contains("reaches no port"), "{why}");
        let mut standing = Standing::token(Caller::from_token(&noc(TokenAccess::Read)), &gateway);
        gateway.reload(with_tokens(Vec::new())).await;
        let why = standing.check_now().expect_err("the token was removed");
        assert!(why.contains("removed"), "{why}");
    }

    /// A browser login that ended is seen by `check_now` before the wait
    /// for it is polled.
    #[tokio::test]
    async fn a_login_that_ended_is_seen_before_its_wait_is_polled() {
        let gateway = Gateway::start(Config::default_with_builtins(), CancellationToken::new());
        let (tell, ended) = watch::channel(0);
        let over = Arc::new(AtomicBool::new(false));
        let store_says = over.clone();
        let resolve: LoginResolver =
            Box::new(move |_| (!store_says.load(Ordering::SeqCst)).then(Caller::operator));
        let mut standing = Standing::login(Caller::operator(), &gateway, ended, resolve, None);
        assert_eq!(standing.check_now(), Ok(Recheck::Same));
        over.store(true, Ordering::SeqCst);
        tell.send_modify(|n| *n += 1);
        let why = standing.check_now().expect_err("the login ended");
        assert!(why.contains("ended"), "{why}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_login_still_valid_at_its_expiry_is_not_asked_again_and_again() {
        let gateway = Gateway::start(Config::default_with_builtins(), CancellationToken::new());
        let (_tell, ended) = watch::channel(0);
        let asked = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let count = asked.clone();
        let resolve: LoginResolver = Box::new(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
            Some(Caller::operator())
        });
        let mut standing = Standing::login(
            Caller::operator(),
            &gateway,
            ended,
            resolve,
            Some(Instant::now() + Duration::from_secs(60)),
        );
        assert_eq!(standing.changed().await, Ok(Recheck::Same));
        // The next wait has no deadline left: only a reload or a login's
        // end wakes it.
        let again = tokio::time::timeout(Duration::from_secs(3600), standing.changed()).await;
        assert!(again.is_err(), "woke without cause: {again:?}");
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }
}
