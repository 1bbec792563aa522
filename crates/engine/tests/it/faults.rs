//! The commit loop under storage faults: a landed put whose response is lost is recognised as ours
//! and not applied twice; a put that failed before landing is retried; a lost race goes through the
//! checks; a torn winning commit is reported, never skipped.

use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use delta_rlc_engine::env::Env;
use delta_rlc_engine::ops::{create_table_txn, insert_txn, CreateTableSpec, InsertMode};
use delta_rlc_engine::{DeltaTable, ErrorKind, Transaction};
use delta_rlc_protocol::schema::{DataType as DT, PrimitiveType, StructField, StructType};
use delta_rlc_storage::fault::{Fault, FaultyStore};
use delta_rlc_storage::object_store::memory::InMemory;
use delta_rlc_storage::TableStore;

use crate::common::rt;

fn faulty_table(name: &str) -> (DeltaTable, Arc<FaultyStore>) {
    let faulty = Arc::new(FaultyStore::new(Arc::new(InMemory::new())));
    let store = TableStore::from_object_store(faulty.clone(), &format!("memory://{name}/t"), "t");
    let table = DeltaTable {
        store,
        env: Env::deterministic(9),
        conflict: Default::default(),
        latest: Default::default(),
        parquet: None,
    };
    (table, faulty)
}

fn rows(v: &[i64]) -> Vec<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    vec![RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(v.to_vec()))]).unwrap()]
}

async fn create(table: &DeltaTable) {
    create_with(table, Default::default()).await
}

async fn create_with(table: &DeltaTable, properties: std::collections::BTreeMap<String, String>) {
    let spec = CreateTableSpec {
        properties,
        schema: StructType {
            fields: vec![StructField {
                name: "id".into(),
                data_type: DT::Primitive(PrimitiveType::Long),
                nullable: true,
                metadata: Default::default(),
            }],
        },
        ..Default::default()
    };
    create_table_txn(table, &spec)
        .await
        .unwrap()
        .commit()
        .await
        .unwrap();
}

async fn append(table: &DeltaTable, v: &[i64]) -> Transaction {
    let snap = table.snapshot(None).await.unwrap();
    insert_txn(
        Transaction::new(table, Some(snap), delta_rlc_engine::txn::Operation::Write),
        &rows(v),
        InsertMode::Append,
    )
    .await
    .unwrap()
}

async fn count_commits_with(table: &DeltaTable, txn_id: &str) -> usize {
    let mut n = 0;
    for o in table.store.list_dir("_delta_log").await.unwrap() {
        if o.path.ends_with(".json") {
            let text = String::from_utf8(table.store.get(&o.path).await.unwrap().to_vec()).unwrap();
            n += text.matches(txn_id).count();
        }
    }
    n
}

#[test]
fn lost_response_is_recognised_as_our_commit() {
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-lost");
        create(&table).await;
        let txn = append(&table, &[1, 2]).await;
        let id = txn.txn_id.to_string();
        faulty.arm("00000000000000000001.json", Fault::LoseResponse);
        let r = txn.commit().await.unwrap();
        assert_eq!(r.version, Some(1));
        assert_eq!(faulty.fired().len(), 1);
        assert_eq!(
            count_commits_with(&table, &id).await,
            1,
            "committed exactly once"
        );
        let snap = table.snapshot(None).await.unwrap();
        assert_eq!((snap.version, snap.files.len()), (1, 1));
    });
}

#[test]
fn failed_put_is_retried_at_the_same_version() {
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-fail");
        create(&table).await;
        let txn = append(&table, &[1]).await;
        faulty.arm("00000000000000000001.json", Fault::FailBeforeLanding);
        let r = txn.commit().await.unwrap();
        assert_eq!(r.version, Some(1));
        assert_eq!(table.snapshot(None).await.unwrap().files.len(), 1);
    });
}

