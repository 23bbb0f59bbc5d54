//! The driver a controller's config names, dispatched to its protocol.

use super::driver::{DriverError, OutletState, PowerDriver};
use super::ipmi::Ipmi;
use super::nut::Nut;
use super::redfish::Redfish;
use super::redfish_http::Endpoint;
use super::snmp::Snmp;
use crate::config::power::{PowerController, PowerDriverConfig};

/// The driver a controller's config names.
pub enum AnyDriver {
    /// A NUT server.
    Nut(Nut),
    /// A PDU's SNMP agent.
    Snmp(Snmp),
    /// A server's BMC over Redfish.
    Redfish(Redfish),
    /// A server's BMC over IPMI LAN.
    Ipmi(Ipmi),
}

impl AnyDriver {
    /// The driver of `controller`, each exchange bounded by its deadline.
    pub fn of(controller: &PowerController) -> AnyDriver {
        match &controller.driver {
            PowerDriverConfig::Nut {
                address,
                ups,
                username,
                password,
            } => AnyDriver::Nut(Nut {
                address: address.clone(),
                ups: ups.clone(),
                login: username
                    .clone()
                    .zip(password.as_ref().map(|p| p.expose().to_owned())),
                deadline: controller.deadline,
            }),
            PowerDriverConfig::Snmp(config) => AnyDriver::Snmp(Snmp {
                config: config.clone(),
                deadline: controller.deadline,
            }),
            PowerDriverConfig::Redfish(r) => {
                let tls = r
                    .endpoint
                    .https
                    .then(|| super::redfish::tls_for(r.ca_file.as_deref()));
                AnyDriver::Redfish(Redfish {
                    endpoint: Endpoint {
                        host: r.endpoint.host.clone(),
                        port: r.endpoint.port,
                        authority: r.endpoint.authority.clone(),
                        tls: tls.clone().and_then(Result::ok),
                        login: Some((r.username.clone(), r.password.expose().to_owned())),
                    },
                    tls_error: tls.and_then(Result::err),
                    deadline: controller.deadline,
                })
            }
            PowerDriverConfig::Ipmi(i) => AnyDriver::Ipmi(Ipmi {
                host: i.host.clone(),
                port: i.port,
                cipher_suite: i.cipher_suite,
                username: i.username.clone(),
                password: i.password.expose().to_owned(),
                deadline: controller.deadline,
            }),
        }
    }
}

impl PowerDriver for AnyDriver {
    async fn state(&self, outlet: &str) -> Result<OutletState, DriverError> {
        match self {
            AnyDriver::Nut(n) => n.state(outlet).await,
            AnyDriver::Snmp(s) => s.state(outlet).await,
            AnyDriver::Redfish(r) => r.state(outlet).await,
            AnyDriver::Ipmi(i) => i.state(outlet).await,
        }
    }

    async fn switch(&self, outlet: &str, on: bool) -> Result<String, DriverError> {
        match self {
            AnyDriver::Nut(n) => n.switch(outlet, on).await,
            AnyDriver::Snmp(s) => s.switch(outlet, on).await,
            AnyDriver::Redfish(r) => r.switch(outlet, on).await,
            AnyDriver::Ipmi(i) => i.switch(outlet, on).await,
        }
    }
}
