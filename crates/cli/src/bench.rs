//! `delta-rlc-dev bench …`: in-process measurements the benchmark orchestrator (scripts/bench.py)
//! cannot take from outside, and the per-writer loop of the concurrency workloads. Each prints one
//! JSON line.

use std::sync::Arc;
use std::time::Instant;

use arrow::datatypes::DataType;
use delta_rlc_engine::conflict::tiers::{append_tiers, TierContext};
use delta_rlc_engine::conflict::{ConflictConfig, WinningCommit};
use delta_rlc_engine::env::Env;
use delta_rlc_engine::key_equality::KeyEquality;
use delta_rlc_engine::read_set::SourceKeys;
use delta_rlc_engine::read_set::{split_predicate, ReadSet};
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::{DeltaTable, EngineError};
use delta_rlc_protocol::actions::{serialize_commit, Action, Add, CommitInfo};
use serde_json::json;

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn synthetic_add(i: usize, width: i64) -> Add {
    let lo = i as i64 * width;
    Add {
        path: format!("part-{i:06}.parquet"),
        partition_values: Default::default(),
        size: 1000,
        modification_time: 0,
        data_change: true,
        stats: Some(json!({"numRecords": width, "minValues": {"id": lo, "v": 0}, "maxValues": {"id": lo + width - 1, "v": 100}, "nullCount": {"id": 0, "v": 0}}).to_string()),
        tags: None,
        deletion_vector: None,
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
        extra: Default::default(),
    }
}

