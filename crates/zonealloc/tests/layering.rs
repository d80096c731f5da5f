//! The layering rule of `docs/DESIGN.md` ("Layering"), checked on the source: every core module
//! imports only from its own layer or the layers below it, and the imports form no cycle.
//! A new module has to be given a layer here, which is the point: it makes its author decide
//! where it sits.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first, as `docs/DESIGN.md` lists them. `arena` (feature `arena`) sits on
/// top of everything and is not checked; `design` is documentation only.
const LAYERS: &[&[&str]] = &[
    &[
        "types",
        "error",
        "config",
        "request",
        "memmap",
        "stats",
        "tracepoint",
    ],
    &["sync", "platform"],
    &["meta", "list", "check"],
    &["buddy", "shared"],
    &["pcp"],
    &["zone"],
    &["node", "ticker"],
    &["numa"],
];

const UNCHECKED: &[&str] = &["lib", "arena", "design"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`zone/alloc.rs` -> `zone`).
fn module_of(rel: &Path) -> String {
    let first = rel.components().next().expect("non-empty path");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The code of a file without comments and without its unit tests.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Which module each name re-exported at the crate root comes from (`CheckError` -> `check`).
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in lib.split("pub use ").skip(1) {
        let stmt = &stmt[..stmt.find(';').expect("use ends with ;")];
        let Some((module, names)) = stmt.split_once("::") else {
            continue;
        };
        for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() {
                out.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    out
}

/// The modules that `code` names through `crate::` paths.
fn imports(code: &str, alias: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |name: &str| {
        let m = alias.get(name).map_or(name, String::as_str);
        out.insert(m.to_string());
    };
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').expect("use group ends with }")];
            for item in group.split(',') {
                let item = item.trim();
                if !item.is_empty() {
                    add(ident_at(item));
                }
            }
        } else {
            add(ident_at(rest));
        }
    }
    out
}

#[test]
fn core_modules_import_only_from_lower_layers_and_form_no_cycle() {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(n, mods)| mods.iter().map(move |m| (*m, n)))
        .collect();
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("read lib.rs");
    let alias = reexports(&lib);

    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(src()).expect("under src");
        let module = module_of(rel);
        if UNCHECKED.contains(&module.as_str()) || rel.ends_with("tests.rs") {
            continue;
        }
        assert!(
            layer_of.contains_key(module.as_str()),
            "module `{module}` has no layer: add it to LAYERS here and to docs/DESIGN.md"
        );
        let text = std::fs::read_to_string(&path).expect("read source");
        let mut to = imports(&code_of(&text), &alias);
        to.remove(&module);
        edges.entry(module).or_default().extend(to);
    }

    let mut upward = Vec::new();
    for (from, tos) in &edges {
        for to in tos {
            let to_layer = *layer_of
                .get(to.as_str())
                .unwrap_or_else(|| panic!("`{from}` imports `{to}`, which has no layer"));
            if to_layer > layer_of[from.as_str()] {
                upward.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(upward.is_empty(), "imports from a higher layer: {upward:?}");

    // No cycle, within a layer either: a depth-first search finds no back edge.
    fn visit<'a>(
        m: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, bool>,
        path: &mut Vec<&'a str>,
    ) {
        state.insert(m, false);
        path.push(m);
        for to in edges.get(m).into_iter().flatten() {
            match state.get(to.as_str()) {
                Some(false) => panic!("import cycle: {} -> {to}", path.join(" -> ")),
                Some(true) => {}
                None => visit(to, edges, state, path),
            }
        }
        path.pop();
        state.insert(m, true);
    }
    let mut state = BTreeMap::new();
    for m in edges.keys() {
        if !state.contains_key(m.as_str()) {
            visit(m, &edges, &mut state, &mut Vec::new());
        }
    }
}

/// STYLE's "the lock and the atomics behind `sync`": no core module but `sync` names an
/// atomic type by its path (`core::sync::atomic`, `std::sync::atomic`) or loom; they take the
/// types `crate::sync` chose for the build. (Test files, `tests.rs`, may use what they like.)
#[test]
fn only_sync_names_the_atomics() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let offenders: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(src()).expect("under src");
            if module_of(rel) == "sync" || f.file_name().is_some_and(|n| n == "tests.rs") {
                return None;
            }
            let code = code_of(&std::fs::read_to_string(f).expect("read source"));
            ["sync::atomic", "loom::"]
                .iter()
                .any(|p| code.contains(p))
                .then(|| rel.display().to_string())
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "atomics named outside sync: {offenders:?}"
    );
}