#[test]
fn lost_race_goes_through_the_checks_and_rebases() {
    rt().block_on(async {
        let (table, _) = faulty_table("fault-race");
        create(&table).await;
        let a = append(&table, &[1]).await;
        let b = append(&table, &[2]).await;
        assert_eq!(b.commit().await.unwrap().version, Some(1));
        let r = a.commit().await.unwrap();
        assert_eq!((r.version, r.attempts), (Some(2), 2));
        assert_eq!(table.snapshot(None).await.unwrap().files.len(), 2);
    });
}

#[test]
fn torn_winning_commit_is_reported_not_skipped() {
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-torn");
        create(&table).await;
        let a = append(&table, &[1]).await;
        let b = append(&table, &[2]).await;
        faulty.arm("00000000000000000001.json", Fault::Torn);
        b.commit().await.unwrap();
        let e = a.commit().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptTable, "{e}");
        assert!(e.to_string().contains("commit 1"), "{e}");
        let e = table.snapshot(None).await.unwrap_err();
        assert!(e.to_string().contains("commit 1"), "{e}");
    });
}

#[test]
fn a_listing_that_missed_a_commit_is_taken_again() {
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-listing");
        create(&table).await;
        append(&table, &[1]).await.commit().await.unwrap();
        append(&table, &[2]).await.commit().await.unwrap();
        // The listing races the creation of version 1: it sees 0 and 2 but not 1.
        faulty.hide_from_next_listing("00000000000000000001.json");
        let snap = table.snapshot(None).await.unwrap();
        assert_eq!((snap.version, snap.files.len()), (2, 2));
        // A real gap persists across listings and is reported.
        table
            .store
            .delete("_delta_log/00000000000000000001.json")
            .await
            .unwrap();
        let e = table.snapshot(None).await.unwrap_err();
        assert!(e.to_string().contains("missing version 1"), "{e}");
    });
}

fn count(requests: &std::collections::BTreeMap<&'static str, u64>, kind: &str) -> u64 {
    requests.get(kind).copied().unwrap_or(0)
}

#[test]
fn a_conflict_free_commit_costs_one_put_and_a_retry_one_round_of_gets() {
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-requests");
        create(&table).await;
        // Prepared (data file written) at version 0; nothing else committed since.
        let txn = append(&table, &[1]).await;
        faulty.take_requests();
        assert_eq!(txn.commit().await.unwrap().version, Some(1));
        let r = faulty.take_requests();
        assert_eq!(
            (count(&r, "PUT"), count(&r, "GET"), count(&r, "LIST")),
            (1, 0, 0),
            "{r:?}"
        );
        // Three winners land between this writer's read and its commit.
        let late = append(&table, &[2]).await;
        for v in 10..13 {
            append(&table, &[v]).await.commit().await.unwrap();
        }
        faulty.take_requests();
        assert_eq!(late.commit().await.unwrap().version, Some(5));
        let r = faulty.take_requests();
        // The refused put; one window of four versions from the lost one fetched together (the
        // three winners and the first version not yet written), no listing; the put. (On a local
        // disk the winners are probed in turn; with a short log retention the log is listed: the
        // twins below.)
        assert_eq!(
            (count(&r, "PUT"), count(&r, "LIST"), count(&r, "GET")),
            (2, 0, 4),
            "{r:?}"
        );
        let snap = table.snapshot(None).await.unwrap();
        assert_eq!(
            (snap.version, snap.files.len()),
            (5, 5),
            "every row committed once"
        );
    });
}

