//! Incremental snapshot loads (`DeltaTable::snapshot` replaying only the commits after the last
//! snapshot it loaded) equal full loads, across checkpoints, DML, metadata changes, and a table
//! deleted and re-created in place.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::{DeltaTable, Snapshot};

use crate::common::rt;

fn assert_same(a: &Snapshot, b: &Snapshot, what: &str) {
    assert_same_state(a, b, what);
    assert_eq!(
        a.checkpoint_version, b.checkpoint_version,
        "{what}: checkpoint"
    );
}

/// The same table state; the checkpoint each was built from may differ (a snapshot brought up to
/// date by reading commits keeps its own).
fn assert_same_state(a: &Snapshot, b: &Snapshot, what: &str) {
    assert_eq!(a.version, b.version, "{what}");
    assert_eq!(a.files, b.files, "{what}: files");
    assert_eq!(a.tombstones, b.tombstones, "{what}: tombstones");
    assert_eq!(a.txns, b.txns, "{what}: txns");
    assert_eq!(a.domains, b.domains, "{what}: domains");
    assert_eq!(a.protocol, b.protocol, "{what}: protocol");
    assert_eq!(a.metadata, b.metadata, "{what}: metadata");
    assert_eq!(a.schema, b.schema, "{what}: schema");
    assert_eq!(a.timestamp_ms, b.timestamp_ms, "{what}: timestamp");
}

#[test]
fn incremental_loads_equal_full_loads() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(31), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.checkpointInterval' = '4', \
             'delta.enableRowTracking' = 'true')",
        )
        .await
        .unwrap();
        let handle = DeltaTable::open(&loc).unwrap();
        let statements = [
            "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
            "INSERT INTO t VALUES (3, 'c')",
            "DELETE FROM t WHERE id = 2",
            "UPDATE t SET v = 'z' WHERE id = 1",
            "ALTER TABLE t ADD COLUMNS (w BIGINT)",
            "INSERT INTO t (id, v, w) VALUES (4, 'd', 40)",
            "OPTIMIZE t",
            "ALTER TABLE t SET TBLPROPERTIES ('owner' = 'me')",
            "DELETE FROM t WHERE id = 3",
            "INSERT INTO t (id, v) VALUES (5, 'e')",
        ];
        for (i, sql) in statements.iter().enumerate() {
            s.execute(sql).await.unwrap();
            // Every other statement: the handle skips one version, so it replays two commits.
            if i % 2 == 1 || i + 1 == statements.len() {
                let inc = handle.snapshot(None).await.unwrap();
                let full = Snapshot::load(&handle.store, None).await.unwrap();
                assert_same_state(&inc, &full, sql);
            }
        }
        // Re-created in place with as many versions: the cached state must not be reused.
        let before = handle.snapshot(None).await.unwrap();
        std::fs::remove_dir_all(dir.path().join("t")).unwrap();
        s.execute("CREATE TABLE t (id BIGINT, v STRING)")
            .await
            .unwrap();
        for i in 0..(before.version + 1) {
            s.execute(&format!("INSERT INTO t VALUES ({i}, 'new')"))
                .await
                .unwrap();
        }
        let inc = handle.snapshot(None).await.unwrap();
        let full = Snapshot::load(&handle.store, None).await.unwrap();
        assert!(inc.version > before.version);
        assert_same_state(&inc, &full, "re-created table");
        assert_ne!(inc.metadata.id, before.metadata.id);
    });
}

