//! The fleet's NATS subjects. A site's credentials allow it to subscribe
//! to its own call subject and to publish its own announcements (and the
//! replies NATS lets it send with `allow_responses`), nothing else.

/// Every subject of the fleet starts with this token.
pub const PREFIX: &str = "serialgate";

/// Where a site's gateway takes the tool calls forwarded to its ports
/// (request/reply).
pub fn calls(site: &str) -> String {
    format!("{PREFIX}.site.{site}.call")
}

/// Where a site's gateway announces its ports.
pub fn announcements(site: &str) -> String {
    format!("{PREFIX}.announce.{site}")
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
        assert_eq!(announcing_site(&announcements("dc1")), Some("dc1"));
        assert_eq!(announcing_site("serialgate.announce.dc1.x"), None);
        assert_eq!(announcing_site("serialgate.site.dc1.call"), None);
    }
}
