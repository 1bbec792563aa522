//! Every scenario file under tests/scenarios passes, and malformed scenarios are rejected with an
//! error naming the line.

use std::path::{Path, PathBuf};

use delta_rlc_engine::scenario::run_scenario;

use crate::common::rt;

/// One generated test per scenario file (see `build.rs`): `scenario_file::<dir>_<name>`.
mod scenario_file {
    use super::*;

    fn run_scenario_file(path: &str) {
        let src = std::fs::read_to_string(path).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let loc = tmp.path().join("t");
        let report = rt()
            .block_on(run_scenario(path, &src, loc.to_str().unwrap(), &[]))
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(report.passed(), "{}", report.to_text());
    }

    include!(concat!(env!("OUT_DIR"), "/scenario_tests.rs"));

    #[test]
    fn every_scenario_file_has_a_test() {
        fn count(dir: &Path) -> usize {
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .map(|p| match p.is_dir() {
                    true => count(&p),
                    false => usize::from(p.extension().is_some_and(|x| x == "toml")),
                })
                .sum()
        }
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios");
        const { assert!(SCENARIO_FILE_COUNT >= 11) };
        assert_eq!(SCENARIO_FILE_COUNT, count(&root));
    }
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

/// docs/concurrency.md is what `delta-rlc scenario matrix tests/scenarios` prints: the published
/// matrix cannot drift from the scenario files (regenerate it with that command).
#[test]
fn the_published_concurrency_matrix_is_current() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let work = tempfile::tempdir().unwrap();
    let rows = rt()
        .block_on(delta_rlc_engine::scenario::matrix::matrix(
            &root.join("tests/scenarios"),
            work.path(),
        ))
        .unwrap();
    assert!(rows.len() > 200, "{} overlapping scenarios", rows.len());
    let want = delta_rlc_engine::scenario::matrix::to_markdown(&rows);
    let have = std::fs::read_to_string(root.join("docs/concurrency.md")).unwrap_or_default();
    assert!(
        have == want,
        "docs/concurrency.md is out of date: run `delta-rlc scenario matrix tests/scenarios > docs/concurrency.md`"
    );
}
