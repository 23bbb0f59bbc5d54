//! The fleet's NATS subjects, in three trees a site's credentials are
//! cut along: `serialgate.site.<SITE>.…` is what is asked of a site (it
//! may subscribe there and nowhere else), `serialgate.from.<SITE>.…` and
//! `serialgate.announce.<SITE>` are what a site tells the fleet (it may
//! publish there, and the replies NATS lets it send with
//! `allow_responses`, nothing else). A serving gateway publishes under
//! every site's `serialgate.site.*` and hears every `serialgate.from.*`.

/// Every subject of the fleet starts with this token.
pub const PREFIX: &str = "serialgate";

/// The root of everything asked of `site`: its credentials subscribe to
/// `<root>.>`, so a new kind of request needs no new permission.
pub fn to_site(site: &str) -> String {
    format!("{PREFIX}.site.{site}")
}

/// The root of everything `site` tells the fleet besides its
/// announcements: its credentials publish `<root>.>`.
pub fn from_site(site: &str) -> String {
    format!("{PREFIX}.from.{site}")
}

/// Where a site's gateway takes the tool calls forwarded to its ports
/// (request/reply).
pub fn calls(site: &str) -> String {
    format!("{}.call", to_site(site))
}

/// Where a serving gateway tells a site that one of its MCP sessions
/// ended, so that the site ends that session's sessions for forwarded
/// calls at once (their connections, their write holds).
pub fn session_ends(site: &str) -> String {
    format!("{}.end", to_site(site))
}

/// Where a serving gateway says, every few seconds, that it lives and
/// keeps sessions at `site` (`fleet/heartbeat.rs`).
pub fn alive(site: &str) -> String {
    format!("{}.alive", to_site(site))
}

/// Where a serving gateway tells a site that the agent cancelled a
/// forwarded call still running there (a line waiting for approval is
/// withdrawn, as a local call's is).
pub fn call_cancels(site: &str) -> String {
    format!("{}.cancel", to_site(site))
}

/// Where a site's gateway announces its ports.
pub fn announcements(site: &str) -> String {
    format!("{PREFIX}.announce.{site}")
}

/// Where a site's gateway publishes the alerts of its configured
/// watches, which the site's own JetStream stream ([`alert_stream`])
/// keeps.
pub fn alerts(site: &str) -> String {
    format!("{}.alerts", from_site(site))
}

/// The JetStream stream, in the site's own domain (its name), that keeps
/// `site`'s alerts while its uplink is down. Named after the site too, so
/// that the acks of its consumers (`$JS.ACK.<stream>.…`) name one site
/// and a site's credentials may be granted only its own.
pub fn alert_stream(site: &str) -> String {
    format!("serialgate-alerts-{site}")
}

/// The root of the console requests a site takes (a person's session
/// opened, kept and typed into; ranges of a port's output read):
/// `<root>.open`, `<root>.keep`, `<root>.read`, `<root>.in.<ID>`.
pub fn consoles(site: &str) -> String {
    format!("{}.console", to_site(site))
}

/// Where `site` says how far the output of its `port` reaches (while a
/// console of another gateway watches it).
pub fn console_heads(site: &str, port: &str) -> String {
    format!("{}.console.head.{port}", from_site(site))
}

/// Where `site` sends the console session `id` its messages.
pub fn console_out(site: &str, id: &str) -> String {
    format!("{}.console.out.{id}", from_site(site))
}

/// Where `site` tells a serving gateway's MCP session `id` (its own id
/// there, drawn by that gateway) what its forwarded calls have for the
/// agent's client: progress, a question for its user, its withdrawal.
pub fn client_events(site: &str, id: &str) -> String {
    format!("{}.client.{id}", from_site(site))
}

/// Where a serving gateway gives a site its agent's user's answers to the
/// site's questions.
pub fn user_answers(site: &str) -> String {
    format!("{}.answer", to_site(site))
}

/// What a serving gateway subscribes to, to hear every site.
pub const ALL_ANNOUNCEMENTS: &str = "serialgate.announce.*";

/// The site an announcement subject names (the subject, not the payload,
/// is trusted: NATS let only that site's credentials publish it).
pub fn announcing_site(subject: &str) -> Option<&str> {
    subject
        .strip_prefix(PREFIX)?
        .strip_prefix(".announce.")
        .filter(|site| !site.is_empty() && !site.contains('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_name_one_site() {
        assert_eq!(calls("dc1"), "serialgate.site.dc1.call");
        assert!(calls("dc1").starts_with(&format!("{}.", to_site("dc1"))));
        assert!(session_ends("dc1").starts_with(&format!("{}.", to_site("dc1"))));
        assert_eq!(from_site("dc1"), "serialgate.from.dc1");
        assert_eq!(alerts("dc1"), "serialgate.from.dc1.alerts");
        assert_eq!(alert_stream("dc1"), "serialgate-alerts-dc1");
        assert!(consoles("dc1").starts_with(&format!("{}.", to_site("dc1"))));
        assert!(console_heads("dc1", "sw1").starts_with(&format!("{}.", from_site("dc1"))));
        assert!(console_out("dc1", "ab12").starts_with(&format!("{}.", from_site("dc1"))));
        assert!(client_events("dc1", "ab12").starts_with(&format!("{}.", from_site("dc1"))));
        assert!(user_answers("dc1").starts_with(&format!("{}.", to_site("dc1"))));
        assert_eq!(announcing_site(&announcements("dc1")), Some("dc1"));
        assert_eq!(announcing_site("serialgate.announce.dc1.x"), None);
        assert_eq!(announcing_site("serialgate.site.dc1.call"), None);
    }
}
