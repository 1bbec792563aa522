//! `delta-rlc-dev bench writers`: many writers on one table in an object store with S3's latency,
//! each acting as a separate machine (its own session: its own snapshot, its own kept files, its
//! own latency draws), for issue #51's multi-writer goals and #48's curve.
//!
//! The table lives in an in-process `memory://` store behind the latency layer
//! (`delta_rlc_latency_profile`): its put-if-absent is atomic, as S3's conditional PUT is, and on
//! this 2-core machine no store server competes with the writers for CPU. Each writer works on its
//! own key region (no true conflicts), so every abort is a false abort — except in `hot-update`,
//! where the writers share 1,000 ids and overlapping windows truly conflict (the workload for
//! re-execution on conflict: `--retry-on-conflict N`). A writer's requests are
//! what its statements' meters counted.
//!
//! The ceiling: one writer putting commit files back to back with put-if-absent on the same
//! profile (an empty transaction's only request), the most commits the log can take a minute.
//!
//! At the end the table is read back and checked against the rows the committed statements
//! reported changing.
//!
//! `--virtual-time` turns the harness into issue #48's model of writers past what this machine can
//! measure: the same writers, the same engine (snapshot reads, the conflict checker, put-if-absent
//! on the log) and the same seeded latency draws, on one thread whose tokio clock is paused, so
//! time advances only while every writer waits on a request. A writer's computing takes no virtual
//! time except `--statement-cpu-ms`, slept between planning and the commit (calibrated from a
//! measured point: the measured one-writer median minus the model's). Writers therefore behave as
//! on machines of their own, however many there are, and this machine's two cores only decide how
//! long the run takes, not its figures.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use arrow::array::{Array, Int64Array};
use bytes::Bytes;
use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Prepared, SqlSession, StatementOutput};
use delta_rlc_engine::EngineError;
use delta_rlc_storage::{PutOutcome, TableStore};

/// Keys a statement touches.
const KEYS_PER_STATEMENT: u64 = 50;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Workload {
    /// UPDATE of 50 contiguous ids in the writer's region (`v = v + 1`).
    Update,
    /// MERGE of 50 keys spread over the writer's region (matched: `v = v + 1`).
    Merge,
    /// DELETE of 50 contiguous ids in the writer's region.
    Delete,
    /// INSERT of 50 new rows.
    Append,
    /// UPDATE of 50 contiguous ids inside one 1,000-id range every writer shares (`v = v + 1`):
    /// windows of different writers overlap, so some commits truly conflict. With
    /// `--retry-on-conflict N` the aborted statements run again instead of failing.
    HotUpdate,
    /// INSERT of 50 new rows into a table with an identity column (`n BIGINT GENERATED ALWAYS AS
    /// IDENTITY`): every writer generates ids from the same mark, so every lost race is a
    /// conflict OSS Delta aborts; re-basing (`identityRebase`) commits it. The read-back also
    /// checks that every id is distinct.
    IdentityAppend,
}

/// The ids every `hot-update` writer works in.
const HOT_KEYS: u64 = 1_000;

/// `delta-rlc-dev bench writers` (module header).
#[derive(clap::Args)]
pub struct WritersArgs {
    /// Writer counts to measure, one point each (e.g. 1,2,4,8,16).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    writers: Vec<u64>,
    /// Seconds each point runs.
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    #[arg(long, value_enum, default_value = "update")]
    workload: Workload,
    /// Rows of the table, written in `--files` files of one append each.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    #[arg(long, default_value_t = 20)]
    files: u64,
    /// Latency profile: `s3`, `fixed:<ms>` or a profile file (bench/latency/s3.profile).
    #[arg(long, default_value = "s3")]
    profile: String,
    /// Also measure the store's conditional-PUT ceiling first (one writer, empty commits).
    #[arg(long)]
    ceiling: bool,
    /// Run in virtual time (module header): request latencies and `--statement-cpu-ms` elapse on
    /// a paused clock, computing takes none; the figures are the model's.
    #[arg(long)]
    virtual_time: bool,
    /// Virtual milliseconds each statement computes between planning and its commit (only with
    /// `--virtual-time`).
    #[arg(long, default_value_t = 0.0)]
    statement_cpu_ms: f64,
}

