//! The shape the architecture promises (docs/architecture.md), checked
//! on every test run so that it cannot erode unnoticed:
//!
//! * the core's dependency tree holds no I/O crate;
//! * the word `unsafe` appears in code only under `local-sa/umad`;
//! * no two modules of any crate of the workspace import each other;
//! * the core's agent (and everything but the doors) imports no door;
//! * log lines show values as text (`Display`), never Rust `Debug` dumps;
//! * `impl SaCore` only in its routing files, its groups exposing no
//!   field, and each group's `mod.rs` naming every file of its folder.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, skipping build output.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name();
        if path.is_dir() {
            if name != "target" && name != ".git" && name != "corpus" {
                out.extend(rust_files(&path));
            }
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// A line's code: without its `//` comment and the contents of its string
/// literals (a line-based reading: literals spanning lines are rare here).
fn code(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => {
                    in_string = false;
                    out.push(c);
                }
                _ => escaped = false,
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '/' if chars.peek() == Some(&'/') => break,
            _ => out.push(c),
        }
    }
    out
}

/// The crates `package` depends on (normal dependencies, itself too).
fn dependencies_of(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "-p", package, "-e", "normal", "--prefix", "none"])
        .current_dir(workspace())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    tree.lines()
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect()
}

/// Those of `crates` that do I/O: a sans-IO crate depends on none.
fn io_crates(crates: &BTreeSet<String>) -> Vec<&String> {
    crates
        .iter()
        .filter(|c| {
            [
                "libc", "smol", "rdma-sys", "clap", "rustix", "mio", "tokio", "umad",
            ]
            .contains(&c.as_str())
                || c.starts_with("async-")
        })
        .collect()
}

#[test]
fn the_core_depends_on_no_io_crate() {
    let crates = dependencies_of("local-sa-core");
    let io = io_crates(&crates);
    assert!(io.is_empty(), "the core depends on {io:?}");
    assert!(crates.contains("mad-codec") && crates.contains("informinfo"));
}

#[test]
fn the_distributor_depends_on_no_io_crate() {
    let crates = dependencies_of("local-sa-distributor");
    let io = io_crates(&crates);
    assert!(io.is_empty(), "the distributor depends on {io:?}");
    assert!(crates.contains("local-sa-core"));
}

