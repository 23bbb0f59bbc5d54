//! A user's own templates and index entries (`[server] templates_dir`),
//! read and compiled when the config loads, so that a broken template is
//! an error naming its file and line then, not at a device's answer. The
//! texts are kept; the compiled forms in use are kept in a bounded cache
//! ([`super::cache`]), as the shipped ones are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use textfsm_core::{Index, Template, TemplateError};

use super::cache::{Compiled, MAX_COMPILED};

/// Largest template file read from `templates_dir`.
pub const MAX_TEMPLATE_BYTES: u64 = 256 * 1024;
/// Most template files `templates_dir` may hold.
pub const MAX_TEMPLATES: usize = 2000;

/// The templates and index of `templates_dir`, compiled. The default has
/// none; the shipped set is consulted after these.
#[derive(Default)]
pub struct UserTemplates {
    /// The directory they were read from.
    pub dir: Option<PathBuf>,
    /// Template file name to its text (compiled at load, so known good).
    templates: BTreeMap<String, String>,
    /// The compiled ones most recently used.
    compiled: Compiled,
    /// `templates_dir/index`, with its text, when there is one.
    index: Option<(String, Index)>,
}

impl std::fmt::Debug for UserTemplates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserTemplates")
            .field("dir", &self.dir)
            .field("templates", &self.templates.keys().collect::<Vec<_>>())
            .field("index", &self.index.is_some())
            .finish()
    }
}

impl PartialEq for UserTemplates {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir
            && self.index.as_ref().map(|i| &i.0) == other.index.as_ref().map(|i| &i.0)
            && self.templates.len() == other.templates.len()
            && self
                .templates
                .iter()
                .zip(&other.templates)
                .all(|((a, ta), (b, tb))| a == b && ta == tb)
    }
}

impl UserTemplates {
    /// Reads and compiles every `*.textfsm` in `dir` and its `index`, if
    /// any. The error names the file and, where the template or index
    /// says, the line, and what to do.
    pub fn load(dir: &Path) -> Result<UserTemplates, String> {
        let shown = dir.display();
        let entries = std::fs::read_dir(dir)
            .map_err(|e| format!("{shown}: {e}; create it or fix templates_dir"))?;
        let mut templates = BTreeMap::new();
        let compiled = Compiled::default();
        for entry in entries {
            let entry = entry.map_err(|e| format!("{shown}: {e}"))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if !name.ends_with(".textfsm") {
                continue;
            }
            if templates.len() >= MAX_TEMPLATES {
                return Err(format!(
                    "{shown}: more than {MAX_TEMPLATES} templates; keep the ones you use"
                ));
            }
            let path = entry.path();
            let text = read_bounded(&path)?;
            let template = Template::parse_str(&text)
                .map_err(|e| format!("{}: {}", path.display(), located(&e, &text)))?;
            if compiled.len() < MAX_COMPILED {
                compiled.insert(&name, Arc::new(template));
            }
            templates.insert(name, text);
        }
        let index_path = dir.join("index");
        let index = if index_path.exists() {
            let text = read_bounded(&index_path)?;
            let index = Index::parse_str(&text).map_err(|e| {
                format!("{}: {e}; the first line names the columns (Template, Hostname, Platform, Command)", index_path.display())
            })?;
            for entry in index.entries() {
                for name in entry.templates() {
                    if !templates.contains_key(name) && super::shipped::text(name).is_none() {
                        return Err(format!(
                            "{} line {}: template {} is neither in {shown} nor shipped; add the file or fix the line",
                            index_path.display(),
                            entry.line_num(),
                            crate::error::shown(name)
                        ));
                    }
                }
            }
            Some((text, index))
        } else {
            None
        };
        Ok(UserTemplates {
            dir: Some(dir.to_path_buf()),
            templates,
            compiled,
            index,
        })
    }

    /// The user's index, consulted before the shipped one.
    pub fn index(&self) -> Option<&Index> {
        self.index.as_ref().map(|(_, i)| i)
    }

    /// The user's template `name`, which wins over a shipped one of that
    /// name: `None` when the user has none.
    pub fn template(&self, name: &str) -> Option<Result<Arc<Template>, String>> {
        let text = self.templates.get(name)?;
        Some(self.compiled.get_or_compile(name, text))
    }
}

/// The file's text, refused past [`MAX_TEMPLATE_BYTES`].
fn read_bounded(path: &Path) -> Result<String, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    if len > MAX_TEMPLATE_BYTES {
        return Err(format!(
            "{}: {len} bytes; a template or index may hold at most {MAX_TEMPLATE_BYTES}",
            path.display()
        ));
    }
    std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e} (templates are UTF-8 text)", path.display()))
}

/// The engine's complaint with the line it is about: most carry it; a bad
/// regex is found by its text (a Value's regex stands as written).
fn located(e: &TemplateError, text: &str) -> String {
    // The line a message names no line for: a Value's regex as written, a
    // state named after `->`.
    let line = match e {
        TemplateError::InvalidRegex { pattern, .. } => {
            text.lines().position(|l| l.contains(pattern.as_str()))
        }
        TemplateError::UndefinedState(state) => text.lines().position(|l| {
            l.split_once("->")
                .is_some_and(|(_, actions)| actions.split_whitespace().any(|w| w == state))
        }),
        _ => None,
    };
    match line {
        Some(n) => format!("line {}: {e}", n + 1),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_templates_than_the_cache_keeps_all_still_parse() {
        let dir = tempfile::tempdir().unwrap();
        let count = MAX_COMPILED + 10;
        for i in 0..count {
            std::fs::write(
                dir.path().join(format!("t{i}.textfsm")),
                format!("Value A (a{i})\n\nStart\n  ^${{A}} -> Record\n"),
            )
            .unwrap();
        }
        let user = UserTemplates::load(dir.path()).unwrap();
        assert_eq!(user.compiled.len(), MAX_COMPILED);
        for i in 0..count {
            let t = user.template(&format!("t{i}.textfsm")).unwrap().unwrap();
            let rows = t.parser().parse_text(&format!("a{i}\n")).unwrap();
            assert_eq!(rows.len(), 1, "t{i}");
            assert!(user.compiled.len() <= MAX_COMPILED);
        }
        assert!(user.template("none.textfsm").is_none());
    }
}