/// Prints one JSON line per point (and the ceiling first, when asked).
pub async fn run(args: WritersArgs, conflict: ConflictConfig) -> Result<(), EngineError> {
    if !args.virtual_time {
        if args.statement_cpu_ms != 0.0 {
            return Err(EngineError::invalid(
                "--statement-cpu-ms needs --virtual-time (a measured run computes for real)",
            ));
        }
        return run_points(args, conflict).await;
    }
    if !(args.statement_cpu_ms.is_finite() && args.statement_cpu_ms >= 0.0) {
        return Err(EngineError::invalid(
            "--statement-cpu-ms must be a non-negative number",
        ));
    }
    if conflict.reexecution.reruns > 0 {
        return Err(EngineError::invalid(
            "--virtual-time runs each statement once: --retry-on-conflict is not modelled",
        ));
    }
    // A runtime of its own: one thread, its clock paused (auto-advancing to the next timer
    // whenever every task waits), on a blocking thread of the caller's runtime.
    tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .map_err(|e| EngineError::Internal(format!("virtual-time runtime: {e}")))?;
        rt.block_on(run_points(args, conflict))
    })
    .await
    .map_err(|e| EngineError::Internal(format!("virtual-time run: {e}")))?
}

async fn run_points(args: WritersArgs, conflict: ConflictConfig) -> Result<(), EngineError> {
    let run = format!("{}", std::process::id());
    if args.ceiling {
        println!("{}", ceiling(&run, &args.profile, args.seconds).await?);
    }
    let setup = Arc::new(Setup {
        rows: args.rows,
        files: args.files,
        profile: args.profile,
        seconds: args.seconds,
        workload: args.workload,
        conflict,
        virtual_time: args.virtual_time,
        statement_cpu: Duration::from_secs_f64(args.statement_cpu_ms / 1000.0),
    });
    for n in args.writers {
        println!("{}", run_point(&run, setup.clone(), n.max(1)).await?);
    }
    Ok(())
}

struct Setup {
    rows: u64,
    files: u64,
    profile: String,
    seconds: f64,
    workload: Workload,
    conflict: ConflictConfig,
    virtual_time: bool,
    /// Slept between planning and the commit (virtual time only; zero otherwise).
    statement_cpu: Duration,
}

fn session(conflict: &ConflictConfig, latency: Option<(&str, u64)>) -> SqlSession {
    let mut s = SqlSession::new(Env::default(), conflict.clone());
    if let Some((profile, seed)) = latency {
        s.storage_options
            .insert("delta_rlc_latency_profile".into(), profile.into());
        s.storage_options
            .insert("delta_rlc_latency_seed".into(), seed.to_string());
    }
    s
}

/// The statement writer `w` of `n` runs as its `i`-th, over its region of `rows / n` keys.
fn statement(work: Workload, rows: u64, n: u64, w: u64, i: u64) -> String {
    let region = (rows / n.max(1)).max(KEYS_PER_STATEMENT);
    let base = w * region;
    let lo = base + (i * KEYS_PER_STATEMENT) % region.saturating_sub(KEYS_PER_STATEMENT).max(1);
    let hi = lo + KEYS_PER_STATEMENT;
    match work {
        Workload::Update => format!("UPDATE t SET v = v + 1 WHERE id >= {lo} AND id < {hi}"),
        Workload::Delete => format!("DELETE FROM t WHERE id >= {lo} AND id < {hi}"),
        Workload::Merge => {
            let stride = region / KEYS_PER_STATEMENT;
            let off = base + i % stride.max(1);
            format!(
                "MERGE INTO t USING (SELECT {off} + value * {stride} AS id FROM range(0, {KEYS_PER_STATEMENT})) s \
                 ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = t.v + 1"
            )
        }
        Workload::HotUpdate => {
            // A spread of window starts that differs by writer and statement.
            let start =
                (w.wrapping_mul(7_919) + i.wrapping_mul(104_729)) % (HOT_KEYS - KEYS_PER_STATEMENT);
            let hi = start + KEYS_PER_STATEMENT;
            format!("UPDATE t SET v = v + 1 WHERE id >= {start} AND id < {hi}")
        }
        Workload::Append => {
            let new = 1_000_000_000 + w * 100_000_000 + i * KEYS_PER_STATEMENT;
            format!("INSERT INTO t SELECT {new} + value, 0 FROM range(0, {KEYS_PER_STATEMENT})")
        }
        Workload::IdentityAppend => {
            let new = 1_000_000_000 + w * 100_000_000 + i * KEYS_PER_STATEMENT;
            format!(
                "INSERT INTO t (id, v) SELECT {new} + value, 0 FROM range(0, {KEYS_PER_STATEMENT})"
            )
        }
    }
}