/// Tier 1 for one winning commit of `files` added files against `preds` read predicates.
pub async fn tier1(dir: &std::path::Path, files: usize, preds: usize) -> Result<(), EngineError> {
    let loc = dir.join("tier1").display().to_string();
    // The table by a registered name: a path is never written into statement text.
    let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
    s.register("t", &loc);
    s.execute("CREATE TABLE t (id BIGINT, v BIGINT)").await?;
    let table = DeltaTable::open(&loc)?;
    let snap = table.snapshot(None).await?;
    let adds: Vec<Add> = (0..files).map(|i| synthetic_add(i, 1000)).collect();
    let winner = WinningCommit {
        version: 1,
        commit_info: None,
        protocol: None,
        metadata: None,
        txns: vec![],
        domains: vec![],
        adds,
        removes: vec![],
    };
    let mut read_set = ReadSet::default();
    let ctx_df = datafusion::prelude::SessionContext::new();
    let schema = delta_rlc_engine::arrow_conv::table_arrow_schema(&snap.schema);
    let df_schema = datafusion::common::DFSchema::try_from(schema.as_ref().clone())?;
    for p in 0..preds {
        let lo = (files as i64 * 1000) + 1000 * p as i64; // disjoint from every winner file
        let e = ctx_df.parse_sql_expr(&format!("id BETWEEN {lo} AND {}", lo + 500), &df_schema)?;
        read_set.add_predicate(split_predicate(&e, &[], e.to_string()));
    }
    let config = ConflictConfig::default();
    let findings = delta_rlc_engine::conflict::abort_reason::Findings::default();
    let tctx = TierContext::new(
        &snap,
        &table.store,
        &read_set,
        &[],
        &config,
        &winner,
        &findings,
    );
    let tier = append_tiers()
        .into_iter()
        .find(|t| t.name() == "dataSkipping")
        .ok_or_else(|| EngineError::Internal("no tier".into()))?;
    let cands: Vec<&Add> = winner.adds.iter().collect();
    // Phase split, outside the timed run: parsing the winner's stats and building its bound arrays.
    let parse_start = Instant::now();
    let pruner = delta_rlc_engine::scan::FileStatsPruning::new(&snap, &winner.adds);
    let parse_ms = parse_start.elapsed().as_secs_f64() * 1000.0;
    let arrays_start = Instant::now();
    {
        use datafusion::common::pruning::PruningStatistics;
        let col = datafusion::common::Column::from_name("id");
        let _ = (
            pruner.min_values(&col),
            pruner.max_values(&col),
            pruner.null_counts(&col),
        );
    }
    let arrays_ms = arrays_start.elapsed().as_secs_f64() * 1000.0;
    drop(pruner);
    let start = Instant::now();
    let mut skipped = 0usize;
    let mut per_predicate_ms = Vec::new();
    for p in &read_set.predicates {
        let t = Instant::now();
        skipped += tier
            .clear(&tctx, p, &cands)
            .await
            .into_iter()
            .filter(|c| *c)
            .count();
        per_predicate_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    println!(
        "{}",
        json!({"bench": "tier1", "files": files, "predicates": preds, "ms": ms, "perPredicateMs": per_predicate_ms, "statsParseMs": parse_ms, "boundArraysMs": arrays_ms, "skipped": skipped, "peakRssMb": peak_rss_mb()})
    );
    Ok(())
}

/// Value-exact tier with the MERGE source-key marker: `keys` source keys vs a winner file of
/// `changed` rows, none of which is a source key.
pub async fn merge_exact(
    dir: &std::path::Path,
    keys: usize,
    changed: usize,
) -> Result<(), EngineError> {
    let loc = dir.join("mergeexact").display().to_string();
    // The table by a registered name: a path is never written into statement text.
    let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
    s.register("t", &loc);
    s.execute("CREATE TABLE t (id BIGINT, v BIGINT)").await?;
    s.execute(&format!(
        "INSERT INTO t SELECT value * 2 + 1, value FROM range(0, {changed})"
    ))
    .await?;
    let table = DeltaTable::open(&loc)?;
    let snap = table.snapshot(None).await?;
    let equality = KeyEquality::for_pairs(&[(DataType::Int64, DataType::Int64)])
        .ok_or_else(|| EngineError::Internal("BIGINT keys have an equality".into()))?;
    let source: arrow::array::ArrayRef = Arc::new(arrow::array::Int64Array::from_iter_values(
        (0..keys as i64).map(|k| k * 2),
    ));
    // The key set a MERGE builds for one BIGINT key (the integer form, sealed as a MERGE seals
    // it: these keys are dense enough for the bitmap form).
    let mut tuples =
        delta_rlc_engine::key_set::KeySet::for_pairs(&[(DataType::Int64, DataType::Int64)]);
    tuples.insert_rows(&equality, &[source])?;
    let mut read_set = ReadSet::default();
    let ctx_df = datafusion::prelude::SessionContext::new();
    let schema = delta_rlc_engine::arrow_conv::table_arrow_schema(&snap.schema);
    let df_schema = datafusion::common::DFSchema::try_from(schema.as_ref().clone())?;
    let e = ctx_df.parse_sql_expr(&format!("id BETWEEN 0 AND {}", keys as i64 * 2), &df_schema)?;
    let mut p = split_predicate(&e, &[], "source keys".into());
    p.exact_keys = Some(Arc::new(SourceKeys {
        columns: vec!["id".into()],
        equality,
        tuples: tuples.seal(),
    }));
    read_set.add_predicate(p);
    let winner = WinningCommit {
        version: 1,
        commit_info: None,
        protocol: None,
        metadata: None,
        txns: vec![],
        domains: vec![],
        adds: snap.files.clone(),
        removes: vec![],
    };
    let mut config = ConflictConfig::default();
    config.value_exact_max_bytes = u64::MAX;
    let findings = delta_rlc_engine::conflict::abort_reason::Findings::default();
    let tctx = TierContext::new(
        &snap,
        &table.store,
        &read_set,
        &[],
        &config,
        &winner,
        &findings,
    );
    let tier = append_tiers()
        .into_iter()
        .find(|t| t.name() == "valueExact")
        .ok_or_else(|| EngineError::Internal("no tier".into()))?;
    let cands: Vec<&Add> = winner.adds.iter().collect();
    let start = Instant::now();
    let cleared = tier.clear(&tctx, &read_set.predicates[0], &cands).await;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    println!(
        "{}",
        json!({"bench": "mergeExact", "sourceKeys": keys, "winnerRows": changed, "ms": ms, "cleared": cleared.iter().all(|c| *c), "peakRssMb": peak_rss_mb()})
    );
    Ok(())
}

/// Writes a table log with `files` live files (commits of 1000 adds and a checkpoint) for the
/// snapshot-load benchmark; data files are not needed to load a snapshot.
pub async fn make_log(dir: &std::path::Path, files: usize) -> Result<(), EngineError> {
    let loc = dir.display().to_string();
    let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
    s.register("t", &loc);
    s.execute("CREATE TABLE t (id BIGINT, v BIGINT) TBLPROPERTIES ('delta.checkpointInterval' = '1000000')").await?;
    let table = DeltaTable::open(&loc)?;
    let per = 1000;
    let commits = files.div_ceil(per);
    for c in 0..commits {
        let mut actions = vec![Action::CommitInfo(CommitInfo {
            timestamp: Some(0),
            operation: Some("WRITE".into()),
            ..Default::default()
        })];
        for i in c * per..((c + 1) * per).min(files) {
            actions.push(Action::Add(synthetic_add(i, 1000)));
        }
        let bytes = serialize_commit(&actions)?;
        table
            .store
            .put(
                &format!("_delta_log/{:020}.json", c + 1),
                bytes::Bytes::from(bytes),
            )
            .await?;
    }
    let snap = table.snapshot(None).await?;
    delta_rlc_engine::write::checkpoint::write_checkpoint(&table.store, &snap, 0).await?;
    // A few commits after the checkpoint, as in a live table.
    for c in 0..5 {
        let v = commits as u64 + 1 + c;
        let actions = vec![
            Action::CommitInfo(CommitInfo {
                timestamp: Some(0),
                ..Default::default()
            }),
            Action::Add(synthetic_add(files + c as usize, 1000)),
        ];
        table
            .store
            .put(
                &format!("_delta_log/{v:020}.json"),
                bytes::Bytes::from(serialize_commit(&actions)?),
            )
            .await?;
    }
    println!(
        "{}",
        json!({"bench": "makeLog", "files": files + 5, "checkpointVersion": snap.version})
    );
    Ok(())
}

pub async fn load_snapshot(dir: &std::path::Path, incremental: bool) -> Result<(), EngineError> {
    let table = DeltaTable::open_existing(&dir.display().to_string())?;
    let start = Instant::now();
    let snap = table.snapshot(None).await?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let mut out = json!({"bench": "snapshotLoad", "files": snap.files.len(), "version": snap.version, "ms": ms});
    if incremental {
        // One more version (a single add), then the same handle loads the latest again.
        let actions = vec![
            Action::CommitInfo(CommitInfo {
                timestamp: Some(0),
                operation: Some("WRITE".into()),
                ..Default::default()
            }),
            Action::Add(synthetic_add(10_000_000 + snap.version as usize, 1000)),
        ];
        table
            .store
            .put(
                &format!("_delta_log/{:020}.json", snap.version + 1),
                bytes::Bytes::from(serialize_commit(&actions)?),
            )
            .await?;
        let start = Instant::now();
        let next = table.snapshot(None).await?;
        let inc_ms = start.elapsed().as_secs_f64() * 1000.0;
        let start = Instant::now();
        let full = delta_rlc_engine::Snapshot::load(&table.store, None).await?;
        let full_ms = start.elapsed().as_secs_f64() * 1000.0;
        if next.files != full.files || next.version != full.version {
            return Err(EngineError::Internal(
                "incremental and full loads differ".into(),
            ));
        }
        out["incrementalMs"] = json!(inc_ms);
        out["fullReloadMs"] = json!(full_ms);
    }
    out["peakRssMb"] = json!(peak_rss_mb());
    println!("{out}");
    Ok(())
}

/// OPTIMIZE of `rows` rows in 8 files, with and without composition capture, on two copies.
pub async fn capture(dir: &std::path::Path, rows: u64) -> Result<(), EngineError> {
    let mut res = serde_json::Map::new();
    for skip in [true, false] {
        let loc = dir
            .join(if skip { "nocapture" } else { "capture" })
            .display()
            .to_string();
        let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
        s.optimize_skip_capture = skip;
        s.register("t", &loc);
        s.execute("CREATE TABLE t (id BIGINT, v STRING, x DOUBLE)")
            .await?;
        let per = rows / 8;
        for f in 0..8 {
            s.execute(&format!("INSERT INTO t SELECT value, concat('v', CAST(value % 1000 AS VARCHAR)), value * 0.5 FROM range({}, {})", f * per, (f + 1) * per)).await?;
        }
        let start = Instant::now();
        s.execute("OPTIMIZE t").await?;
        res.insert(
            if skip {
                "withoutCaptureMs".into()
            } else {
                "withCaptureMs".into()
            },
            json!(start.elapsed().as_secs_f64() * 1000.0),
        );
    }
    res.insert("bench".into(), json!("captureOverhead"));
    res.insert("rows".into(), json!(rows));
    println!("{}", serde_json::Value::Object(res));
    Ok(())
}