#[test]
fn unsafe_code_lives_only_in_umad() {
    let root = workspace();
    let umad = root.join("local-sa/umad");
    let mut found = Vec::new();
    for file in rust_files(&root) {
        if file.starts_with(&umad) {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = code(line);
            let mut words = code.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            if words.any(|w| w == "unsafe") {
                found.push(format!("{}:{}", file.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "`unsafe` outside local-sa/umad: {found:?}"
    );
}

/// The module path of `file` in the crate whose sources are at `src`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The module a path in `module` names (`crate::a::b::Item`, `super::x`,
/// `self::x`, or `child::x` relative to `module`), resolved to the
/// deepest module of `modules` it reaches.
fn target(
    module: &[String],
    path: &[&str],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let (mut base, rest) = match path.first()? {
        &"crate" => (Vec::new(), &path[1..]),
        &"super" => {
            // `super::super::x`: one module up for each.
            let ups = path.iter().take_while(|s| **s == "super").count();
            let mut b = module.to_vec();
            for _ in 0..ups {
                b.pop()?;
            }
            (b, &path[ups..])
        }
        &"self" => (module.to_vec(), &path[1..]),
        // A path relative to this module: one of its children.
        child => {
            let mut b = module.to_vec();
            b.push((*child).to_owned());
            if !modules.contains(&b) {
                return None;
            }
            (b, &path[1..])
        }
    };
    for seg in rest {
        let mut next = base.clone();
        next.push((*seg).to_owned());
        if !modules.contains(&next) {
            break;
        }
        base = next;
    }
    Some(base)
}

/// The modules each module of the crate at `src` names in its code
/// (outside its inline test module).
fn imports(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = rust_files(src);
    let mut modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    // A module whose file lies elsewhere (`#[path = "..."] mod name;`, the
    // storm simulator's fixture shared with the core's benches) is a
    // module all the same: naming it is no import of its parent.
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for pair in lines.windows(2) {
            if pair[0].starts_with("#[path")
                && let Some(name) = pair[1]
                    .strip_prefix("mod ")
                    .and_then(|m| m.strip_suffix(';'))
            {
                let mut m = module_of(src, file);
                m.push(name.to_owned());
                modules.insert(m);
            }
        }
    }
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let text = fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // Brace depth, and the depths at which inline modules (`mod field
        // { ... }`, smoltcp's named field ranges) opened: in one, `super`
        // is the file's own module.
        let (mut depth, mut inline_mods) = (0usize, Vec::new());
        for (n, line) in lines.iter().enumerate() {
            // An inline test module (`#[cfg(test)] mod name {`) ends what
            // counts: it may reach into its parent as it likes.
            let next = lines.get(n + 1).map_or("", |l| l.trim());
            if line.trim() == "#[cfg(test)]" && next.starts_with("mod ") && next.ends_with('{') {
                break;
            }
            let code = code(line);
            let trimmed = code.trim();
            let opens_mod = trimmed.ends_with('{')
                && trimmed
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub(super) ")
                    .trim_start_matches("pub ")
                    .starts_with("mod ");
            if opens_mod {
                inline_mods.push(depth);
            }
            depth += code.matches('{').count();
            depth = depth.saturating_sub(code.matches('}').count());
            let inside_inline_mod = !inline_mods.is_empty();
            if inline_mods.last().is_some_and(|d| depth <= *d) {
                inline_mods.pop();
            }
            let code = if inside_inline_mod {
                code.replace("super::", "self::")
            } else {
                code
            };
            // `pub(in crate::x)` names where an item is visible, not what
            // the module uses.
            let code = without_visibility_paths(&code);
            let code = code.as_str();
            for (i, _) in code.match_indices("::") {
                // The start of the path this `::` is part of.
                let start = code[..i]
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .map_or(0, |s| s + 1);
                if start == i || code[start..i].contains("::") {
                    continue;
                }
                {
                    let i = start;
                    let path: Vec<&str> = code[i..]
                        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                        .next()
                        .unwrap_or("")
                        .split("::")
                        .filter(|s| !s.is_empty())
                        .collect();
                    if let Some(t) = target(&module, &path, &modules)
                        && t != module
                    {
                        edges.entry(module.clone()).or_default().insert(t);
                    }
                }
            }
        }
    }
    edges
}

/// `code` without the paths of `pub(in path)` visibilities.
fn without_visibility_paths(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(i) = rest.find("pub(in ") {
        out.push_str(&rest[..i]);
        out.push_str("pub");
        rest = rest[i..].find(')').map_or("", |j| &rest[i + j + 1..]);
    }
    out.push_str(rest);
    out
}

/// The sets of modules that import each other in a circle (Tarjan's
/// strongly connected components with more than one module), each in
/// order.
fn circles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn a_path_up_two_modules_names_the_grandparent_s_child() {
    let m = |path: &[&str]| {
        path.iter()
            .map(|s| (*s).to_owned())
            .collect::<Vec<String>>()
    };
    let modules: BTreeSet<Vec<String>> = [
        m(&["a"]),
        m(&["a", "b"]),
        m(&["a", "b", "c"]),
        m(&["a", "d"]),
    ]
    .into();
    let here = m(&["a", "b", "c"]);
    assert_eq!(
        target(&here, &["super", "super", "d", "Item"], &modules),
        Some(m(&["a", "d"]))
    );
    assert_eq!(
        target(&here, &["super", "Item"], &modules),
        Some(m(&["a", "b"]))
    );
}

#[test]
fn circles_of_any_length_are_found() {
    let m = |name: &str| vec![name.to_owned()];
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")] {
        edges.entry(m(a)).or_default().insert(m(b));
    }
    assert_eq!(circles(&edges), [vec![m("a"), m("b"), m("c")]]);
    edges.entry(m("e")).or_default().insert(m("d"));
    assert_eq!(circles(&edges).len(), 2);
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let root = workspace();
    // Each crate's sources, and the storm simulator (a bench, a crate of
    // its own whose figures depend on its modules being what they say).
    let crates = [
        "mad-codec/src",
        "informinfo/src",
        "local-sa/core/src",
        "local-sa/cli/src",
        "local-sa/umad/src",
        "local-sa/daemon/src",
        "local-sa/lsaquery/src",
        "local-sa/distributor/src",
        "local-sa/distributor/benches/storm",
        "conformance/src",
    ];
    let mut cycles = Vec::new();
    for krate in crates {
        let edges = imports(&root.join(krate));
        // Every circle, of two modules or more: the strongly connected
        // components of the import graph that hold more than one module.
        for circle in circles(&edges) {
            let names: Vec<String> = circle.iter().map(|m| m.join("::")).collect();
            cycles.push(format!("{krate}: {}", names.join(" <-> ")));
        }
        assert!(
            edges.values().map(BTreeSet::len).sum::<usize>() > 0,
            "{krate}: no imports found; is the scan broken?"
        );
    }
    assert!(
        cycles.is_empty(),
        "modules that import each other: {cycles:#?}"
    );
}

#[test]
fn the_agent_never_imports_a_door() {
    // The doors translate for the agents; what both speak lives below
    // them (requests and replies, path flags, group events). Tests may
    // drive a door and the agents together, as the daemon does, and so
    // may the fuzz harnesses.
    let edges = imports(&workspace().join("local-sa/core/src"));
    let is_door = |m: &Vec<String>| m.first().is_some_and(|s| s == "doors");
    let mut wrong = Vec::new();
    for (from, targets) in &edges {
        let exempt =
            is_door(from) || from.iter().any(|s| s == "tests" || s == "fuzzing") || from.is_empty();
        for to in targets.iter().filter(|t| is_door(t)) {
            if !exempt {
                wrong.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        edges.keys().any(is_door),
        "no door module found; is the scan broken?"
    );
    assert!(wrong.is_empty(), "modules that import a door: {wrong:#?}");
}

/// The `tracing` macro calls in `text` (outside an inline test module):
/// for each, its first line number and its text, strings kept.
fn log_calls(text: &str) -> Vec<(usize, String)> {
    const MACROS: [&str; 5] = ["trace!(", "debug!(", "info!(", "warn!(", "error!("];
    let lines: Vec<&str> = text.lines().collect();
    let mut calls = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        let next = lines.get(n + 1).map_or("", |l| l.trim());
        if lines[n].trim() == "#[cfg(test)]" && next.starts_with("mod ") {
            break;
        }
        let stripped = code(lines[n]);
        let Some(at) = MACROS
            .iter()
            .filter_map(|m| stripped.find(m).map(|i| i + m.len() - 1))
            .min()
        else {
            n += 1;
            continue;
        };
        // The call runs until its parenthesis closes.
        let (first, mut depth, mut call) = (n, 0i32, String::new());
        let mut code_line = stripped[at..].to_owned();
        let mut raw = lines[n].to_owned();
        loop {
            for c in code_line.chars() {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
            }
            call.push_str(&raw);
            call.push('\n');
            n += 1;
            if depth <= 0 || n >= lines.len() {
                break;
            }
            code_line = code(lines[n]);
            raw = lines[n].to_owned();
        }
        calls.push((first + 1, call));
    }
    calls
}

#[test]
fn log_lines_show_values_as_text() {
    let root = workspace();
    let (mut found, mut calls) = (Vec::new(), 0);
    for krate in [
        "informinfo",
        "local-sa/core",
        "local-sa/umad",
        "local-sa/daemon",
    ] {
        for file in rust_files(&root.join(krate).join("src")) {
            let path = file.to_string_lossy();
            if path.contains("/tests/") || path.contains("/fuzzing/") {
                continue;
            }
            let text = fs::read_to_string(&file).unwrap();
            for (line, call) in log_calls(&text) {
                calls += 1;
                calls += 1;
                let code: String = call.lines().map(code).collect::<Vec<_>>().join(" ");
                // `?field` / `field = ?value` in the fields, or `{x:?}` in
                // the message.
                let sigil = code.char_indices().any(|(i, c)| {
                    c == '?'
                        && code[..i].trim_end().ends_with(['(', ',', '='])
                        && code[i + 1..]
                            .starts_with(|c: char| c.is_alphanumeric() || c == '&' || c == '_')
                });
                if sigil || call.contains(":?}") || call.contains(":#?}") {
                    found.push(format!("{}:{line}", file.display()));
                }
            }
        }
    }
    assert!(
        calls > 100,
        "only {calls} log lines found; is the scan broken?"
    );
    assert!(
        found.is_empty(),
        "log lines with Debug formatting: {found:#?}"
    );
}

/// The files that may hold `impl SaCore`: its public calls, and one
/// routing file per group whose effects reach beyond it, where SaCore
/// routes events to the group and carries out what it decides; the
/// decisions live in the groups.
const SA_CORE_IMPL_FILES: [&str; 5] = [
    "agent/mod.rs",
    "agent/routing/names.rs",
    "agent/routing/queries.rs",
    "agent/routing/registrations.rs",
    "agent/routing/tables.rs",
];

/// The port's tables' methods, by concern: the tables, the refresh, the
/// upkeep's rules.
const PORT_TABLES_IMPL_FILES: [&str; 3] = [
    "agent/port_tables/mod.rs",
    "agent/port_tables/fetch.rs",
    "agent/port_tables/rules.rs",
];

/// The files under `local-sa/core/src` with an `impl {ty}` (not of a
/// trait), sorted.
fn implementing(ty: &str) -> Vec<String> {
    let src = workspace().join("local-sa/core/src");
    let opening = format!("impl {ty} ");
    let mut found = Vec::new();
    for file in rust_files(&src) {
        let text = fs::read_to_string(&file).unwrap();
        if text
            .lines()
            .any(|l| code(l).trim_start().starts_with(&opening))
        {
            let name = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            found.push(name);
        }
    }
    found.sort();
    found
}

/// `ty`'s methods are in `files` and nowhere else, and each of `files`
/// still holds some.
fn implemented_only_in(ty: &str, files: &[&str], list: &str) {
    let found = implementing(ty);
    let stray: Vec<&String> = found
        .iter()
        .filter(|f| !files.contains(&f.as_str()))
        .collect();
    assert!(
        stray.is_empty(),
        "impl {ty} outside {list}: {stray:?}; a decision belongs to the group it concerns"
    );
    let gone: Vec<&&str> = files
        .iter()
        .filter(|f| !found.iter().any(|g| g == *f))
        .collect();
    assert!(
        gone.is_empty(),
        "{gone:?} no longer implement {ty}: take them off {list}"
    );
}

#[test]
fn sa_core_is_implemented_only_in_its_routing_files() {
    implemented_only_in("SaCore", &SA_CORE_IMPL_FILES, "SA_CORE_IMPL_FILES");
}

#[test]
fn the_port_s_tables_are_implemented_in_three_files_by_concern() {
    implemented_only_in(
        "PortTables",
        &PORT_TABLES_IMPL_FILES,
        "PORT_TABLES_IMPL_FILES",
    );
}

/// The groups SaCore holds, each in its folder's `mod.rs`.
const SA_CORE_GROUPS: [(&str, &str); 4] = [
    ("agent/port_tables/mod.rs", "PortTables"),
    ("agent/master/mod.rs", "MasterLink"),
    ("agent/answers/mod.rs", "AnswerReuse"),
    ("agent/registration_proxy/mod.rs", "RegistrationProxy"),
];

#[test]
fn sa_core_s_groups_expose_no_fields() {
    let src = workspace().join("local-sa/core/src");
    let mut exposed = Vec::new();
    for (file, group) in SA_CORE_GROUPS {
        let text = fs::read_to_string(src.join(file)).unwrap();
        let start = text
            .lines()
            .position(|l| code(l).contains(&format!("struct {group} {{")))
            .unwrap_or_else(|| panic!("struct {group} not found in {file}"));
        let fields = text
            .lines()
            .skip(start + 1)
            .map(code)
            .take_while(|l| l.trim() != "}");
        exposed.extend(
            fields
                .filter(|l| l.trim_start().starts_with("pub"))
                .map(|l| format!("{group}: {}", l.trim())),
        );
    }
    assert!(
        exposed.is_empty(),
        "fields reached from outside their group (give the group a method instead): {exposed:#?}"
    );
}

/// Every file of a group's folder is named in the folder's `mod.rs`
/// doc comment: the module's own map is where a reader looks for what a
/// file does, and it cannot fall behind the files unnoticed.
#[test]
fn each_group_s_map_names_every_file_of_its_folder() {
    let src = workspace().join("local-sa/core/src");
    let mut unnamed = Vec::new();
    for (file, _) in SA_CORE_GROUPS.iter().chain([&("agent/routing/mod.rs", "")]) {
        let path = src.join(file);
        let text = fs::read_to_string(&path).unwrap();
        let doc: String = text
            .lines()
            .filter(|l| l.trim_start().starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        let dir = path.parent().unwrap();
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(module) = name.strip_suffix(".rs") else {
                continue;
            };
            if module != "mod" && module != "tests" && !doc.contains(&format!("`{module}`")) {
                unnamed.push(format!("{file}: `{module}`"));
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "files the folder's map does not name (say what each does): {unnamed:#?}"
    );
}
