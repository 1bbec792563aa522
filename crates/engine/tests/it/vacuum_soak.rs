//! VACUUM racing writers: concurrent INSERT tasks on one local table while another task runs
//! `VACUUM … RETAIN 0 HOURS` (retention check off) in a loop, with orphan files from "failed
//! writers" planted eight hours old. Every INSERT that reported a commit must keep its rows, the
//! table must read, and the old orphans must go. `DELTA_RLC_VACUUM_SOAK_RUNS` sets the number of
//! runs (CI: 3; docs/verification.md: 20). A second soak races RESTOREs and DV DELETEs with
//! FULL and LITE VACUUMs and checks that every file the latest version names exists.

use std::collections::BTreeSet;

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::ErrorKind;

use crate::common::{rt, sorted_rows};

const WRITERS: i64 = 4;
const INSERTS: i64 = 15;

fn plant_old_orphan(dir: &std::path::Path, i: usize) -> std::path::PathBuf {
    let p = dir.join(format!("part-orphan-{i}.snappy.parquet"));
    std::fs::write(&p, b"left by a writer that died").unwrap();
    crate::common::age_file(&p, 8);
    p
}

/// Runs per soak: `DELTA_RLC_VACUUM_SOAK_RUNS`, else 3.
fn soak_runs() -> usize {
    std::env::var("DELTA_RLC_VACUUM_SOAK_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// A table `t (w BIGINT, i BIGINT)` in a fresh directory, and a session with the retention check
/// off (VACUUM RETAIN 0 HOURS).
fn loose_table() -> (tempfile::TempDir, String, SqlSession) {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").display().to_string();
    let mut conf = ConflictConfig::default();
    conf.set("retentionDurationCheck", "false").unwrap();
    let session = SqlSession::new(Env::default(), conf);
    rt().block_on(async {
        session
            .execute(&format!("CREATE TABLE '{t}' (w BIGINT, i BIGINT)"))
            .await
            .unwrap();
    });
    (dir, t, session)
}

fn one_run(run: usize) {
    let (dir, t, session) = loose_table();
    let orphans: Vec<_> = (0..3)
        .map(|i| plant_old_orphan(&dir.path().join("t"), i))
        .collect();
    // Each writer and the VACUUM loop on a thread of its own (own runtime), all at once.
    let (committed, deleted) = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (s, t) = (session.clone(), t.clone());
                scope.spawn(move || {
                    let mut done = Vec::new();
                    for i in 0..INSERTS {
                        let sql =
                            format!("INSERT INTO '{t}' VALUES ({w}, {i}), ({w}, {})", i + 1000);
                        let out = rt().block_on(s.execute(&sql)).unwrap();
                        assert!(out.commit.is_some_and(|c| c.attempts > 0));
                        done.push(format!("{w}|{i}"));
                        done.push(format!("{w}|{}", i + 1000));
                    }
                    done
                })
            })
            .collect();
        let vacuum = {
            let (s, t) = (session.clone(), t.clone());
            scope.spawn(move || {
                let mut deleted = BTreeSet::new();
                for _ in 0..12 {
                    let sql = format!("VACUUM '{t}' RETAIN 0 HOURS");
                    let out = rt().block_on(s.execute(&sql)).unwrap();
                    deleted.extend(sorted_rows(&out.batches));
                }
                deleted
            })
        };
        let committed: Vec<String> = writers
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        (committed, vacuum.join().unwrap())
    });
    assert!(
        deleted.iter().all(|p| p.contains("orphan")),
        "run {run}: VACUUM deleted {deleted:?}"
    );
    for o in &orphans {
        assert!(!o.exists(), "run {run}: old orphan {o:?} survived");
    }
    let rows = rt().block_on(async {
        sorted_rows(
            &session
                .execute(&format!("SELECT w, i FROM '{t}'"))
                .await
                .unwrap()
                .batches,
        )
    });
    let mut want = committed;
    want.sort();
    assert_eq!(rows.len(), (WRITERS * INSERTS * 2) as usize, "run {run}");
    assert_eq!(rows, want, "run {run}: a committed row is missing");
}

#[test]
fn vacuum_racing_writers_loses_no_committed_row() {
    for run in 0..soak_runs() {
        one_run(run);
    }
}

