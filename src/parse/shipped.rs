//! The ntc-templates set serialgate ships (`templates/ntc/`, version and
//! source in its README), embedded in the binary by `build.rs`; each
//! template is compiled the first time a command needs it, then kept in a
//! bounded cache ([`super::cache`]).

use std::sync::{Arc, LazyLock};

use textfsm_core::{Index, Template};

include!(concat!(env!("OUT_DIR"), "/ntc_templates.rs"));

/// The ntc-templates version of the shipped templates.
pub const NTC_TEMPLATES_VERSION: &str = "9.3.0";

/// The shipped index: Template, Hostname, Platform, Command.
pub const SHIPPED_INDEX: &str = include_str!("../../templates/ntc/index");

/// The shipped index, parsed once. `None` only if the file shipped is
/// broken, which the fixtures test rules out.
pub fn index() -> Option<&'static Index> {
    static INDEX: LazyLock<Option<Index>> =
        LazyLock::new(|| match Index::parse_str(SHIPPED_INDEX) {
            Ok(index) => Some(index),
            Err(e) => {
                tracing::error!("the shipped template index does not parse: {e}");
                None
            }
        });
    INDEX.as_ref()
}

/// The text of the shipped template `name`.
pub fn text(name: &str) -> Option<&'static str> {
    SHIPPED_TEMPLATES
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .map(|i| SHIPPED_TEMPLATES[i].1)
}

/// The shipped template `name`, compiled (kept while it is among the
/// [`super::cache::MAX_COMPILED`] most recently used).
pub fn compiled(name: &str) -> Option<Result<Arc<Template>, String>> {
    static CACHE: LazyLock<super::cache::Compiled> = LazyLock::new(Default::default);
    let text = text(name)?;
    Some(CACHE.get_or_compile(name, text))
}
