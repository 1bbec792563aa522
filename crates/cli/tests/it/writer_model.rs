//! `delta-rlc-dev bench writers --virtual-time`: issue #48's model of many writers. The real engine
//! runs on a paused clock, so a statement's latency is exactly the requests it waited on (and the
//! statement cost given), whatever this machine's CPU does; the model's races are real races,
//! judged by the real checker, and the table is read back exact.

use crate::common;

fn point(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["bench", "writers", "--rows", "2000", "--files", "2"];
    all.extend_from_slice(args);
    let (out, _) = common::ok_dev(dir.path(), &all);
    let line = out.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Whether `ms` is a whole number of 10 ms round trips plus `plus` (within float rounding).
fn round_trips(ms: f64, plus: f64) -> bool {
    let n = (ms - plus) / 10.0;
    n > 0.0 && (n - n.round()).abs() < 1e-6
}

fn num(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn a_lone_writer_in_virtual_time_waits_only_on_its_requests() {
    let lone = [
        "--virtual-time",
        "--writers",
        "1",
        "--seconds",
        "2",
        "--profile",
        "fixed:10",
    ];
    let m = point(&lone);
    assert_eq!(m["virtualTime"], true);
    assert_eq!(m["readBack"], "exact");
    // Every request takes exactly 10 virtual ms and computing takes none: a statement lasts a
    // whole number of round trips, as many as its critical path is deep.
    let p50 = num(&m, "p50Ms");
    assert!(round_trips(p50, 0.0), "p50 {p50}");
    assert!(p50 <= 10.0 * num(&m, "meanDepth").ceil(), "{m}");
    // Two virtual seconds of ~40 ms statements, however slow this debug build is.
    assert!(num(&m, "commits") >= 20.0, "{m}");
    assert_eq!(num(&m, "attemptsPerCommit"), 1.0);

    // A statement cost lands between planning and the commit: 5 ms more per statement.
    let c = point(&[&lone[..], &["--statement-cpu-ms", "5"]].concat());
    let p50c = num(&c, "p50Ms");
    assert!(round_trips(p50c, 5.0), "p50 with the cost {p50c}");
    assert_eq!(num(&c, "statementCpuMs"), 5.0);
}

#[test]
fn many_virtual_writers_race_and_only_legacy_aborts() {
    let args = [
        "--virtual-time",
        "--writers",
        "8",
        "--seconds",
        "1",
        "--profile",
        "fixed:10",
        "--workload",
        "update",
    ];
    let rlc = point(&args);
    assert_eq!(rlc["readBack"], "exact");
    assert_eq!(num(&rlc, "failedStatements"), 0.0, "{rlc}");
    // Eight writers race for each version: lost races were checked and retried.
    assert!(num(&rlc, "attemptsPerCommit") > 1.0, "{rlc}");
    assert!(num(&rlc, "commits") > 0.0);

    // The twin: the same races in legacy mode abort (every writer owns its ids, so each abort
    // is a false one) — the model runs the real checker, not a stand-in.
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![
        "--conf",
        "legacy=true",
        "bench",
        "writers",
        "--rows",
        "2000",
        "--files",
        "2",
    ];
    all.extend_from_slice(&args);
    let (out, _) = common::ok_dev(dir.path(), &all);
    let legacy: serde_json::Value =
        serde_json::from_str(out.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(legacy["readBack"], "exact");
    assert!(num(&legacy, "failedStatements") > 0.0, "{legacy}");
}

#[test]
fn a_statement_cost_needs_virtual_time() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = common::run_dev(
        dir.path(),
        &[],
        &["bench", "writers", "--statement-cpu-ms", "5"],
        "",
    );
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--virtual-time"), "{err}");
}
