//! The layout keeps its promises: no import cycle between the rooms of a
//! crate (its top-level modules) or between the files of one room, in every
//! crate of the workspace, and every path `docs/ARCHITECTURE.md` names
//! exists.
//!
//! The import graph is built from the sources as text, without the
//! compiler: comments, string and character literals and `#[cfg(test)]`
//! items are dropped; every path of a `use` declaration (brace groups,
//! `self`, `super`, `crate`, `as`, globs) and every `a::b` path of the code
//! is resolved to the module file it reaches (the longest prefix that is a
//! module of the crate; an item resolves to the file of its module). The
//! crate root (`lib.rs`, `main.rs`) is not a node: a path through one of
//! its re-exports is followed to the file it names.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

// ---------------------------------------------------------------- tokens

/// What the graph needs of Rust's tokens: names, `::` and punctuation.
/// Literals, lifetimes, comments and whitespace leave no token (numbers
/// leave an `Other`, so they still break a path).
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
    Other,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The index after a string literal whose opening `"` is at `at`
/// (escapes honoured), or after a raw one with `hashes` `#`s.
fn skip_string(text: &[char], at: usize, raw: Option<usize>) -> usize {
    let mut i = at + 1;
    while i < text.len() {
        match (text[i], raw) {
            ('\\', None) => i += 2,
            ('"', None) => return i + 1,
            ('"', Some(hashes)) => {
                let closes = (1..=hashes).all(|k| text.get(i + k) == Some(&'#'));
                if closes {
                    return i + 1 + hashes;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    text.len()
}

/// The index after a character literal or lifetime starting at the `'` at
/// `at`.
fn skip_quote(text: &[char], at: usize) -> usize {
    match (text.get(at + 1), text.get(at + 2)) {
        (Some('\\'), _) => {
            // `'\n'`, `'\''`, `'\u{1F600}'`: the escaped character, then
            // up to the closing quote.
            let mut i = at + 3;
            while i < text.len() && text[i] != '\'' {
                i += 1;
            }
            i + 1
        }
        (Some(_), Some('\'')) => at + 3,
        _ => {
            let mut i = at + 1;
            while i < text.len() && is_ident_char(text[i]) {
                i += 1;
            }
            i
        }
    }
}

fn tokens(source: &str) -> Vec<Token> {
    let text: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        let next = text.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < text.len() && text[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < text.len() {
                if text[i] == '/' && text.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if text[i] == '*' && text.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&text, i, None);
        } else if c == '\'' {
            i = skip_quote(&text, i);
        } else if is_ident_start(c) {
            let start = i;
            while i < text.len() && is_ident_char(text[i]) {
                i += 1;
            }
            let word: String = text[start..i].iter().collect();
            let hashes = text[i..].iter().take_while(|&&h| h == '#').count();
            match (word.as_str(), text.get(i), text.get(i + hashes)) {
                ("r" | "br" | "cr", _, Some('"')) => {
                    i = skip_string(&text, i + hashes, Some(hashes))
                }
                ("b" | "c", Some('"'), _) => i = skip_string(&text, i, None),
                ("b", Some('\''), _) => i = skip_quote(&text, i),
                ("r", Some('#'), Some(&s)) if hashes == 1 && is_ident_start(s) => {
                    let start = i + 1;
                    i = start;
                    while i < text.len() && is_ident_char(text[i]) {
                        i += 1;
                    }
                    out.push(Token::Ident(text[start..i].iter().collect()));
                }
                _ => out.push(Token::Ident(word)),
            }
        } else if c.is_ascii_digit() {
            while i < text.len() && is_ident_char(text[i]) {
                i += 1;
            }
            out.push(Token::Other);
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

fn is_ident(token: Option<&Token>, name: &str) -> bool {
    matches!(token, Some(Token::Ident(s)) if s == name)
}

fn is_punct(token: Option<&Token>, c: char) -> bool {
    token == Some(&Token::Punct(c))
}

/// Whether an attribute `#[cfg(test)]` starts at `at`.
fn is_cfg_test(tokens: &[Token], at: usize) -> bool {
    is_punct(tokens.get(at), '#')
        && is_punct(tokens.get(at + 1), '[')
        && is_ident(tokens.get(at + 2), "cfg")
        && is_punct(tokens.get(at + 3), '(')
        && is_ident(tokens.get(at + 4), "test")
        && is_punct(tokens.get(at + 5), ')')
        && is_punct(tokens.get(at + 6), ']')
}

/// `tokens` without the items under `#[cfg(test)]` (test modules, inline
/// or in a file of their own, and test-only functions or imports).
fn without_test_items(tokens: Vec<Token>) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is_cfg_test(&tokens, i) {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        // Skip the attribute and the item: to the first `;` outside any
        // bracket, or to the `}` that closes its first `{`.
        i += 7;
        let mut depth = 0usize;
        while i < tokens.len() {
            match &tokens[i] {
                Token::Punct('(' | '[' | '{') => depth += 1,
                Token::Punct(')' | ']') => depth = depth.saturating_sub(1),
                Token::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                Token::Punct(';') if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------- paths

/// One path a file names: its segments, whether it came from a `use` (and
/// under which name it binds), and whether it was a glob.
#[derive(Debug, Clone, PartialEq)]
struct NamedPath {
    segments: Vec<String>,
    binds: Option<String>,
    from_use: bool,
}

/// Parses one use tree at `*at`, pushing every full path it names.
fn use_tree(tokens: &[Token], at: &mut usize, prefix: Vec<String>, out: &mut Vec<NamedPath>) {
    let mut path = prefix;
    if tokens.get(*at) == Some(&Token::PathSep) {
        // `use ::name`: an extern crate, never a module of this one.
        path.push("::".into());
        *at += 1;
    }
    loop {
        match tokens.get(*at) {
            Some(Token::Ident(name)) => {
                path.push(name.clone());
                *at += 1;
                if tokens.get(*at) == Some(&Token::PathSep) {
                    *at += 1;
                } else {
                    break;
                }
            }
            Some(Token::Punct('*')) => {
                *at += 1;
                out.push(NamedPath {
                    segments: path,
                    binds: None,
                    from_use: true,
                });
                return;
            }
            Some(Token::Punct('{')) => {
                *at += 1;
                while *at < tokens.len() {
                    if is_punct(tokens.get(*at), '}') {
                        *at += 1;
                        return;
                    }
                    let before = *at;
                    use_tree(tokens, at, path.clone(), out);
                    // Past the comma, or past a token no tree starts with.
                    if is_punct(tokens.get(*at), ',') || *at == before {
                        *at += 1;
                    }
                }
                return;
            }
            _ => break,
        }
    }
    let mut binds = path.last().cloned();
    if is_ident(tokens.get(*at), "as") {
        binds = match tokens.get(*at + 1) {
            Some(Token::Ident(name)) if name != "_" => Some(name.clone()),
            _ => None,
        };
        *at += 2;
    }
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
        if binds.as_deref() == Some("self") {
            binds = path.last().cloned();
        }
    }
    if !path.is_empty() {
        out.push(NamedPath {
            segments: path,
            binds,
            from_use: true,
        });
    }
}

/// Every path the code names: those of its `use` declarations, and every
/// `a::b…` path of its expressions, types and patterns.
fn named_paths(tokens: &[Token]) -> Vec<NamedPath> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let after_sep = i > 0 && tokens[i - 1] == Token::PathSep;
        match &tokens[i] {
            Token::Ident(word) if word == "use" && !after_sep => {
                i += 1;
                use_tree(tokens, &mut i, Vec::new(), &mut out);
            }
            Token::Ident(first) if !after_sep && tokens.get(i + 1) == Some(&Token::PathSep) => {
                let mut segments = vec![first.clone()];
                i += 1;
                while tokens.get(i) == Some(&Token::PathSep) {
                    match tokens.get(i + 1) {
                        Some(Token::Ident(name)) => {
                            segments.push(name.clone());
                            i += 2;
                        }
                        _ => break,
                    }
                }
                out.push(NamedPath {
                    segments,
                    binds: None,
                    from_use: false,
                });
            }
            _ => i += 1,
        }
    }
    out
}

/// The modules a file declares (`mod name;`), outside test items.
fn declared_modules(tokens: &[Token]) -> Vec<String> {
    tokens
        .windows(3)
        .filter_map(|w| match w {
            [Token::Ident(m), Token::Ident(name), Token::Punct(';')] if m == "mod" => {
                Some(name.clone())
            }
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------- graph

/// Edges between named nodes, each with the first import that made it.
#[derive(Debug, Default)]
struct Graph {
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn add(&mut self, from: &str, to: &str, why: String) {
        if from != to {
            self.edges
                .entry(from.to_owned())
                .or_default()
                .entry(to.to_owned())
                .or_insert(why);
        }
    }

    fn has(&self, from: &str, to: &str) -> bool {
        self.edges
            .get(from)
            .is_some_and(|to_set| to_set.contains_key(to))
    }

    fn extend(&mut self, other: Graph) {
        for (from, to) in other.edges {
            self.edges.entry(from).or_default().extend(to);
        }
    }

    /// Every circle, one per strongly connected component of more than one
    /// node, as the path around it with the import behind each step.
    fn cycles(&self) -> Vec<String> {
        let nodes: BTreeSet<&str> = self
            .edges
            .iter()
            .flat_map(|(from, to)| {
                std::iter::once(from.as_str()).chain(to.keys().map(String::as_str))
            })
            .collect();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut circles = Vec::new();
        for &start in &nodes {
            if seen.contains(start) {
                continue;
            }
            let Some(cycle) = self.shortest_cycle_through(start) else {
                continue;
            };
            let component = self.component_of(start);
            seen.extend(component.iter().cloned());
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    format!(
                        "  {} -> {}   ({})",
                        w[0],
                        w[1],
                        self.edges[w[0].as_str()][w[1].as_str()]
                    )
                })
                .collect();
            circles.push(format!(
                "{} ({} nodes in the tangle: {})\n{}",
                start,
                component.len(),
                component.iter().cloned().collect::<Vec<_>>().join(", "),
                steps.join("\n")
            ));
        }
        circles
    }

    fn reachable(&self, start: &str, reverse: bool) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.to_owned()];
        while let Some(node) = todo.pop() {
            let next: Vec<String> = if reverse {
                self.edges
                    .iter()
                    .filter(|(_, to)| to.contains_key(&node))
                    .map(|(from, _)| from.clone())
                    .collect()
            } else {
                self.edges
                    .get(&node)
                    .into_iter()
                    .flat_map(|to| to.keys().cloned())
                    .collect()
            };
            for n in next {
                if seen.insert(n.clone()) {
                    todo.push(n);
                }
            }
        }
        seen
    }

    fn component_of(&self, start: &str) -> BTreeSet<String> {
        let forward = self.reachable(start, false);
        let backward = self.reachable(start, true);
        let mut both: BTreeSet<String> = forward.intersection(&backward).cloned().collect();
        both.insert(start.to_owned());
        both
    }

    /// The shortest path from `start` back to itself, breadth first.
    fn shortest_cycle_through(&self, start: &str) -> Option<Vec<String>> {
        let mut came_from: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.to_owned()]);
        while let Some(node) = queue.pop_front() {
            for next in self.edges.get(&node).into_iter().flat_map(|to| to.keys()) {
                if next == start {
                    // Back from `node` to `start`, which has no predecessor.
                    let mut path = vec![node.clone()];
                    let mut at = node.clone();
                    while let Some(prev) = came_from.get(&at) {
                        path.push(prev.clone());
                        at = prev.clone();
                    }
                    path.reverse();
                    path.push(start.to_owned());
                    return Some(path);
                }
                if !came_from.contains_key(next) && next != start {
                    came_from.insert(next.clone(), node.clone());
                    queue.push_back(next.clone());
                }
            }
        }
        None
    }
}

/// One crate's sources: where its `src/` is (for names) and each file's
/// text by path under it (`lib.rs`, `port/sharing.rs`).
struct CrateSources {
    dir: String,
    files: HashMap<String, String>,
}

/// A crate's import graphs: between its rooms, and between the files of
/// each room.
struct Graphs {
    rooms: Graph,
    files: Graph,
}

/// The module path of a file under `src/`: `port/mod.rs` and `port.rs` are
/// `port`, `port/sharing.rs` is `port::sharing`, the roots are empty.
fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts == ["lib"] || parts == ["main"] || parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn build_graphs(krate: &CrateSources) -> Graphs {
    let code: HashMap<&str, Vec<Token>> = krate
        .files
        .iter()
        .map(|(file, text)| (file.as_str(), without_test_items(tokens(text))))
        .collect();

    // The modules the crate is built of: from each root down through the
    // `mod name;` declarations outside test items.
    let mut modules: BTreeMap<Vec<String>, &str> = BTreeMap::new();
    let mut todo: Vec<&str> = ["lib.rs", "main.rs"]
        .into_iter()
        .filter(|root| code.contains_key(root))
        .collect();
    while let Some(file) = todo.pop() {
        let here = module_path(file);
        if modules.contains_key(&here) && !here.is_empty() {
            continue;
        }
        modules.insert(here.clone(), file);
        let dir = match file.rsplit_once('/') {
            _ if here.is_empty() => String::new(),
            Some((dir, "mod.rs")) => format!("{dir}/"),
            _ => format!("{}/", file.trim_end_matches(".rs")),
        };
        for child in declared_modules(&code[file]) {
            for candidate in [format!("{dir}{child}.rs"), format!("{dir}{child}/mod.rs")] {
                if let Some((path, _)) = code.get_key_value(candidate.as_str()) {
                    todo.push(path);
                }
            }
        }
    }

    let resolve = |from: &[String], segments: &[String], aliases: &HashMap<String, Vec<String>>| {
        resolve(&modules, &code, from, segments, aliases, 0)
    };

    let name = |file: &str| format!("{}/{}", krate.dir, file);
    let room = |module: &[String]| format!("{}::{}", krate.dir, module[0]);
    let mut graphs = Graphs {
        rooms: Graph::default(),
        files: Graph::default(),
    };
    for (here, &file) in &modules {
        if here.is_empty() {
            continue;
        }
        let paths = named_paths(&code[file]);
        // Modules brought into scope by name (`use super::raw;`).
        let mut aliases: HashMap<String, Vec<String>> = HashMap::new();
        for path in paths.iter().filter(|p| p.from_use) {
            if let (Some(bound), Some((module, rest))) =
                (&path.binds, resolve(here, &path.segments, &HashMap::new()))
                && rest.is_empty()
            {
                aliases.insert(bound.clone(), module);
            }
        }
        for path in &paths {
            let Some((target, _)) = resolve(here, &path.segments, &aliases) else {
                continue;
            };
            if target.is_empty() || target == *here {
                continue;
            }
            let why = path.segments.join("::");
            if target[0] == here[0] {
                graphs.files.add(&name(file), &name(modules[&target]), why);
            } else {
                graphs.rooms.add(
                    &room(here),
                    &room(&target),
                    format!("{}: {why}", name(file)),
                );
            }
        }
    }
    graphs
}

/// The module a path reaches from module `from` and what of it is left
/// (the item's name, its variant…), or `None` for a path outside the crate.
/// A path through a name the crate root imports is followed to where that
/// import leads, as the root is no node of the graphs.
fn resolve(
    modules: &BTreeMap<Vec<String>, &str>,
    code: &HashMap<&str, Vec<Token>>,
    from: &[String],
    segments: &[String],
    aliases: &HashMap<String, Vec<String>>,
    depth: usize,
) -> Option<(Vec<String>, Vec<String>)> {
    let first = segments.first()?;
    let mut base: Vec<String> = from.to_vec();
    let mut rest = segments;
    match first.as_str() {
        "crate" => {
            base.clear();
            rest = &segments[1..];
        }
        "self" => rest = &segments[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        name => {
            let mut child = from.to_vec();
            child.push(name.to_owned());
            if !modules.contains_key(&child) {
                base = aliases.get(name)?.clone();
                rest = &segments[1..];
            }
        }
    }
    let mut rest = rest.to_vec();
    while let Some(next) = rest.first() {
        let mut deeper = base.clone();
        deeper.push(next.clone());
        if !modules.contains_key(&deeper) {
            break;
        }
        base = deeper;
        rest.remove(0);
    }
    if base.is_empty() && !rest.is_empty() && depth < 8 {
        // Through the root: `crate::Item` re-exported by `pub use a::Item`.
        let root = modules.get(&Vec::new())?;
        for path in named_paths(&code[root]).iter().filter(|p| p.from_use) {
            if path.binds.as_deref() == Some(rest[0].as_str()) {
                let mut through = path.segments.clone();
                through.extend(rest[1..].iter().cloned());
                return resolve(modules, code, &[], &through, &HashMap::new(), depth + 1)
                    .or(Some((base, rest)));
            }
        }
    }
    Some((base, rest))
}

// ---------------------------------------------------------------- the tree

/// Every crate of the workspace: the root package's `src/`, and each
/// `crates/*/src/`.
fn workspace_crates() -> Vec<CrateSources> {
    fn walk(root: &Path, dir: &Path, out: &mut HashMap<String, String>) {
        for entry in std::fs::read_dir(dir)
            .expect("read a source directory")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .expect("under src")
                    .to_string_lossy()
                    .into_owned();
                let text = std::fs::read_to_string(&path).expect("read a source file");
                out.insert(rel, text);
            }
        }
    }
    let mut dirs = vec!["src".to_owned()];
    let mut members: Vec<String> = std::fs::read_dir(format!("{REPO}/crates"))
        .expect("read crates/")
        .flatten()
        .filter(|e| e.path().join("src").is_dir())
        .map(|e| format!("crates/{}/src", e.file_name().to_string_lossy()))
        .collect();
    members.sort();
    dirs.extend(members);
    dirs.into_iter()
        .map(|dir| {
            let mut files = HashMap::new();
            let root = Path::new(REPO).join(&dir);
            walk(&root, &root, &mut files);
            CrateSources { dir, files }
        })
        .collect()
}

#[test]
fn no_import_cycle_between_rooms_or_between_the_files_of_a_room() {
    let crates = workspace_crates();
    assert!(crates.len() >= 4, "the daemon and the crates beside it");
    let mut rooms = Graph::default();
    let mut files = Graph::default();
    for krate in &crates {
        assert!(krate.files.contains_key("lib.rs") || krate.files.contains_key("main.rs"));
        let graphs = build_graphs(krate);
        rooms.extend(graphs.rooms);
        files.extend(graphs.files);
    }
    assert!(
        rooms.edges.len() > 10,
        "few imports between rooms: is the parsing right?"
    );
    assert!(
        files.edges.len() > 10,
        "few imports within rooms: is the parsing right?"
    );
    let mut circles = rooms.cycles();
    circles.extend(files.cycles());
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n\n")
    );
}

#[test]
fn every_path_the_architecture_document_names_exists() {
    let doc = std::fs::read_to_string(format!("{REPO}/docs/ARCHITECTURE.md"))
        .expect("docs/ARCHITECTURE.md");
    let roots = [
        "src/", "tests/", "benches/", "web/", "config/", "docs/", "fuzz/", "crates/", "vendor/",
    ];
    let named: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| roots.iter().any(|root| s.starts_with(root)) && !s.contains([' ', '{', '*']))
        .collect();
    assert!(named.len() > 5, "few paths found: {named:?}");
    for path in named {
        assert!(
            Path::new(REPO).join(path).exists(),
            "{path} is named but missing"
        );
    }
}

