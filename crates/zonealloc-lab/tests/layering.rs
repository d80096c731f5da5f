//! The layering of `src/trace/`, checked on the source as `crates/zonealloc/tests/layering.rs`
//! checks the core's: `trace replay` is three stages, ingest, replay and report, over the
//! modules that read and write traces; each top-level module of `trace/` imports only from its
//! own layer or the layers below, and they form no cycle. Inside the stages, no file imports
//! an item from a folder's `mod.rs` above it (a namespace is not also a type its children reach
//! into), and the files form no cycle. A new module of `trace/` has to be given a layer here.
//! The library's top-level modules (`report`, `trace`, `experiments`, ...) are layered the
//! same way ([`LAB_LAYERS`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers of `trace/`'s top-level modules, lowest first.
const LAYERS: &[&[&str]] = &[
    // Leaves: numbering evidence, zstd frames, the gfp memo, the policy sets.
    &["migratetype", "zstd", "gfp_memo", "variant"],
    // Bytes, then events.
    &["input"],
    &["parse"],
    // Beside the replay: `trace stats`, the ftrace writer, `trace gen`.
    &["emit", "stats"],
    &["record", "gen"],
    // `trace replay`'s stages.
    &["ingest"],
    &["replay"],
    &["report"],
];

/// The stages whose files are checked one by one.
const STAGES: &[&str] = &["ingest", "replay", "report"];

