//! Every scenario file under tests/scenarios passes, and malformed scenarios are rejected with an
//! error naming the line.

use std::path::{Path, PathBuf};

use delta_rlc_engine::scenario::run_scenario;

use crate::common::rt;

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            scenario_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

#[test]
fn all_scenario_files_pass() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios");
    let mut files = Vec::new();
    scenario_files(&root, &mut files);
    files.sort();
    assert!(files.len() >= 11, "scenario files missing: {files:?}");
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    rt().block_on(async {
        for (i, f) in files.iter().enumerate() {
            let src = std::fs::read_to_string(f).unwrap();
            let loc = tmp.path().join(format!("s{i}"));
            match run_scenario(&f.display().to_string(), &src, loc.to_str().unwrap(), &[]).await {
                Ok(r) if r.passed() => {}
                Ok(r) => failures.push(r.to_text()),
                Err(e) => failures.push(format!("{}: {e}", f.display())),
            }
        }
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const GOOD: &str = r#"name = "x"
steps = ["A.start", "A.commit"]
[table]
columns = "id BIGINT"
[[txn]]
name = "A"
sql = "INSERT INTO t VALUES (1)"
[expect]
A = "committed"
"#;

fn error_of(src: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let loc = tmp.path().join("t");
    match rt().block_on(run_scenario("bad.toml", src, loc.to_str().unwrap(), &[])) {
        Ok(r) => format!("no error; passed={}", r.passed()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn good_scenario_passes_and_bad_ones_name_the_line() {
    assert_eq!(error_of(GOOD), "no error; passed=true");
    let e = error_of(&GOOD.replace(
        r#"steps = ["A.start", "A.commit"]"#,
        r#"steps = ["A.start", "Z.commit"]"#,
    ));
    assert!(
        e.contains("bad.toml:2:") && e.contains("unknown transaction Z"),
        "{e}"
    );
    let e = error_of(&GOOD.replace(
        r#"steps = ["A.start", "A.commit"]"#,
        r#"steps = ["A.start", "A.start", "A.commit"]"#,
    ));
    assert!(e.contains("bad.toml:2:") && e.contains("twice"), "{e}");
    let e = error_of(&GOOD.replace("INSERT INTO t VALUES (1)", "INSERT INTO t VALUS (1"));
    assert!(e.contains("bad.toml:7:"), "{e}");
    let e = error_of(&GOOD.replace(r#"A = "committed""#, r#"A = "sometimes""#));
    assert!(
        e.contains("bad.toml:9:") && e.contains("unknown outcome"),
        "{e}"
    );
    let e = error_of(&GOOD.replace("columns", "colums"));
    assert!(e.contains("bad.toml:"), "{e}");
    // A wrong expectation is reported as a mismatch, not an error.
    let e = error_of(&GOOD.replace(r#"A = "committed""#, r#"A = "ConcurrentAppend""#));
    assert_eq!(e, "no error; passed=false");
}
