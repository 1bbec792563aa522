//! Generates one `#[test]` per scenario file under `tests/scenarios` (included by
//! `tests/it/scenarios.rs`), so each scenario runs — and can be run — by name:
//! `cargo test -p delta-rlc-engine --test it scenario_file::case1_01_...`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            toml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            println!("cargo:rerun-if-changed={}", p.display());
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("../../tests/scenarios");
    let mut files = Vec::new();
    toml_files(&root, &mut files);
    files.sort();
    let mut code = String::new();
    let mut names = std::collections::BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f).with_extension("");
        let mut name: String = rel
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        if name.starts_with(|c: char| c.is_ascii_digit()) {
            name.insert(0, 's');
        }
        while !names.insert(name.clone()) {
            name.push('_');
        }
        let _ = writeln!(
            code,
            "#[test]\nfn {name}() {{\n    run_scenario_file({:?});\n}}\n",
            f.display().to_string()
        );
    }
    let _ = writeln!(
        code,
        "pub const SCENARIO_FILE_COUNT: usize = {};",
        files.len()
    );
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("scenario_tests.rs");
    if let Err(e) = std::fs::write(&out, code) {
        println!("cargo:warning=cannot write {}: {e}", out.display());
    }
}