#[derive(Default)]
struct WriterTally {
    /// Committed before the deadline.
    commits: u64,
    /// Every commit, in the window or after it (for the read-back check).
    all_commits: u64,
    rows_changed: u64,
    attempts: u64,
    aborts: BTreeMap<String, u64>,
    /// Aborts by reason (`AbortReason::name`).
    reasons: BTreeMap<String, u64>,
    requests: [u64; 5],
    depth_sum: u64,
    latencies_ms: Vec<f64>,
    /// Milliseconds each committed statement spent in conflict checks (0 when it won at once).
    check_ms: Vec<f64>,
    /// Statements run again after a true conflict (re-execution on).
    reruns: u64,
    /// Rows changed by the statements committed before the deadline.
    rows_in_window: u64,
}

async fn run_writer(
    location: String,
    setup: Arc<Setup>,
    n: u64,
    w: u64,
    deadline: Instant,
) -> Result<WriterTally, EngineError> {
    let mut s = session(&setup.conflict, Some((&setup.profile, 1000 + w)));
    s.register("t", &location);
    let mut t = WriterTally::default();
    let mut i = 0u64;
    while Instant::now() < deadline {
        let sql = statement(setup.workload, setup.rows, n, w, i);
        i += 1;
        let t0 = Instant::now();
        match execute(&s, &sql, setup.statement_cpu).await {
            Ok(out) => {
                t.all_commits += 1;
                let c = out.commit.as_ref();
                t.rows_changed += c.and_then(|c| c.affected_rows).unwrap_or(0);
                t.reruns += c.map_or(0, |c| c.earlier_runs.len() as u64);
                if Instant::now() > deadline {
                    continue;
                }
                t.commits += 1;
                t.rows_in_window += c.and_then(|c| c.affected_rows).unwrap_or(0);
                t.attempts += c.map_or(1, |c| u64::from(c.attempts));
                if let Some(r) = &out.requests {
                    for (slot, v) in t
                        .requests
                        .iter_mut()
                        .zip([r.get, r.put, r.list, r.head, r.delete])
                    {
                        *slot += v;
                    }
                    t.depth_sum += u64::from(r.critical_path_depth);
                }
                t.latencies_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
                t.check_ms
                    .push(c.map_or(0.0, |c| c.check_time.as_secs_f64() * 1000.0));
            }
            Err(EngineError::Conflict(c)) => {
                *t.aborts.entry(c.kind.name().to_string()).or_default() += 1;
                *t.reasons.entry(c.reason.name().to_string()).or_default() += 1;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(t)
}

/// Runs `sql` to completion. With a statement cost, a write is planned, then waits that long
/// (the model's computing), then commits: the cost falls between its snapshot and its commit, where
/// a real statement's computing lies.
async fn execute(
    s: &SqlSession,
    sql: &str,
    cost: Duration,
) -> Result<StatementOutput, EngineError> {
    if cost.is_zero() {
        return s.execute(sql).await;
    }
    match s.prepare(sql).await? {
        Prepared::Write(txn) => {
            let meter = txn.table.store.meter().cloned();
            tokio::time::sleep(cost).await;
            let commit = txn.commit().await?;
            Ok(StatementOutput {
                commit: Some(commit),
                requests: meter.map(|m| m.counts()),
                ..Default::default()
            })
        }
        Prepared::Rows(_) | Prepared::Done(_) => Err(EngineError::Internal(format!(
            "a workload statement that writes nothing: {sql}"
        ))),
    }
}

async fn create_table(location: &str, setup: &Setup) -> Result<(i64, i64), EngineError> {
    let mut s = session(&setup.conflict, None);
    s.register("t", location);
    let identity = matches!(setup.workload, Workload::IdentityAppend);
    s.execute(&format!(
        "CREATE TABLE t (id BIGINT NOT NULL, v BIGINT{}) \
         TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        if identity {
            ", n BIGINT GENERATED ALWAYS AS IDENTITY"
        } else {
            ""
        }
    ))
    .await?;
    let per = setup.rows / setup.files.max(1);
    for f in 0..setup.files {
        s.execute(&format!(
            "INSERT INTO t (id, v) SELECT value, value FROM range({}, {})",
            f * per,
            (f + 1) * per
        ))
        .await?;
    }
    count_and_sum(&s).await
}

async fn count_and_sum(s: &SqlSession) -> Result<(i64, i64), EngineError> {
    let row = first_row(s, "SELECT count(*), sum(v) FROM t").await?;
    Ok((row(0), row(1)))
}

/// The first row's BIGINT cells of `sql` (0 where there is none).
async fn first_row(s: &SqlSession, sql: &str) -> Result<impl Fn(usize) -> i64, EngineError> {
    let out = s.execute(sql).await?;
    Ok(move |c: usize| {
        out.batches
            .first()
            .and_then(|b| b.columns().get(c).cloned())
            .and_then(|a| {
                a.as_any()
                    .downcast_ref::<Int64Array>()
                    .filter(|a| !a.is_empty() && a.is_valid(0))
                    .map(|a| a.value(0))
            })
            .unwrap_or(0)
    })
}

/// Runs `writers` writers for the setup's seconds; one JSON object.
async fn run_point(
    run: &str,
    setup: Arc<Setup>,
    writers: u64,
) -> Result<serde_json::Value, EngineError> {
    let location = format!("memory://bench-writers-{run}-{writers}/t");
    let (rows0, sum0) = create_table(&location, &setup).await?;
    let real_start = std::time::Instant::now();
    let began = Instant::now();
    let deadline = began + Duration::from_secs_f64(setup.seconds);
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            tokio::spawn(run_writer(
                location.clone(),
                setup.clone(),
                writers,
                w,
                deadline,
            ))
        })
        .collect();
    let mut all = WriterTally::default();
    for task in tasks {
        let t = task
            .await
            .map_err(|e| EngineError::Internal(format!("writer task: {e}")))??;
        all.commits += t.commits;
        all.all_commits += t.all_commits;
        all.rows_changed += t.rows_changed;
        all.attempts += t.attempts;
        all.depth_sum += t.depth_sum;
        all.reruns += t.reruns;
        all.rows_in_window += t.rows_in_window;
        for (k, v) in t.aborts {
            *all.aborts.entry(k).or_default() += v;
        }
        for (k, v) in t.reasons {
            *all.reasons.entry(k).or_default() += v;
        }
        for (slot, v) in all.requests.iter_mut().zip(t.requests) {
            *slot += v;
        }
        all.latencies_ms.extend(t.latencies_ms);
        all.check_ms.extend(t.check_ms);
    }
    // Read back: what the committed statements said they changed is what the table holds.
    let mut check = session(&setup.conflict, None);
    check.register("t", &location);
    let (rows, sum) = count_and_sum(&check).await?;
    let changed = all.rows_changed as i64;
    let expected = match setup.workload {
        Workload::Update | Workload::Merge | Workload::HotUpdate => (rows0, sum0 + changed),
        Workload::Delete => (rows0 - changed, sum),
        Workload::Append | Workload::IdentityAppend => (rows0 + changed, sum0),
    };
    if matches!(setup.workload, Workload::IdentityAppend) {
        let ids = first_row(&check, "SELECT count(*), count(DISTINCT n) FROM t").await?;
        if ids(0) != ids(1) {
            return Err(EngineError::Internal(format!(
                "identity values repeated: {} rows, {} distinct ids",
                ids(0),
                ids(1)
            )));
        }
    }
    if (rows, sum) != expected {
        return Err(EngineError::Internal(format!(
            "read back (rows, sum v) = ({rows}, {sum}), expected {expected:?} from {} committed statements",
            all.all_commits
        )));
    }
    all.latencies_ms.sort_by(|a, b| a.total_cmp(b));
    all.check_ms.sort_by(|a, b| a.total_cmp(b));
    let pick = |l: &[f64], p: f64| {
        l.get(((l.len() as f64 - 1.0) * p).round().max(0.0) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let pct = |p: f64| pick(&all.latencies_ms, p);
    let per = |x: u64| x as f64 / all.commits.max(1) as f64;
    let [get, put, list, head, delete] = all.requests;
    Ok(serde_json::json!({
        "writers": writers,
        "seconds": setup.seconds,
        "commits": all.commits,
        "committedPerMin": all.commits as f64 * 60.0 / setup.seconds,
        "aborts": all.aborts,
        "abortReasons": all.reasons,
        "failedStatements": all.aborts.values().sum::<u64>(),
        "reruns": all.reruns,
        "retryOnConflict": setup.conflict.reexecution.reruns,
        "rowsChangedPerMin": all.rows_in_window as f64 * 60.0 / setup.seconds,
        "attemptsPerCommit": per(all.attempts),
        "requestsPerCommit": per(get + put + list + head + delete),
        "requestsByKindPerCommit": {"GET": per(get), "PUT": per(put), "LIST": per(list), "HEAD": per(head), "DELETE": per(delete)},
        "meanDepth": per(all.depth_sum),
        "p50Ms": pct(0.5),
        "p99Ms": pct(0.99),
        "checkP50Ms": pick(&all.check_ms, 0.5),
        "checkP99Ms": pick(&all.check_ms, 0.99),
        "rowsChanged": all.rows_changed,
        "readBack": "exact",
        "virtualTime": setup.virtual_time,
        "statementCpuMs": setup.statement_cpu.as_secs_f64() * 1000.0,
        "realSeconds": real_start.elapsed().as_secs_f64(),
    }))
}

/// One writer putting commit files back to back with put-if-absent: the log's commits a minute.
async fn ceiling(run: &str, profile: &str, seconds: f64) -> Result<serde_json::Value, EngineError> {
    let mut options = BTreeMap::new();
    options.insert("delta_rlc_latency_profile".to_string(), profile.to_string());
    options.insert("delta_rlc_latency_seed".to_string(), "1".to_string());
    let store =
        TableStore::open_with_options(&format!("memory://bench-ceiling-{run}/t"), &options)?;
    let began = Instant::now();
    let mut version = 0u64;
    while began.elapsed().as_secs_f64() < seconds {
        let body = Bytes::from(format!(
            "{{\"commitInfo\":{{\"operation\":\"EMPTY\",\"v\":{version}}}}}\n"
        ));
        match store
            .put_if_absent(&format!("_delta_log/{version:020}.json"), body)
            .await
        {
            PutOutcome::Created => version += 1,
            PutOutcome::AlreadyExists => version += 1,
            PutOutcome::Unknown(e) | PutOutcome::Refused(e) => return Err(e.into()),
        }
    }
    let secs = began.elapsed().as_secs_f64();
    Ok(
        serde_json::json!({"ceiling": true, "seconds": secs, "commits": version,
        "committedPerMin": version as f64 * 60.0 / secs}),
    )
}
