//! The ntc-templates set serialgate ships (`templates/ntc/`, version and
//! source in its README), embedded in the binary by `build.rs`; each
//! template is compiled the first time a command needs it, then kept.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

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

/// The shipped template `name`, compiled (once per daemon).
pub fn compiled(name: &str) -> Option<Result<Arc<Template>, String>> {
    static CACHE: LazyLock<Mutex<HashMap<String, Arc<Template>>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let text = text(name)?;
    if let Some(t) = crate::sync::lock(&CACHE).get(name) {
        return Some(Ok(t.clone()));
    }
    // Compiled outside the lock: two first uses at once both compile,
    // and nobody waits behind a compilation.
    Some(match Template::parse_str(text) {
        Ok(t) => {
            let t = Arc::new(t);
            crate::sync::lock(&CACHE).insert(name.to_owned(), t.clone());
            Ok(t)
        }
        Err(e) => Err(format!("{name}: {e}")),
    })
}