/// On a local disk a listing reads every name in `_delta_log`, so a lost race reads the winners in
/// turn until the first version not yet written: no listing, one read per winner and one of the
/// missing version (counted by the statement meter, as a local store has no request hook).
#[test]
fn a_retry_on_a_local_disk_reads_the_winners_in_turn() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = TableStore::open(dir.path().to_str().unwrap()).unwrap();
        let table = DeltaTable {
            store,
            env: Env::deterministic(9),
            conflict: Default::default(),
            latest: Default::default(),
            parquet: None,
        };
        create(&table).await;
        let (metered, meter) = table.store.metered();
        let late_table = DeltaTable {
            store: metered,
            ..table.clone()
        };
        let snap = late_table.snapshot(None).await.unwrap();
        let late = insert_txn(
            Transaction::new(
                &late_table,
                Some(snap),
                delta_rlc_engine::txn::Operation::Write,
            ),
            &rows(&[2]),
            InsertMode::Append,
        )
        .await
        .unwrap();
        for v in 10..13 {
            append(&table, &[v]).await.commit().await.unwrap();
        }
        let before = meter.counts();
        assert_eq!(late.commit().await.unwrap().version, Some(4));
        let after = meter.counts();
        assert_eq!(
            (
                after.put - before.put,
                after.list - before.list,
                after.get - before.get
            ),
            (2, 0, 4),
            "{after:?}"
        );
    });
}

/// The twin of the probe above: with a log retention shorter than a transaction may live, a
/// missing version could be one cleaned up rather than one not yet written, so the retry lists
/// (on a local disk too).
#[test]
fn a_retry_on_a_table_with_short_log_retention_lists_the_log() {
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-requests-short-retention");
        create_with(
            &table,
            [(
                "delta.logRetentionDuration".to_string(),
                "interval 1 hours".to_string(),
            )]
            .into(),
        )
        .await;
        let late = append(&table, &[2]).await;
        for v in 10..13 {
            append(&table, &[v]).await.commit().await.unwrap();
        }
        faulty.take_requests();
        assert_eq!(late.commit().await.unwrap().version, Some(4));
        let r = faulty.take_requests();
        // The listing comes before the first put (a version after the read may have been
        // cleaned up, so a put could succeed where it must not): no refused put.
        assert_eq!(
            (count(&r, "PUT"), count(&r, "LIST"), count(&r, "GET")),
            (1, 1, 3),
            "{r:?}"
        );
        assert_eq!(table.snapshot(None).await.unwrap().files.len(), 4);
    });
}

/// The probe's other twin: a transaction whose read version was committed over an hour before it
/// commits (a handle pinned with `at_version`, a long statement) lists the log, since versions
/// after its read may be old enough for cleanup; the same transaction half an hour after its read
/// still probes. The read version's time is its commit's `timestamp` (the writer's clock).
#[test]
fn a_retry_from_a_read_version_over_an_hour_old_lists_the_log() {
    rt().block_on(async {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        // (name, minutes later, puts, listings, gets): the old read lists before its first put.
        for (name, minutes_later, puts, listings, gets) in [
            ("fault-requests-old-read", 120, 1, 1, 3),
            ("fault-requests-recent-read", 30, 2, 0, 4),
        ] {
            let (table, faulty) = faulty_table(name);
            // Each handle its own id seed: the same seed would name two files alike.
            let at = |ms: i64, seed: u64| Env {
                clock: Arc::new(delta_rlc_engine::env::ManualClock::new(ms, 1)),
                ..Env::deterministic(seed)
            };
            // The writers' clock is now; the late transaction commits `minutes_later`.
            let table = DeltaTable {
                env: at(now_ms, 9),
                ..table
            };
            create(&table).await;
            let later = DeltaTable {
                env: at(now_ms + minutes_later * 60_000, 11),
                ..table.clone()
            };
            let late = append(&later, &[2]).await;
            for v in 10..13 {
                append(&table, &[v]).await.commit().await.unwrap();
            }
            faulty.take_requests();
            assert_eq!(late.commit().await.unwrap().version, Some(4), "{name}");
            let r = faulty.take_requests();
            assert_eq!(
                (count(&r, "PUT"), count(&r, "LIST"), count(&r, "GET")),
                (puts, listings, gets),
                "{name}: {r:?}"
            );
            let snap = table.snapshot(None).await.unwrap();
            assert_eq!((snap.version, snap.files.len()), (4, 4), "{name}");
        }
    });
}

