//! The layout keeps its promises: no import cycle between the daemon's
//! rooms (its top-level modules) or between the files of one room, and
//! every path `docs/ARCHITECTURE.md` names exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// Every module file of the library (not `main.rs` or `lib.rs`) by module
/// path (`port::sharing`), its text without comments and test modules.
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(Path::new(SRC), &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(SRC).expect("under src");
        let mut parts: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts == ["main"] || parts == ["lib"] {
            continue;
        }
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let code: Vec<&str> = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        modules.insert(parts.join("::"), code.join("\n"));
    }
    modules
}

/// The names that follow `prefix` in `code` (`crate::port::x` → `port`).
fn paths_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    code.match_indices(prefix)
        .map(|(at, _)| {
            let rest = &code[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// A cycle in `graph`, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

fn room(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

#[test]
fn no_import_cycle_between_rooms_or_between_the_files_of_a_room() {
    let modules = modules();
    let rooms: BTreeSet<&str> = modules.keys().map(|m| room(m)).collect();
    let mut between_rooms: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut within_rooms: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &modules {
        let here = room(module);
        for dep in paths_after(code, "crate::") {
            if dep != here && rooms.contains(dep) {
                between_rooms
                    .entry(here.to_owned())
                    .or_default()
                    .insert(dep.to_owned());
            }
        }
        if !module.contains("::") {
            continue;
        }
        let siblings = paths_after(code, "super::")
            .into_iter()
            .chain(paths_after(code, &format!("crate::{here}::")));
        for sibling in siblings {
            let target = format!("{here}::{sibling}");
            if target != *module && modules.contains_key(&target) {
                within_rooms
                    .entry(module.clone())
                    .or_default()
                    .insert(target);
            }
        }
    }
    assert!(!between_rooms.is_empty(), "no imports found: is SRC right?");
    assert_eq!(find_cycle(&between_rooms), None, "rooms import each other");
    assert_eq!(
        find_cycle(&within_rooms),
        None,
        "files of a room import each other"
    );
}

#[test]
fn every_path_the_architecture_document_names_exists() {
    let doc = std::fs::read_to_string(format!("{REPO}/docs/ARCHITECTURE.md"))
        .expect("docs/ARCHITECTURE.md");
    let named: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            [
                "crates/", "src/", "tests/", "benches/", "web/", "docs/", "fuzz/",
            ]
            .iter()
            .any(|root| s.starts_with(root))
                && !s.contains([' ', '{', '*'])
        })
        .collect();
    assert!(named.len() > 5, "few paths found: {named:?}");
    for path in named {
        assert!(
            Path::new(REPO).join(path).exists(),
            "{path} is named but missing"
        );
    }
}