#[test]
fn the_daemon_spawns_its_tasks_boxed() {
    // Tokio compiles its task machinery once per type of future spawned;
    // `src/task.rs` boxes each, so that there is one per output type.
    let daemon = workspace_crates()
        .into_iter()
        .find(|c| c.dir == "src")
        .expect("the daemon's sources");
    let mut unboxed: Vec<String> = Vec::new();
    for (file, text) in &daemon.files {
        if file == "task.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            // `tokio::task::spawn` covers `spawn_blocking` too.
            if ["tokio::spawn", "tokio::task::spawn"]
                .iter()
                .any(|call| code.contains(call))
            {
                unboxed.push(format!("src/{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        daemon
            .files
            .get("task.rs")
            .is_some_and(|t| t.contains("tokio::spawn(")),
        "src/task.rs spawns through tokio"
    );
    unboxed.sort();
    assert!(
        unboxed.is_empty(),
        "spawn through crate::task instead:\n{}",
        unboxed.join("\n")
    );
}

// ---------------------------------------------------------------- the test's own tests

/// The graphs of a crate made of `files` (path under `src/` → text).
fn graphs_of(files: &[(&str, &str)]) -> Graphs {
    build_graphs(&CrateSources {
        dir: "src".into(),
        files: files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect(),
    })
}

#[test]
fn a_circle_between_two_rooms_is_found() {
    let graphs = graphs_of(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "use crate::b::B; pub struct A;"),
        ("b/mod.rs", "mod inner; pub struct B;"),
        ("b/inner.rs", "fn f() -> crate::a::A { todo!() }"),
    ]);
    assert!(graphs.rooms.has("src::a", "src::b"));
    assert!(graphs.rooms.has("src::b", "src::a"));
    assert_eq!(graphs.rooms.cycles().len(), 1, "{:?}", graphs.rooms);
    assert!(graphs.files.cycles().is_empty());
}

#[test]
fn a_circle_through_a_root_re_export_is_found() {
    let graphs = graphs_of(&[
        ("lib.rs", "mod a; mod b; pub use b::B; pub struct Root;"),
        ("a.rs", "use crate::{B, Root}; pub struct A;"),
        ("b.rs", "pub struct B(crate::a::A);"),
    ]);
    assert!(graphs.rooms.has("src::a", "src::b"));
    assert_eq!(graphs.rooms.cycles().len(), 1);
}

#[test]
fn a_circle_between_siblings_through_a_use_group_is_found() {
    let graphs = graphs_of(&[
        ("lib.rs", "mod r;"),
        ("r/mod.rs", "mod a; mod b; mod c;"),
        (
            "r/a.rs",
            "use super::{c::{self, Z as Zed}, b};\npub struct X;",
        ),
        ("r/b.rs", "use super::a::X;"),
        ("r/c.rs", "pub struct Z;"),
    ]);
    assert!(graphs.files.has("src/r/a.rs", "src/r/b.rs"));
    assert!(graphs.files.has("src/r/a.rs", "src/r/c.rs"));
    assert!(graphs.files.has("src/r/b.rs", "src/r/a.rs"));
    let circles = graphs.files.cycles();
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(
        circles[0].contains("src/r/a.rs -> src/r/b.rs"),
        "{circles:?}"
    );
    assert!(graphs.rooms.cycles().is_empty());
}

#[test]
fn a_circle_between_mod_rs_and_its_child_is_found() {
    let graphs = graphs_of(&[
        ("lib.rs", "mod r;"),
        (
            "r/mod.rs",
            "mod child;\npub struct U;\nfn make() -> child::T { child::T }",
        ),
        ("r/child.rs", "use super::U;\npub struct T;"),
    ]);
    assert!(graphs.files.has("src/r/mod.rs", "src/r/child.rs"));
    assert!(graphs.files.has("src/r/child.rs", "src/r/mod.rs"));
    assert_eq!(graphs.files.cycles().len(), 1);
}

#[test]
fn nested_modules_resolve_at_their_own_level() {
    let graphs = graphs_of(&[
        ("lib.rs", "mod d;"),
        ("d/mod.rs", "mod http; pub struct Top;"),
        ("d/http/mod.rs", "mod web; pub struct App;"),
        ("d/http/web/mod.rs", "mod x; mod y; use self::y::Y;"),
        (
            "d/http/web/x.rs",
            "use super::super::App;\nfn f() { super::y::Y::new(); crate::d::Top; }",
        ),
        ("d/http/web/y.rs", "pub struct Y;"),
    ]);
    let files = &graphs.files;
    assert!(files.has("src/d/http/web/x.rs", "src/d/http/web/y.rs"));
    assert!(files.has("src/d/http/web/x.rs", "src/d/http/mod.rs"));
    assert!(files.has("src/d/http/web/x.rs", "src/d/mod.rs"));
    assert!(files.has("src/d/http/web/mod.rs", "src/d/http/web/y.rs"));
    assert!(!files.has("src/d/http/web/x.rs", "src/d/http/web/mod.rs"));
    assert!(files.cycles().is_empty(), "{:?}", files.cycles());

    // The same `super::` one level down reaches a sibling, and closes a
    // circle with it.
    let graphs = graphs_of(&[
        ("lib.rs", "mod d;"),
        ("d/mod.rs", "mod http;"),
        ("d/http/mod.rs", "mod web;"),
        ("d/http/web/mod.rs", "mod x; mod y;"),
        ("d/http/web/x.rs", "use super::y::Y; pub struct X;"),
        ("d/http/web/y.rs", "pub struct Y(super::x::X);"),
    ]);
    assert_eq!(graphs.files.cycles().len(), 1);
}

#[test]
fn a_dag_passes_and_comments_strings_and_tests_do_not_count() {
    let graphs = graphs_of(&[
        ("lib.rs", "pub mod a; pub mod b; pub use a::A;"),
        (
            "a/mod.rs",
            "mod kind; mod parse;\npub use kind::Kind;\npub use parse::*;\n\
             /// Not `crate::b::B` nor super::Kind.\npub struct A;",
        ),
        ("a/kind.rs", "pub enum Kind { One }"),
        (
            "a/parse.rs",
            "use super::kind::Kind;\n// use super::A;\n/* crate::b::B /* nested */ super::A */\n\
             pub fn parse(s: &str) -> Kind { let _ = \"super::A crate::b::B\"; let _ = r#\"crate::b\"#; \
             let _ = '\"'; let _c = b'\\''; Kind::One }\n\
             #[cfg(test)]\nmod tests { use super::super::A; use crate::b::B; }",
        ),
        (
            "b.rs",
            "use crate::a::{self, Kind}; pub struct B(a::A); fn f() { crate::A; }\n#[cfg(test)]\nmod tests;",
        ),
        ("b/tests.rs", "use crate::b::*; use crate::a::A;"),
    ]);
    assert!(graphs.rooms.has("src::b", "src::a"));
    assert!(!graphs.rooms.has("src::a", "src::b"), "{:?}", graphs.rooms);
    assert!(graphs.files.has("src/a/mod.rs", "src/a/kind.rs"));
    assert!(graphs.files.has("src/a/parse.rs", "src/a/kind.rs"));
    assert!(
        !graphs.files.has("src/a/parse.rs", "src/a/mod.rs"),
        "{:?}",
        graphs.files
    );
    assert!(graphs.rooms.cycles().is_empty());
    assert!(graphs.files.cycles().is_empty());
}

#[test]
fn character_literals_and_lifetimes_do_not_swallow_code() {
    let found =
        tokens("fn f<'a>(s: &'a str) { let c = '\\''; let d = '{'; let e = b'\\\\'; x::y(); }");
    assert!(!found.contains(&Token::Punct('\'')));
    assert_eq!(found.iter().filter(|t| **t == Token::Punct('{')).count(), 1);
    let paths = named_paths(&found);
    assert!(paths.iter().any(|p| p.segments == ["x", "y"]), "{paths:?}");
}