/// A load that lists only the log after a checkpoint it knows of (`_last_checkpoint`, or the
/// checkpoint of the snapshot it updates) takes exactly the segment a whole listing gives, and
/// declines — falling back to the whole listing — whenever the tail holds no usable checkpoint: a
/// hint above the latest version, above a time-travel target, or naming a checkpoint since deleted.
#[test]
fn loads_from_a_checkpoint_hint_equal_whole_listings() {
    use delta_rlc_engine::snapshot::{build_segment, list_log, segment_after};
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(32), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '4')")
            .await
            .unwrap();
        for i in 0..14 {
            s.execute(&format!("INSERT INTO t VALUES ({i})"))
                .await
                .unwrap();
        }
        let table = DeltaTable::open_existing(&loc).unwrap();
        let whole = list_log(&table.store).await.unwrap();
        for (start, version, accepted) in [
            (0, None, true),
            (3, None, true),
            (8, None, true),
            (12, None, true),
            (13, None, false),
            (99, None, false),
            (4, Some(10), true),
            (12, Some(10), false),
        ] {
            let got = segment_after(&table.store, start, version).await.unwrap();
            assert_eq!(
                got.is_some(),
                accepted,
                "start {start}, version {version:?}"
            );
            if let Some(got) = got {
                let want = build_segment(&whole, version).unwrap();
                assert_eq!(got.version, want.version);
                assert_eq!(got.checkpoint, want.checkpoint, "start {start}");
                assert_eq!(got.commits, want.commits, "start {start}");
            }
        }
        let reference = Snapshot::from_segment(&table.store, &build_segment(&whole, None).unwrap())
            .await
            .unwrap();
        assert_eq!(reference.checkpoint_version, Some(12));
        let log = dir.path().join("t/_delta_log");
        for hint in [
            r#"{"version": 99, "size": 1}"#,
            "not json",
            r#"{"version": 4}"#,
        ] {
            std::fs::write(log.join("_last_checkpoint"), hint).unwrap();
            let fresh = DeltaTable::open_existing(&loc).unwrap();
            assert_same(&fresh.snapshot(None).await.unwrap(), &reference, hint);
        }
        // The hinted checkpoint is gone: the whole listing finds the one before it.
        std::fs::write(log.join("_last_checkpoint"), r#"{"version": 12}"#).unwrap();
        std::fs::remove_file(log.join("00000000000000000012.checkpoint.parquet")).unwrap();
        let fresh = DeltaTable::open_existing(&loc).unwrap();
        let snap = fresh.snapshot(None).await.unwrap();
        assert_eq!(snap.checkpoint_version, Some(8));
        assert_eq!((snap.version, snap.files.len()), (14, 14));
    });
}

/// A held latest snapshot is brought up to date by reading the commits after it in turn (no
/// listing), across a checkpoint, to the same state a full load gives; and the probe declines —
/// leaving the update to a listing — when a commit changes the metadata, when the held state is
/// older than a transaction may live, and when the table was re-created in place.
#[test]
fn a_held_snapshot_is_brought_up_to_date_by_reading_the_commits_after_it() {
    use delta_rlc_engine::snapshot::probe::probe_latest;
    const HOUR_MS: i64 = 3600 * 1000;
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(33), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '3')")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (0)").await.unwrap();
        let store = DeltaTable::open_existing(&loc).unwrap().store;
        let held = Snapshot::load(&store, None).await.unwrap();
        for i in 1..6 {
            s.execute(&format!("INSERT INTO t VALUES ({i})"))
                .await
                .unwrap();
        }
        s.execute("DELETE FROM t WHERE id = 2").await.unwrap();
        let full = Snapshot::load(&store, None).await.unwrap();
        assert_eq!(full.checkpoint_version, Some(6));
        let probed = probe_latest(&store, &held, HOUR_MS)
            .await
            .unwrap()
            .expect("the default retention lets the probe update");
        assert_same_state(&probed, &full, "probed");
        assert_eq!(probed.checkpoint_version, held.checkpoint_version);
        // Nothing newer: the same state back.
        let again = probe_latest(&store, &probed, 0).await.unwrap().unwrap();
        assert_eq!(again.version, full.version);
        // Held for longer than a transaction may stay open: a missing version could be one
        // cleaned up, so no probe.
        let old = delta_rlc_engine::vacuum::MAX_TRANSACTION_MS + 1;
        assert!(probe_latest(&store, &held, old).await.unwrap().is_none());
        // A metadata change after the held version: no probe.
        s.execute("ALTER TABLE t SET TBLPROPERTIES ('owner' = 'me')")
            .await
            .unwrap();
        assert!(probe_latest(&store, &full, 0).await.unwrap().is_none());
        // Re-created in place with more versions: the held version's commit is another file.
        let before = Snapshot::load(&store, None).await.unwrap();
        std::fs::remove_dir_all(dir.path().join("t")).unwrap();
        s.execute("CREATE TABLE t (id BIGINT)").await.unwrap();
        for i in 0..(before.version + 2) {
            s.execute(&format!("INSERT INTO t VALUES ({i})"))
                .await
                .unwrap();
        }
        assert!(probe_latest(&store, &before, 0).await.unwrap().is_none());
    });
}