fn trace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/trace")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/trace") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path under `trace` (`replay/infer/mod.rs` -> `["replay", "infer"]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Whether `rel` (a path under `src/`) is a test module of its own: `tests.rs`, `*_tests.rs`,
/// or a file of a `tests/` folder.
fn is_test_module(rel: &Path) -> bool {
    rel.ends_with("tests.rs")
        || rel.to_string_lossy().ends_with("_tests.rs")
        || rel.components().any(|c| c.as_os_str() == "tests")
}

/// The code of a file without comments and without its unit tests.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path a `crate::`, `super::` or `self::` path in `code` names, its `{..}` groups
/// expanded (`super::{a::{b, C}, d}` -> `super::a::b`, `super::a::C`, `super::d`).
fn paths(code: &str) -> Vec<Vec<String>> {
    fn expand(prefix: &[String], s: &str, out: &mut Vec<Vec<String>>) -> usize {
        // Reads one path from the start of `s`; returns the bytes read.
        let mut segs = prefix.to_vec();
        let mut i = 0;
        let b = s.as_bytes();
        loop {
            let start = i;
            while i < s.len() && is_ident(b[i] as char) {
                i += 1;
            }
            if i > start {
                segs.push(s[start..i].to_owned());
            }
            if s[i..].starts_with("::{") {
                i += 3;
                loop {
                    while i < s.len() && (b[i] as char).is_whitespace() {
                        i += 1;
                    }
                    if i >= s.len() || b[i] == b'}' {
                        return i + 1;
                    }
                    i += expand(&segs, &s[i..], out);
                    while i < s.len() && (b[i] == b',' || (b[i] as char).is_whitespace()) {
                        i += 1;
                    }
                }
            } else if s[i..].starts_with("::") {
                i += 2;
            } else {
                out.push(segs);
                return i;
            }
        }
    }
    let mut out = Vec::new();
    for root in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(root) {
            if at > 0 && is_ident(code.as_bytes()[at - 1] as char) {
                continue;
            }
            expand(&[], &code[at..], &mut out);
        }
    }
    out
}

/// The module of `trace` that `path`, written in module `from`, leads into: the longest prefix
/// that is a module (`None`: outside `trace`).
fn resolve(
    from: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let (mut at, rest): (Vec<String>, &[String]) = match path.first().map(String::as_str) {
        Some("crate") if path.get(1).is_some_and(|s| s == "trace") => (Vec::new(), &path[2..]),
        Some("crate") => return None,
        Some("self") => (from.to_vec(), &path[1..]),
        Some("super") => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let keep = from.len().checked_sub(ups)?;
            (from[..keep].to_vec(), &path[ups..])
        }
        _ => return None,
    };
    for seg in rest {
        let mut next = at.clone();
        next.push(seg.clone());
        if !modules.contains(&next) {
            break;
        }
        at = next;
    }
    Some(at)
}

struct Tree {
    /// Every module of `trace` (`[]` is `trace` itself), and which are folders (`mod.rs`).
    modules: BTreeSet<Vec<String>>,
    folders: BTreeSet<Vec<String>>,
    /// Per module, the modules its code imports from.
    imports: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

fn tree() -> Tree {
    let mut files = Vec::new();
    rust_files(&trace_dir(), &mut files);
    let mut modules = BTreeSet::new();
    let mut folders = BTreeSet::new();
    let mut texts = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(trace_dir())
            .expect("under src/trace")
            .to_owned();
        let m = module_path(&rel);
        if rel.ends_with("mod.rs") {
            folders.insert(m.clone());
        }
        modules.insert(m.clone());
        // Test modules of their own (`mod tests;`, `mod refill_tests;`, the files of a
        // `tests/` folder) are not checked.
        if !is_test_module(&rel) {
            texts.push((m, std::fs::read_to_string(&path).expect("read source")));
        }
    }
    let mut imports = BTreeMap::new();
    for (m, text) in texts {
        let to: BTreeSet<Vec<String>> = paths(&code_of(&text))
            .iter()
            .filter_map(|p| resolve(&m, p, &modules))
            .filter(|t| *t != m)
            .collect();
        imports.insert(m, to);
    }
    Tree {
        modules,
        folders,
        imports,
    }
}

/// Panics with the path of a cycle in `edges`, if there is one.
fn assert_acyclic<N: Ord + Clone + std::fmt::Debug>(edges: &BTreeMap<N, BTreeSet<N>>) {
    fn visit<N: Ord + Clone + std::fmt::Debug>(
        m: &N,
        edges: &BTreeMap<N, BTreeSet<N>>,
        state: &mut BTreeMap<N, bool>,
        path: &mut Vec<N>,
    ) {
        state.insert(m.clone(), false);
        path.push(m.clone());
        for to in edges.get(m).into_iter().flatten() {
            match state.get(to) {
                Some(false) => panic!("import cycle: {path:?} -> {to:?}"),
                Some(true) => {}
                None => visit(to, edges, state, path),
            }
        }
        path.pop();
        state.insert(m.clone(), true);
    }
    let mut state = BTreeMap::new();
    for m in edges.keys() {
        if !state.contains_key(m) {
            visit(m, edges, &mut state, &mut Vec::new());
        }
    }
}

#[test]
fn trace_modules_import_only_from_lower_layers_and_form_no_cycle() {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(n, mods)| mods.iter().map(move |m| (*m, n)))
        .collect();
    let t = tree();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in &t.imports {
        let Some(top) = from.first() else {
            continue; // trace/mod.rs: the declarations
        };
        assert!(
            layer_of.contains_key(top.as_str()),
            "trace module `{top}` has no layer: add it to LAYERS in tests/layering.rs"
        );
        let e = edges.entry(top.clone()).or_default();
        for to in tos {
            match to.first() {
                Some(to_top) if to_top != top => {
                    e.insert(to_top.clone());
                }
                _ => {}
            }
        }
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
    assert_acyclic(&edges);
}

#[test]
fn stage_files_import_nothing_back_up_and_form_no_cycle() {
    let t = tree();
    let mut back = Vec::new();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, tos) in &t.imports {
        if !from.first().is_some_and(|s| STAGES.contains(&s.as_str())) {
            continue;
        }
        for to in tos {
            let ancestor = to.len() < from.len() && from[..to.len()] == to[..];
            if ancestor {
                // An item of a folder's `mod.rs` above: the namespace reached into. (A child
                // of a file module, `replayer/frees.rs` of `replayer.rs`, is part of that
                // file's type and may use it.)
                if t.folders.contains(to) && !to.is_empty() {
                    back.push(format!("{} -> {}", from.join("/"), to.join("/")));
                }
            } else if to.first().is_some_and(|s| STAGES.contains(&s.as_str())) {
                edges.entry(from.clone()).or_default().insert(to.clone());
            }
        }
    }
    assert!(
        back.is_empty(),
        "imports of an item of a folder's mod.rs above: {back:?}"
    );
    assert!(t
        .modules
        .iter()
        .any(|m| m.first().is_some_and(|s| s == "ingest")));
    assert_acyclic(&edges);
}

#[test]
fn the_checks_see_imports_back_up_and_cycles() {
    // The resolver on a made-up tree: a child naming its folder's item, and two siblings.
    let m = |s: &str| -> Vec<String> {
        s.split('/')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let modules: BTreeSet<_> = ["", "replay", "replay/a", "replay/b"]
        .iter()
        .map(|s| m(s))
        .collect();
    let ps = paths("use super::{Replayer, b::{self, X}};\nlet g = crate::trace::replay::a::f();");
    let to: BTreeSet<_> = ps
        .iter()
        .filter_map(|p| resolve(&m("replay/a"), p, &modules))
        .collect();
    assert_eq!(to, [m("replay"), m("replay/b"), m("replay/a")].into());
    let mut edges = BTreeMap::new();
    edges.insert(1, BTreeSet::from([2]));
    edges.insert(2, BTreeSet::from([1]));
    assert!(std::panic::catch_unwind(|| assert_acyclic(&edges)).is_err());
    edges.insert(2, BTreeSet::new());
    assert_acyclic(&edges);
}

/// The layers of the library's top-level modules (`src/lib.rs`), lowest first: the leaves,
/// the report model, what produces results (`trace`, `inspect`), then the lab's drivers. The
/// binary's modules (`main.rs`, `cli.rs`, `commands/`, `manual.rs`) sit above all of them.
const LAB_LAYERS: &[&[&str]] = &[
    &["rng", "machine", "gate", "procfs", "mix"],
    &["report"],
    &["trace", "inspect"],
    &["experiments", "bench"],
];

/// The binary's files and folders under `src/`, which the library cannot import.
const BINARY: &[&str] = &["main.rs", "cli.rs", "commands", "manual.rs", "lib.rs"];

/// The top-level module a path written in module `from` (of the library) leads into, when it
/// leaves `from`'s own top-level module (`None`: inside it, or outside the crate).
fn lab_target(from: &[String], path: &[String], tops: &BTreeSet<String>) -> Option<String> {
    let target = match path.first().map(String::as_str) {
        Some("crate") => path.get(1)?,
        Some("super") => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            if ups < from.len() {
                return None; // still inside `from`'s top-level module
            }
            path.get(ups)?
        }
        _ => return None,
    };
    (tops.contains(target) && from.first() != Some(target)).then(|| target.clone())
}

/// Per top-level module of the library, the other top-level modules its code imports from.
fn lab_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut tops = BTreeSet::new();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&src).expect("read src") {
        let path = entry.expect("dir entry").path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if BINARY.contains(&name.as_str()) {
            continue;
        }
        tops.insert(name.trim_end_matches(".rs").to_owned());
        if path.is_dir() {
            rust_files(&path, &mut files);
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(&src).expect("under src").to_owned();
        if is_test_module(&rel) {
            continue;
        }
        let m = module_path(&rel);
        let text = std::fs::read_to_string(&path).expect("read source");
        let e = imports.entry(m[0].clone()).or_default();
        for p in paths(&code_of(&text)) {
            if let Some(t) = lab_target(&m, &p, &tops) {
                e.insert(t);
            }
        }
    }
    imports
}

/// The imports of `edges` that go to a higher layer of `layers`, as `from -> to`; panics on a
/// module without a layer.
fn upward(edges: &BTreeMap<String, BTreeSet<String>>, layers: &[&[&str]]) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(n, mods)| mods.iter().map(move |m| (*m, n)))
        .collect();
    let layer = |m: &str| {
        *layer_of
            .get(m)
            .unwrap_or_else(|| panic!("module `{m}` has no layer: add it to LAB_LAYERS"))
    };
    let mut up = Vec::new();
    for (from, tos) in edges {
        for to in tos {
            if layer(to) > layer(from) {
                up.push(format!("{from} -> {to}"));
            }
        }
    }
    up
}

#[test]
fn lab_modules_import_only_from_lower_layers_and_form_no_cycle() {
    let edges = lab_imports();
    assert!(edges.contains_key("trace") && edges.contains_key("report"));
    let up = upward(&edges, LAB_LAYERS);
    assert!(up.is_empty(), "imports from a higher layer: {up:?}");
    assert_acyclic(&edges);
}

#[test]
fn the_lab_check_sees_an_import_back_up() {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let tops: BTreeSet<String> = ["report", "trace"]
        .iter()
        .map(|x| (*x).to_owned())
        .collect();
    // `report/verdict/data.rs` naming `trace` by `crate::` or by enough `super::`s.
    let from = s(&["report", "verdict", "data"]);
    let to = lab_target(&from, &s(&["crate", "trace", "replay"]), &tops);
    assert_eq!(to.as_deref(), Some("trace"));
    let to = lab_target(&from, &s(&["super", "super", "super", "trace"]), &tops);
    assert_eq!(to.as_deref(), Some("trace"));
    // Within its own top-level module: not an edge.
    assert_eq!(
        lab_target(&from, &s(&["super", "super", "compare"]), &tops),
        None
    );
    let edges = BTreeMap::from([("report".to_owned(), BTreeSet::from(["trace".to_owned()]))]);
    assert_eq!(upward(&edges, LAB_LAYERS), ["report -> trace"]);
}
