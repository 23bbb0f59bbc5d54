//! SNMP to a switched PDU's agent (async-snmp's client over UDP): an
//! outlet's state is a GET of its profile's state column with the
//! outlet's number appended, switching it a SET of the control column to
//! the profile's on or off INTEGER, after a GET that shows the outlet is
//! there. v2c logs in with the community, v3 with USM authPriv (engine
//! discovery first, inside the same deadline).
//!
//! An agent answers a wrong community with silence, and a wrong v3 key
//! with a Report it cannot authenticate, which the client drops (an
//! unauthenticated Report could be anyone's): both end at the deadline,
//! which here says what to check besides the network.

use std::time::Duration;

use async_snmp::{
    Auth, AuthProtocol, Client, Error, ErrorStatus, Oid, PrivProtocol, Retry, UsmConfig, Value,
};

use super::driver::{DriverError, OutletState, PowerDriver};
use crate::config::power_snmp::{SnmpAuth, SnmpConfig, SnmpSecurity};
use crate::error::label;

/// A PDU's SNMP agent and the profile of its outlets.
pub struct Snmp {
    /// Where and how it is reached.
    pub config: SnmpConfig,
    /// How long one action (discovery, the GET, the SET) may take in all.
    pub deadline: Duration,
}

/// What to check when the agent refuses, by login.
fn check(security: &SnmpSecurity) -> &'static str {
    match security {
        SnmpSecurity::V2c { .. } => {
            "check that community_file holds a community it grants write access (rwcommunity)"
        }
        SnmpSecurity::V3 { .. } => {
            "check username, auth_protocol and the passphrases in auth_password_file and priv_password_file against the agent's user, and that it grants the user write access"
        }
    }
}

/// What to check when the agent stays silent, by login.
fn check_silent(security: &SnmpSecurity) -> String {
    let why = match security {
        SnmpSecurity::V2c { .. } => "an SNMP agent does not answer a wrong community",
        SnmpSecurity::V3 { .. } => {
            "an SNMP agent's report of a wrong v3 user or key cannot be authenticated, so it goes unheard"
        }
    };
    format!(
        "{why}: {}, that it is up and that the address reaches it",
        check(security)
    )
}

/// The library's protocol for `auth`.
fn auth_protocol(auth: SnmpAuth) -> AuthProtocol {
    match auth {
        SnmpAuth::Sha => AuthProtocol::Sha1,
        SnmpAuth::Sha224 => AuthProtocol::Sha224,
        SnmpAuth::Sha256 => AuthProtocol::Sha256,
        SnmpAuth::Sha384 => AuthProtocol::Sha384,
        SnmpAuth::Sha512 => AuthProtocol::Sha512,
    }
}

impl Snmp {
    /// What to check when it refused, for this controller's login.
    fn check(&self) -> String {
        check(&self.config.security).to_owned()
    }

    /// The deadline passed, what to check with it.
    fn silent(&self) -> DriverError {
        DriverError::Silent {
            deadline: self.deadline,
            check: check_silent(&self.config.security),
        }
    }

    /// The driver's error for the library's `e`.
    fn failed(&self, e: &Error) -> DriverError {
        let shown = |s: &dyn std::fmt::Display| label(&s.to_string());
        match e.exchange_source() {
            Error::Timeout { .. } | Error::ConstructionTimeout { .. } => self.silent(),
            Error::Network { source, .. } => DriverError::Unreachable(shown(source)),
            Error::Snmp { status, .. } => match status {
                ErrorStatus::NoSuchName
                | ErrorStatus::NoCreation
                | ErrorStatus::NotWritable
                | ErrorStatus::InconsistentName => DriverError::NoOutlet(shown(status)),
                ErrorStatus::NoAccess | ErrorStatus::AuthorizationError | ErrorStatus::ReadOnly => {
                    DriverError::Denied {
                        why: shown(status),
                        check: self.check(),
                    }
                }
                other => DriverError::Refused(shown(other)),
            },
            Error::Auth { .. } => DriverError::Denied {
                why: "its answer failed authentication".into(),
                check: self.check(),
            },
            Error::Report { status, .. } => DriverError::Denied {
                why: shown(status),
                check: self.check(),
            },
            other => DriverError::Unreachable(shown(other)),
        }
    }