/// The twin of the probe: with a log retention shorter than a transaction may live, a missing
/// commit after the held version may have been cleaned up (here it is gone while later versions
/// and their checkpoint exist), so the probe declines and the update lists — and finds the
/// latest version, not the stale one a probe would stop at.
#[test]
fn a_table_with_short_log_retention_is_listed_not_probed() {
    use delta_rlc_engine::snapshot::probe::probe_latest;
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(34), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '4', \
             'delta.logRetentionDuration' = 'interval 1 hours')",
        )
        .await
        .unwrap();
        s.execute("INSERT INTO t VALUES (0)").await.unwrap();
        let handle = DeltaTable::open_existing(&loc).unwrap();
        let held = handle.snapshot(None).await.unwrap();
        assert_eq!(held.version, 1);
        for i in 1..5 {
            s.execute(&format!("INSERT INTO t VALUES ({i})"))
                .await
                .unwrap();
        }
        let log = dir.path().join("t/_delta_log");
        std::fs::remove_file(log.join("00000000000000000002.json")).unwrap();
        assert!(probe_latest(&handle.store, &held, 0)
            .await
            .unwrap()
            .is_none());
        let snap = handle.snapshot(None).await.unwrap();
        assert_eq!((snap.version, snap.files.len()), (5, 5));
    });
}

/// A snapshot older than a new checkpoint is brought up to date by replaying the listed commits
/// after it, across the checkpoint, without reading the checkpoint (here made unreadable after
/// the reference load): the same state a full load gave, recorded as built on the new checkpoint
/// so later listings start there. The twin: with a commit after the held version cleaned up, the
/// update cannot replay and must read the checkpoint (and so fails on the unreadable one).
#[test]
fn a_held_snapshot_is_replayed_across_a_newer_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(35), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '3')")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (0), (1)").await.unwrap();
        let store = DeltaTable::open_existing(&loc).unwrap().store;
        let held = Snapshot::load(&store, None).await.unwrap();
        assert_eq!((held.version, held.checkpoint_version), (1, None));
        s.execute("DELETE FROM t WHERE id = 1").await.unwrap();
        s.execute("INSERT INTO t VALUES (2)").await.unwrap();
        s.execute("INSERT INTO t VALUES (3)").await.unwrap();
        let full = Snapshot::load(&store, None).await.unwrap();
        assert_eq!((full.version, full.checkpoint_version), (4, Some(3)));
        assert!(
            !full.tombstones.is_empty(),
            "the DELETE's remove is a tombstone"
        );
        let log = dir.path().join("t/_delta_log");
        std::fs::write(
            log.join("00000000000000000003.checkpoint.parquet"),
            b"not parquet",
        )
        .unwrap();
        let replayed = Snapshot::load_after(&store, &held, None).await.unwrap();
        assert_same(&replayed, &full, "replayed across the checkpoint");
        assert!(Snapshot::load(&store, None).await.is_err());
        std::fs::remove_file(log.join("00000000000000000002.json")).unwrap();
        assert!(Snapshot::load_after(&store, &held, None).await.is_err());
    });
}