/// RESTOREs and DV DELETEs racing `VACUUM RETAIN 0 HOURS` (FULL and LITE in turn), each on a
/// thread of its own (red teams helper-24 and helper-25: a RESTORE could commit files VACUUM
/// was deleting). Whatever commits, the latest version reads and every file it references — data
/// and deletion vectors — exists.
#[test]
fn vacuum_racing_restores_never_leaves_a_missing_file() {
    for run in 0..soak_runs() {
        let (dir, t, session) = loose_table();
        rt().block_on(async {
            for i in 0..4 {
                session
                    .execute(&format!(
                        "INSERT INTO '{t}' SELECT {i}, value FROM range(0, 50)"
                    ))
                    .await
                    .unwrap();
            }
        });
        let restored = std::thread::scope(|scope| {
            let writer = {
                let (s, t) = (session.clone(), t.clone());
                scope.spawn(move || {
                    for i in 0..30 {
                        let sql = match i % 3 {
                            0 => format!("INSERT INTO '{t}' SELECT 9, value FROM range(0, 20)"),
                            1 => format!("DELETE FROM '{t}' WHERE i % 7 = {}", i % 7),
                            _ => format!("DELETE FROM '{t}' WHERE w = {}", i % 4),
                        };
                        if let Err(e) = rt().block_on(s.execute(&sql)) {
                            assert_eq!(e.kind(), ErrorKind::Conflict, "run {run}: {sql}: {e}");
                        }
                    }
                })
            };
            let restorer = {
                let (s, t) = (session.clone(), t.clone());
                scope.spawn(move || {
                    let mut committed = 0;
                    for i in 0..40u64 {
                        // A recent version: its removed files were tombstoned a moment ago.
                        let latest = rt()
                            .block_on(async { s.table(&t).unwrap().snapshot(None).await })
                            .map_or(1, |snap| snap.version);
                        let back = latest.saturating_sub(1 + i % 3).max(1);
                        let sql = format!("RESTORE TABLE '{t}' TO VERSION AS OF {back}");
                        match rt().block_on(s.execute(&sql)) {
                            Ok(_) => committed += 1,
                            // A race lost, a VACUUM still deleting, or files already gone.
                            Err(e) => assert!(
                                e.kind() == ErrorKind::Conflict
                                    || e.to_string().contains("no longer exists"),
                                "run {run}: {sql}: {e}"
                            ),
                        }
                    }
                    committed
                })
            };
            let vacuum = {
                let (s, t) = (session.clone(), t.clone());
                scope.spawn(move || {
                    for i in 0..30 {
                        let mode = if i % 2 == 0 { "LITE" } else { "FULL" };
                        let sql = format!("VACUUM '{t}' {mode} RETAIN 0 HOURS");
                        rt().block_on(s.execute(&sql)).unwrap();
                    }
                })
            };
            writer.join().unwrap();
            vacuum.join().unwrap();
            restorer.join().unwrap()
        });
        rt().block_on(async {
            session
                .execute(&format!("SELECT count(*) FROM '{t}'"))
                .await
                .unwrap_or_else(|e| panic!("run {run}: the latest version does not read: {e}"));
            let snap = crate::common::latest_snapshot(&t).await;
            for f in &snap.files {
                let path = dir.path().join("t").join(&f.path);
                assert!(
                    path.exists(),
                    "run {run}: {} is referenced but gone",
                    f.path
                );
                if let Some(dv) = &f.deletion_vector {
                    if let Ok(delta_rlc_protocol::dv::DvLocation::Relative { path, .. }) =
                        dv.location()
                    {
                        let p = snap.root.resolve(&path).unwrap();
                        assert!(
                            dir.path().join("t").join(&p).exists(),
                            "run {run}: deletion vector {p} is referenced but gone"
                        );
                    }
                }
            }
        });
        eprintln!("run {run}: {restored} RESTOREs committed");
    }
}

