//! The engine's module layering (docs/design.md, "Layers"): the import graph between top-level
//! modules of `src/` has no cycle, the conflict checker imports no statement code, and statement
//! code (ops, sql) imports nothing from the checker. Read from the sources: `crate::<module>` paths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Top-level module → the top-level modules it names as `crate::<m>` (comments ignored).
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = BTreeMap::new();
    for e in std::fs::read_dir(&src).expect("src is readable").flatten() {
        let p = e.path();
        let name = p
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("utf-8 module name")
            .to_string();
        if name == "lib" {
            continue;
        }
        let mut files = Vec::new();
        if p.is_dir() {
            rust_files(&p, &mut files);
        } else {
            files.push(p);
        }
        let mut deps = BTreeSet::new();
        for f in files {
            let text = std::fs::read_to_string(&f).expect("source is readable");
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let dep: String = line[i + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !dep.is_empty() && dep != name {
                        deps.insert(dep);
                    }
                }
            }
        }
        graph.insert(name, deps);
    }
    graph
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // 0 = unvisited, 1 = on the stack, 2 = done.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for d in graph.get(m).into_iter().flatten() {
            match state.get(d.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == d).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(d.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(d, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if state.get(m.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(m, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn top_level_modules_import_without_cycles() {
    let graph = import_graph();
    assert!(
        graph.contains_key("conflict") && graph.contains_key("ops"),
        "{graph:?}"
    );
    assert_eq!(
        find_cycle(&graph),
        None,
        "import cycle between engine modules"
    );
}

#[test]
fn the_checker_and_the_statements_do_not_import_each_other() {
    let graph = import_graph();
    let deps = |m: &str| graph.get(m).cloned().unwrap_or_default();
    for forbidden in ["ops", "sql", "txn", "table", "scenario"] {
        assert!(
            !deps("conflict").contains(forbidden),
            "conflict/ imports {forbidden}/"
        );
    }
    for statements in ["ops", "sql"] {
        assert!(
            !deps(statements).contains("conflict"),
            "{statements}/ imports the conflict checker"
        );
    }
    // Leaves: the read set, the events, the operations (and their metrics) and the conflict error import no engine
    // module but the key equality and key sets (the read set's MERGE keys) — the checker and the
    // statements both stand on them.
    assert!(deps("events").is_empty() && deps("conflict_error").is_empty());
    assert!(deps("operation").is_empty() && deps("operation_metrics").is_empty());
    assert!(deps("read_set")
        .iter()
        .all(|d| d == "key_equality" || d == "key_set"));
    assert!(deps("key_set")
        .iter()
        .all(|d| d == "key_equality" || d == "error"));
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["c".to_string()].into());
    g.insert("c".into(), ["a".to_string()].into());
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    g.insert("c".into(), BTreeSet::new());
    assert_eq!(find_cycle(&g), None);
}