fn copy_data_files(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "_delta_log" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_data_files(&e.path(), &to.join(&name));
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

/// A log compaction replayed in place of its commits reaches the state those commits reach: the
/// table rebuilt from commit 0, the compaction of 1..=6 as its commit 1 and commit 7 as its commit
/// 2 holds the same files (DVs of one file replaced twice, a file removed), tombstones, row
/// tracking domain, protocol, metadata and rows as the original at 7.
#[test]
fn a_log_compaction_replays_to_the_state_of_its_commits() {
    use delta_rlc_engine::write::log_compaction::write_log_compaction;
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(32), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        for sql in [
            "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES \
             ('delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')",
            "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
            "INSERT INTO t VALUES (4, 'd')",
            "DELETE FROM t WHERE id = 2",
            "DELETE FROM t WHERE id = 3",
            "DELETE FROM t WHERE id = 4",
            "ALTER TABLE t SET TBLPROPERTIES ('owner' = 'me')",
            "INSERT INTO t VALUES (5, 'e')",
        ] {
            s.execute(sql).await.unwrap();
        }
        let handle = DeltaTable::open(&loc).unwrap();
        let snap = handle.snapshot(None).await.unwrap();
        assert_eq!(snap.version, 7);
        for (start, end, why) in [
            (3, 3, "must be below"),
            (4, 2, "must be below"),
            (1, 8, "does not exist"),
        ] {
            let e = write_log_compaction(&handle.store, &snap, start, end)
                .await
                .unwrap_err();
            assert!(e.to_string().contains(why), "{start}..{end}: {e}");
        }
        let path = write_log_compaction(&handle.store, &snap, 1, 6)
            .await
            .unwrap();
        assert_eq!(
            path,
            "_delta_log/00000000000000000001.00000000000000000006.compacted.json"
        );
        let log = dir.path().join("t").join("_delta_log");
        let compacted = std::fs::read(dir.path().join("t").join(&path)).unwrap();
        let text = String::from_utf8(compacted.clone()).unwrap();
        assert!(!text.contains("commitInfo"), "{text}");
        // The DV file ids of the three DELETEs: one add stands for the first file, the second
        // file (id 4, all rows deleted) is one remove.
        assert_eq!(
            text.lines().filter(|l| l.starts_with("{\"add\"")).count(),
            1,
            "{text}"
        );

        let copy = dir.path().join("c");
        copy_data_files(&dir.path().join("t"), &copy);
        let copy_log = copy.join("_delta_log");
        std::fs::create_dir_all(&copy_log).unwrap();
        let name = |v: u64| format!("{v:020}.json");
        std::fs::copy(log.join(name(0)), copy_log.join(name(0))).unwrap();
        std::fs::write(copy_log.join(name(1)), &compacted).unwrap();
        std::fs::copy(log.join(name(7)), copy_log.join(name(2))).unwrap();
        let rebuilt = DeltaTable::open(&copy.display().to_string())
            .unwrap()
            .snapshot(None)
            .await
            .unwrap();
        assert_eq!(rebuilt.version, 2);
        assert_eq!(rebuilt.files, snap.files, "files");
        assert_eq!(rebuilt.tombstones, snap.tombstones, "tombstones");
        assert_eq!(rebuilt.domains, snap.domains, "domains");
        assert_eq!(rebuilt.txns, snap.txns, "txns");
        assert_eq!(rebuilt.protocol, snap.protocol, "protocol");
        assert_eq!(rebuilt.metadata, snap.metadata, "metadata");
        let mut c = SqlSession::new(Env::deterministic(33), ConflictConfig::default());
        c.register("c", &copy.display().to_string());
        let out = c.execute("SELECT count(*), sum(id) FROM c").await.unwrap();
        assert_eq!(
            crate::common::sorted_rows(&out.batches),
            vec!["2|6".to_string()]
        );
    });
}

/// Log cleanup deletes a compaction that starts at or before the checkpoint it keeps (a reader
/// starting there never uses it) with the commits before that checkpoint, and the table reads as
/// before; a compaction after the checkpoint stays.
#[test]
fn log_cleanup_deletes_compactions_a_kept_checkpoint_covers() {
    use delta_rlc_engine::write::log_compaction::write_log_compaction;
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(34), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT)").await.unwrap();
        for i in 1..=6 {
            s.execute(&format!("INSERT INTO t VALUES ({i})"))
                .await
                .unwrap();
        }
        let handle = DeltaTable::open(&loc).unwrap();
        let at3 = handle.snapshot(Some(3)).await.unwrap();
        delta_rlc_engine::write::checkpoint::write_checkpoint(&handle.store, &at3, 0)
            .await
            .unwrap();
        let latest = handle.snapshot(None).await.unwrap();
        for (a, b) in [(1, 2), (3, 4), (4, 6)] {
            write_log_compaction(&handle.store, &latest, a, b)
                .await
                .unwrap();
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let forty_days = 40 * 24 * 3600 * 1000;
        let deleted = delta_rlc_engine::vacuum::cleanup_expired_logs(&handle, now + forty_days)
            .await
            .unwrap();
        let mut names: Vec<&str> = deleted
            .iter()
            .map(|p| p.rsplit('/').next().unwrap_or(p))
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                "00000000000000000000.json",
                "00000000000000000001.00000000000000000002.compacted.json",
                "00000000000000000001.json",
                "00000000000000000002.json",
                "00000000000000000003.00000000000000000004.compacted.json",
            ]
        );
        assert!(dir
            .path()
            .join("t/_delta_log/00000000000000000004.00000000000000000006.compacted.json")
            .exists());
        let out = s.execute("SELECT count(*), sum(id) FROM t").await.unwrap();
        assert_eq!(
            crate::common::sorted_rows(&out.batches),
            vec!["6|21".to_string()]
        );
    });
}
