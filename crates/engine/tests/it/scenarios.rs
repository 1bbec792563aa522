//! Every scenario file under tests/scenarios passes, and malformed scenarios are rejected with an
//! error naming the line.

use std::path::{Path, PathBuf};

use delta_rlc_engine::scenario::{run_scenario, ScenarioReport, TxnOutcome};

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

/// Case 2 along one retry round: A's attempt meets B, C and D together, each DV-updating the one
/// file. A checks the file against the end of its DV chain once (one merged DV file, not three),
/// and B's and C's successors find the file settled. In the twins a later winner takes A's row:
/// A aborts, naming the winner that took it, and that winner's rows stand.
#[test]
fn a_retry_round_checks_a_files_dv_chain_against_its_end_and_an_overlap_names_its_winner() {
    /// Runs the round; `a_merges` is the number of DV files A's merges write (one per winner it
    /// settled on its own, one for a whole chain).
    fn run(
        d_sql: &str,
        c_sql: &str,
        a_outcome: &str,
        rows: &str,
        a_merges: usize,
    ) -> ScenarioReport {
        let src = format!(
            r#"name = "chain"
steps = ["A.start", "B.run", "C.run", "D.run", "A.commit"]
[table]
columns = "id BIGINT NOT NULL, v STRING"
setup = ["INSERT INTO t SELECT value, 'x' FROM range(0, 100)"]
[[txn]]
name = "A"
sql = "UPDATE t SET v = 'a' WHERE id = 10"
[[txn]]
name = "B"
sql = "DELETE FROM t WHERE id = 20"
[[txn]]
name = "C"
sql = "{c_sql}"
[[txn]]
name = "D"
sql = "{d_sql}"
[expect]
A = "{a_outcome}"
B = "committed"
C = "committed"
D = "committed"
[[expect.query]]
sql = "SELECT id, v FROM t WHERE id IN (10, 20, 30, 40) ORDER BY id"
rows = {rows}
"#
        );
        let tmp = tempfile::tempdir().unwrap();
        let loc = tmp.path().join("t");
        let report = rt()
            .block_on(run_scenario("chain.toml", &src, loc.to_str().unwrap(), &[]))
            .unwrap();
        assert!(report.passed(), "{}", report.to_text());
        let dv_files = std::fs::read_dir(&loc)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().starts_with("deletion_vector_")
            })
            .count();
        // B, C, D and A's statement write one DV file each, then A's merges.
        assert_eq!(dv_files, 4 + a_merges, "DV files");
        report
    }
    let outcome = |r: &ScenarioReport| {
        r.outcomes
            .iter()
            .find(|(n, _)| n == "A")
            .map(|(_, o)| o.clone())
            .unwrap()
    };

    let ok = run(
        "DELETE FROM t WHERE id = 40",
        "UPDATE t SET v = 'c' WHERE id = 30",
        "committed",
        r#"[[10, "a"], [30, "c"]]"#,
        1,
    );
    let TxnOutcome::Committed {
        events, attempts, ..
    } = outcome(&ok)
    else {
        panic!("A did not commit")
    };
    assert_eq!(attempts, 2);
    let merges: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e.name == "delta.rowLevelConcurrency.deletionVectorsMerged")
        .map(|e| {
            (
                e.fields["winningCommitVersion"].as_u64().unwrap(),
                e.fields["checkedWithEarlierWinner"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(merges, vec![(2, 0), (3, 1), (4, 1)]);

    // The chain's last winner takes A's row: the check at B fails against the chain's end, B's own
    // post-image passes, and D (version 4) aborts A at its turn.
    let last = run(
        "DELETE FROM t WHERE id = 10",
        "UPDATE t SET v = 'c' WHERE id = 30",
        "aborted",
        r#"[[30, "c"], [40, "x"]]"#,
        2,
    );
    // A middle winner takes it: C (version 3) aborts A, and its value stands.
    let middle = run(
        "DELETE FROM t WHERE id = 40",
        "UPDATE t SET v = 'c' WHERE id = 10 OR id = 30",
        "aborted",
        r#"[[10, "c"], [30, "c"]]"#,
        1,
    );
    for (report, version) in [(last, 4), (middle, 3)] {
        let TxnOutcome::Aborted { message, .. } = outcome(&report) else {
            panic!("A did not abort")
        };
        assert!(message.contains(&format!("version {version}")), "{message}");
    }
}