#[test]
fn throttled_reads_are_retried_and_a_lasting_outage_fails_cleanly() {
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-throttle");
        create(&table).await;
        faulty.throttle_next(3);
        let txn = append(&table, &[1, 2]).await;
        assert_eq!(txn.commit().await.unwrap().version, Some(1));
        assert_eq!(faulty.transient_faults_fired().0, 3);
        // More failures in a row than the store's four tries: the statement fails as retryable
        // and commits nothing.
        let before = table.snapshot(None).await.unwrap().version;
        let fresh = DeltaTable {
            store: table.store.clone(),
            env: Env::deterministic(10),
            conflict: Default::default(),
            latest: Default::default(),
            parquet: None,
        };
        faulty.throttle_next(4);
        let err = fresh.snapshot(None).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
        assert_eq!(fresh.snapshot(None).await.unwrap().version, before);
    });
}

#[test]
fn a_lagging_listing_gives_an_older_snapshot_and_the_commit_still_lands_once() {
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-lag");
        create(&table).await;
        for v in 1..4 {
            append(&table, &[v]).await.commit().await.unwrap();
        }
        let reader = DeltaTable {
            store: table.store.clone(),
            env: Env::deterministic(11),
            conflict: Default::default(),
            latest: Default::default(),
            parquet: None,
        };
        faulty.lag_next_log_listing(2);
        // The reader sees version 1 (two newest commits missing) and commits an append from it.
        let snap = reader.snapshot(None).await.unwrap();
        assert_eq!(snap.version, 1);
        let txn = insert_txn(
            Transaction::new(&reader, Some(snap), delta_rlc_engine::txn::Operation::Write),
            &rows(&[99]),
            InsertMode::Append,
        )
        .await
        .unwrap();
        let id = txn.txn_id.to_string();
        assert_eq!(txn.commit().await.unwrap().version, Some(4));
        assert_eq!(count_commits_with(&table, &id).await, 1);
        let snap = table.snapshot(None).await.unwrap();
        assert_eq!((snap.version, snap.files.len()), (4, 4));
    });
}