/// A file VACUUM deleted under a statement (a later version removed it; a retention shorter than
/// the statement) is a retryable error when the statement reads it from its version: kind
/// Conflict, "run it again". The twin: a file missing from the latest version itself stays
/// NotFound (a retry cannot help). The soak above met the first as a bare NotFound once.
#[test]
fn a_file_vacuumed_under_a_statement_is_a_retryable_error() {
    let (dir, t, session) = loose_table();
    rt().block_on(async {
        session
            .execute(&format!(
                "INSERT INTO '{t}' SELECT 1, value FROM range(0, 10)"
            ))
            .await
            .unwrap();
        let table = session.table(&t).unwrap();
        let old = table.snapshot(None).await.unwrap();
        let add = old.files.first().unwrap().clone();
        session
            .execute(&format!("DELETE FROM '{t}'"))
            .await
            .unwrap();
        session
            .execute(&format!("VACUUM '{t}' RETAIN 0 HOURS"))
            .await
            .unwrap();
        assert!(!dir.path().join("t").join(&add.path).exists());
        let opts = delta_rlc_engine::scan::FileReadOptions::default();
        let e = delta_rlc_engine::scan::read_file(&table.store, &old, &add, &opts)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        assert!(e.to_string().contains("VACUUM deleted it"), "{e}");

        session
            .execute(&format!(
                "INSERT INTO '{t}' SELECT 2, value FROM range(0, 10)"
            ))
            .await
            .unwrap();
        let latest = table.snapshot(None).await.unwrap();
        let live = latest.files.first().unwrap().clone();
        std::fs::remove_file(dir.path().join("t").join(&live.path)).unwrap();
        let e = delta_rlc_engine::scan::read_file(&table.store, &latest, &live, &opts)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    });
}

/// The same for a deletion vector a statement loads to match or rewrite rows (DELETE, UPDATE,
/// MERGE, OPTIMIZE load them through `scan::vanished::snapshot_dv`): a DV file that a later
/// version replaced and VACUUM deleted under the statement is a retryable conflict; a DV missing
/// from the latest version stays NotFound.
#[test]
fn a_deletion_vector_vacuumed_under_a_statement_is_a_retryable_error() {
    let (dir, t, session) = loose_table();
    rt().block_on(async {
        session
            .execute(&format!(
                "ALTER TABLE '{t}' SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
            ))
            .await
            .unwrap();
        session
            .execute(&format!(
                "INSERT INTO '{t}' SELECT 1, value FROM range(0, 10)"
            ))
            .await
            .unwrap();
        session
            .execute(&format!("DELETE FROM '{t}' WHERE i = 1"))
            .await
            .unwrap();
        let table = session.table(&t).unwrap();
        let old = table.snapshot(None).await.unwrap();
        let add = old.files.first().unwrap().clone();
        let dv = add.deletion_vector.clone().expect("the DELETE wrote a DV");
        session
            .execute(&format!("DELETE FROM '{t}' WHERE i = 2"))
            .await
            .unwrap();
        session
            .execute(&format!("VACUUM '{t}' RETAIN 0 HOURS"))
            .await
            .unwrap();
        let dv_file = dir.path().join("t").join(dv_path(&dv));
        assert!(!dv_file.exists(), "VACUUM deleted the replaced DV");
        let opts = delta_rlc_engine::scan::FileReadOptions::default();
        let rows: roaring::RoaringTreemap = (0..10u64).collect();
        let e =
            delta_rlc_engine::scan::read_file_rows(&table.store, &old, &add, &opts, &rows, None)
                .await
                .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        assert!(e.to_string().contains("the deletion vector of"), "{e}");

        let latest = table.snapshot(None).await.unwrap();
        let live = latest.files.first().unwrap().clone();
        let live_dv = live.deletion_vector.clone().unwrap();
        std::fs::remove_file(dir.path().join("t").join(dv_path(&live_dv))).unwrap();
        let e = delta_rlc_engine::scan::read_file_rows(
            &table.store,
            &latest,
            &live,
            &opts,
            &rows,
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    });
}

/// The table-relative file of a DV stored in a file of its own.
fn dv_path(dv: &delta_rlc_protocol::dv::DvDescriptor) -> String {
    match dv.location().unwrap() {
        delta_rlc_protocol::dv::DvLocation::Relative { path, .. } => path,
        other => panic!("a DV file expected, found {other:?}"),
    }
}