    /// A client for the agent, logged in as the config says.
    async fn client(&self) -> Result<Client, DriverError> {
        let auth: Auth = match &self.config.security {
            SnmpSecurity::V2c { community } => Auth::v2c(community.expose()),
            SnmpSecurity::V3 {
                username,
                auth_protocol: auth,
                auth_password,
                priv_password,
            } => UsmConfig::new(username.clone().into_bytes())
                .auth_priv(
                    auth_protocol(*auth),
                    auth_password.expose(),
                    PrivProtocol::Aes128,
                    priv_password.expose(),
                )
                .map_err(|e| {
                    DriverError::Refused(format!("its SNMPv3 keys: {}", label(&e.to_string())))
                })?
                .into(),
        };
        // One retry for a lost datagram, both inside the deadline.
        let retry = Retry::fixed(1, Duration::ZERO).unwrap_or_else(|_| Retry::none());
        Client::builder(self.config.address.as_str(), auth)
            .request_timeout(self.deadline / 2)
            .retry(retry)
            .connect()
            .await
            .map_err(|e| self.failed(&e))
    }

    /// Runs `action` under the deadline.
    async fn within<T>(
        &self,
        action: impl std::future::Future<Output = Result<T, DriverError>>,
    ) -> Result<T, DriverError> {
        tokio::time::timeout(self.deadline, action)
            .await
            .map_err(|_| self.silent())?
    }

    /// The OID of `column` for `outlet`.
    fn oid(column: &str, outlet: &str) -> Result<Oid, DriverError> {
        Oid::parse(&format!("{column}.{outlet}"))
            .map_err(|e| DriverError::Refused(format!("the OID {column}.{outlet}: {e}")))
    }

    /// GETs the outlet's state column: its INTEGER.
    async fn read(&self, client: &Client, outlet: &str) -> Result<Value, DriverError> {
        let column = &self.config.outlets.state_oid;
        let oid = Snmp::oid(column, outlet)?;
        let response = client.get(&oid).await.map_err(|e| self.failed(&e))?;
        let value = response.single().map(|v| v.value.clone()).ok_or_else(|| {
            DriverError::Unreachable(format!(
                "its answer to GET {column}.{outlet} has no single value"
            ))
        })?;
        match value {
            Value::NoSuchObject | Value::NoSuchInstance | Value::EndOfMibView => Err(
                DriverError::NoOutlet(format!("GET {column}.{outlet}: {}", value.kind())),
            ),
            v => Ok(v),
        }
    }
}

impl PowerDriver for Snmp {
    async fn state(&self, outlet: &str) -> Result<OutletState, DriverError> {
        self.within(async {
            let client = self.client().await?;
            let p = &self.config.outlets;
            Ok(match self.read(&client, outlet).await? {
                Value::Integer(n) if n == p.on_value => OutletState::On,
                Value::Integer(n) if n == p.off_value => OutletState::Off,
                Value::Integer(n) => OutletState::Other(format!("INTEGER {n}")),
                other => OutletState::Other(label(&format!("{other:?}"))),
            })
        })
        .await
    }

    async fn switch(&self, outlet: &str, on: bool) -> Result<String, DriverError> {
        self.within(async {
            let client = self.client().await?;
            // The outlet must be there before anything is written.
            self.read(&client, outlet).await?;
            let p = &self.config.outlets;
            let value = if on { p.on_value } else { p.off_value };
            let oid = Snmp::oid(&p.control_oid, outlet)?;
            client
                .set(&oid, Value::Integer(value))
                .await
                .map_err(|e| self.failed(&e))?;
            Ok(format!(
                "SET {}.{outlet} = {value} ({}): noError",
                p.control_oid,
                if on { "on" } else { "off" }
            ))
        })
        .await
    }
}