#[test]
fn concurrent_writers_on_a_slow_throttling_store_lose_nothing() {
    // Throttle bursts armed by four writers overlap, so a request can exhaust the store layer's
    // retries: the statement then fails with a retryable kind, and a writer that retries it the
    // way a job should (keyed by an app transaction id, so a retry after an unknown outcome does
    // not append twice) lands every append exactly once.
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-slow");
        create(&table).await;
        faulty.set_latency(std::time::Duration::from_millis(2));
        let writers = 4;
        let per_writer = 8i64;
        let mut tasks = Vec::new();
        for w in 0..writers {
            let handle = DeltaTable {
                store: table.store.clone(),
                env: Env::deterministic(100 + w as u64),
                conflict: Default::default(),
                latest: Default::default(),
                parquet: None,
            };
            let faulty = faulty.clone();
            tasks.push(tokio::spawn(async move {
                let app_id = format!("writer-{w}");
                let mut failures = 0;
                for i in 0..per_writer {
                    if i % 3 == 0 {
                        faulty.throttle_next(2);
                    }
                    loop {
                        match append_once(&handle, &app_id, w * 1000 + i, i).await {
                            Ok(()) => break,
                            Err(e) if e.kind().is_retryable() && failures < 20 => failures += 1,
                            Err(e) => panic!("writer {w} append {i}: {e}"),
                        }
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        faulty.set_latency(std::time::Duration::ZERO);
        let snap = table.snapshot(None).await.unwrap();
        assert_eq!(
            snap.version as i64,
            writers * per_writer,
            "one version per append"
        );
        assert_eq!(snap.files.len() as i64, writers * per_writer);
        for w in 0..writers {
            assert_eq!(snap.txns[&format!("writer-{w}")].version, per_writer - 1);
        }
        assert!(faulty.transient_faults_fired().0 > 0);
    });
}

/// Appends `id` as app transaction (`app_id`, `seq`) unless that transaction already landed.
async fn append_once(
    handle: &DeltaTable,
    app_id: &str,
    id: i64,
    seq: i64,
) -> Result<(), delta_rlc_engine::EngineError> {
    let snap = handle.snapshot(None).await?;
    if snap.txns.get(app_id).is_some_and(|t| t.version >= seq) {
        return Ok(());
    }
    let mut txn = insert_txn(
        Transaction::new(handle, Some(snap), delta_rlc_engine::txn::Operation::Write),
        &rows(&[id]),
        InsertMode::Append,
    )
    .await?;
    txn.actions.push(delta_rlc_protocol::actions::Action::Txn(
        delta_rlc_protocol::actions::Txn {
            app_id: app_id.to_string(),
            version: seq,
            last_updated: None,
        },
    ));
    txn.commit().await?;
    Ok(())
}

#[test]
fn a_sql_session_reads_only_the_commits_since_its_last_statement() {
    rt().block_on(async {
        use delta_rlc_engine::sql::SqlSession;
        let faulty = Arc::new(FaultyStore::new(Arc::new(InMemory::new())));
        let loc = "memory://fault-session/t";
        let mut session = SqlSession::new(Env::deterministic(3), Default::default());
        session.use_store(loc, TableStore::from_object_store(faulty.clone(), loc, "t"));
        session.register("t", loc);
        session.execute("CREATE TABLE t (id BIGINT)").await.unwrap();
        for i in 0..5 {
            session
                .execute(&format!("INSERT INTO t VALUES ({i})"))
                .await
                .unwrap();
        }
        faulty.take_requests();
        session.execute("INSERT INTO t VALUES (99)").await.unwrap();
        let r = faulty.take_requests();
        // The session holds the table as the previous INSERT committed it, so no commit is read
        // (a fresh handle reads 6).
        assert_eq!(count(&r, "GET"), 0, "{r:?}");
        assert_eq!(count(&r, "PUT"), 2, "{r:?}");
        // A commit by another handle is replayed onto the session's snapshot.
        let other = DeltaTable {
            store: TableStore::from_object_store(faulty.clone(), loc, "t"),
            env: Env::deterministic(4),
            conflict: Default::default(),
            latest: Default::default(),
            parquet: None,
        };
        append(&other, &[7]).await.commit().await.unwrap();
        let out = session
            .execute("SELECT count(*) AS n FROM t")
            .await
            .unwrap();
        let n = out.batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0);
        assert_eq!(n, 7);
        // A query of an unchanged table: one listing (existence and snapshot together) and no
        // read of the log.
        faulty.take_requests();
        session.execute("SELECT count(*) FROM t").await.unwrap();
        let r = faulty.take_requests();
        assert_eq!((count(&r, "LIST"), count(&r, "GET")), (1, 0), "{r:?}");
        // A query of a location without a table is still "not a table", and creates nothing.
        let err = session
            .execute("SELECT * FROM 'memory://fault-session/none'")
            .await
            .expect_err("no table");
        assert_eq!(err.kind(), delta_rlc_engine::ErrorKind::NotFound, "{err}");
    });
}

/// A statement's new DV file uploads in the background while it goes on; the commit waits for it.
/// An upload that fails (every retry refused) fails the statement: nothing is committed and the
/// rows are unchanged — a commit never names a DV file that is not there.
#[test]
fn a_failed_background_dv_upload_fails_the_statement_and_commits_nothing() {
    use datafusion::prelude::{col, lit};
    rt().block_on(async {
        let (table, faulty) = faulty_table("fault-dv-upload");
        create_with(
            &table,
            [(
                "delta.enableDeletionVectors".to_string(),
                "true".to_string(),
            )]
            .into(),
        )
        .await;
        append(&table, &[1, 2, 3]).await.commit().await.unwrap();
        // More failures than the store's retries of an overwriting put.
        for _ in 0..8 {
            faulty.arm(".bin", Fault::FailBeforeLanding);
        }
        let snap = table.snapshot(None).await.unwrap();
        let txn = Transaction::new(&table, Some(snap), delta_rlc_engine::txn::Operation::Delete);
        let txn = delta_rlc_engine::ops::delete::delete_txn(txn, Some(col("id").eq(lit(2i64))))
            .await
            .unwrap();
        let e = txn.commit().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
        let after = table.snapshot(None).await.unwrap();
        assert_eq!(after.version, 1, "nothing committed");
        assert_eq!(after.files.len(), 1);
        assert!(
            after.files.iter().all(|f| f.deletion_vector.is_none()),
            "no file names the DV that failed to upload"
        );
        assert!(faulty.fired().iter().any(|(p, _)| p.ends_with(".bin")));
    });
}

/// A lost race whose DV merge writes the loser's merged DV: that file uploads in the background
/// while later winners are checked, and the commit waits for it before its put. An upload that
/// fails (every retry refused) fails the statement: nothing is committed, and the rows are the
/// winner's. The twin (no fault): the same race commits, merged, with both deletions.
#[test]
fn a_failed_upload_of_a_merged_dv_fails_the_commit_and_commits_nothing() {
    use datafusion::prelude::{col, lit};
    async fn race(name: &str, fail_upload: bool) {
        let (table, faulty) = faulty_table(name);
        create_with(
            &table,
            [(
                "delta.enableDeletionVectors".to_string(),
                "true".to_string(),
            )]
            .into(),
        )
        .await;
        append(&table, &[1, 2, 3, 4]).await.commit().await.unwrap();
        // The loser: a statement's store, whose cache serves the merged DV while it uploads.
        let mut loser_table = table.clone();
        loser_table.latest = Default::default();
        loser_table.store = table.store.metered().0;
        let snap = loser_table.snapshot(None).await.unwrap();
        let loser = Transaction::new(
            &loser_table,
            Some(snap),
            delta_rlc_engine::txn::Operation::Delete,
        );
        let loser = delta_rlc_engine::ops::delete::delete_txn(loser, Some(col("id").eq(lit(2i64))))
            .await
            .unwrap();
        // Its own DV file lands before any fault is armed.
        loser.uploads.finish().await.unwrap();
        let snap = table.snapshot(None).await.unwrap();
        let winner = Transaction::new(&table, Some(snap), delta_rlc_engine::txn::Operation::Delete);
        delta_rlc_engine::ops::delete::delete_txn(winner, Some(col("id").eq(lit(3i64))))
            .await
            .unwrap()
            .commit()
            .await
            .unwrap();
        if fail_upload {
            // More failures than the store's retries of an overwriting put.
            for _ in 0..8 {
                faulty.arm(".bin", Fault::FailBeforeLanding);
            }
        }
        let outcome = loser.commit().await;
        let after = table.snapshot(None).await.unwrap();
        let mut ids = Vec::new();
        for add in &after.files {
            let opts = delta_rlc_engine::scan::FileReadOptions::default();
            let batches = delta_rlc_engine::scan::read_file(&table.store, &after, add, &opts)
                .await
                .unwrap();
            for batch in batches {
                let a = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap();
                ids.extend(a.iter().flatten());
            }
        }
        ids.sort_unstable();
        if fail_upload {
            let e = outcome.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
            assert_eq!(after.version, 2, "only the winner committed");
            assert_eq!(ids, vec![1, 2, 4]);
            assert!(faulty.fired().iter().any(|(p, _)| p.ends_with(".bin")));
        } else {
            let r = outcome.unwrap();
            assert_eq!(r.version, Some(3));
            assert!(r
                .events
                .iter()
                .any(|e| e.name == "delta.rowLevelConcurrency.deletionVectorsMerged"));
            assert_eq!(ids, vec![1, 4]);
        }
    }
    rt().block_on(async {
        race("fault-merged-dv", true).await;
        race("fault-merged-dv-twin", false).await;
    });
}
