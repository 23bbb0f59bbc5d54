//! Which template parses a command's output: the user's index, then the
//! shipped one (CliTable rules: the Platform regex, the Command regex with
//! `sh[[ow]]` abbreviations, both matched from the start; the first
//! matching row wins), and the file it names, the user's before a shipped
//! one of the same name.

use std::collections::HashMap;
use std::sync::Arc;

use textfsm_core::{Index, Template};

use super::user_templates::UserTemplates;

/// The templates chosen for a command: usually one; an index row may name
/// several (`a.textfsm:b.textfsm`), whose tables are joined on their keys.
pub struct Found {
    /// The first one's file name, e.g. `cisco_ios_show_version.textfsm`.
    pub name: String,
    /// Each one's file name and compiled template, in the row's order.
    pub templates: Vec<(String, Arc<Template>)>,
}

/// The template for `command` on `platform`, or why there is none (a
/// sentence for `parse_note`).
pub fn find(user: &UserTemplates, platform: &str, command: &str) -> Result<Found, String> {
    let command = command.trim();
    let attributes = HashMap::from([
        ("Platform".to_owned(), platform.to_owned()),
        ("Command".to_owned(), command.to_owned()),
    ]);
    let row = |index: Option<&Index>| {
        index
            .and_then(|i| i.find_match(&attributes))
            .map(|e| e.templates().to_vec())
    };
    let Some(names) = row(user.index()).or_else(|| row(super::shipped::index())) else {
        return Err(format!(
            "no template for {} on platform {}: add one and an index line to [server] templates_dir",
            crate::error::shown(command),
            crate::error::shown(platform)
        ));
    };
    let first = names.first().cloned().unwrap_or_default();
    let mut templates = Vec::new();
    for name in names {
        let template = match user.template(&name) {
            Some(Ok(t)) => t,
            Some(Err(e)) => return Err(format!("the template does not compile: {e}")),
            None => match super::shipped::compiled(&name) {
                Some(Ok(t)) => t,
                Some(Err(e)) => return Err(format!("the shipped template does not compile: {e}")),
                None => {
                    return Err(format!(
                        "the index names {}, which is not there: add it to [server] templates_dir",
                        crate::error::shown(&name)
                    ));
                }
            },
        };
        templates.push((name, template));
    }
    if templates.is_empty() {
        return Err("the index row names no template".to_owned());
    }
    Ok(Found {
        name: first,
        templates,
    })
}
