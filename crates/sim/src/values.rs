//! Value-class histories: the simulator for the values where "the same value" is subtle.
//!
//! The integer simulator (`sim.rs`) checks histories against a hand-written model. Here the table's
//! columns are every value class the engine accepts as a key — DOUBLE and FLOAT (with -0.0, 0.0,
//! NaN, ±inf), STRING (empty, prefixes, composed and decomposed accents), DECIMAL, DATE, TIMESTAMP,
//! BIGINT, NULLs in all of them — and statements compare them through predicates and MERGE ON
//! clauses on one to three key columns, with sources typed differently from the target (FLOAT
//! against DOUBLE, DECIMAL(12,4) against DECIMAL(10,2), INT/SMALLINT against BIGINT, nanosecond
//! against microsecond timestamps).
//!
//! The oracle is serial replay through the engine itself, so it needs no second definition of
//! equality: under Serializable isolation the committed statements, run one at a time in commit
//! order on a fresh table, must leave the same rows (as a multiset) at every committed version and
//! report the same affected-row counts. A tier that clears a true conflict lets a loser commit a
//! result no serial order produces, and the replay differs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use delta_rlc_engine::conflict::{ConflictConfig, IsolationLevel};
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Prepared, SqlSession};
use delta_rlc_engine::{EngineError, Transaction};
use delta_rlc_storage::object_store::memory::InMemory;
use delta_rlc_storage::TableStore;

use crate::sim::Rng;

/// One literal: its SQL and the class of values SQL equality puts it in (`None` for NULL, which
/// equals nothing). Two literals with the same class must never both be keys of one MERGE source.
type Lit = (&'static str, Option<&'static str>);

/// A key column: target column, its literal pool, and source-side casts (SQL with `{}` for the
/// literal) that give the source a different but comparable type.
struct KeyColumn {
    name: &'static str,
    pool: &'static [Lit],
    source_casts: &'static [&'static str],
}

const KEYS: &[KeyColumn] = &[
    KeyColumn {
        name: "d",
        pool: &[
            ("CAST(0.0 AS DOUBLE)", Some("zero")),
            ("CAST('-0.0' AS DOUBLE)", Some("zero")),
            ("CAST('NaN' AS DOUBLE)", Some("nan")),
            ("CAST('inf' AS DOUBLE)", Some("inf")),
            ("CAST('-inf' AS DOUBLE)", Some("-inf")),
            ("CAST(1.5 AS DOUBLE)", Some("1.5")),
            ("CAST(2 AS DOUBLE)", Some("2")),
            ("CAST(NULL AS DOUBLE)", None),
        ],
        source_casts: &["{}", "CAST({} AS FLOAT)"],
    },
    KeyColumn {
        name: "f",
        pool: &[
            ("CAST(0.0 AS FLOAT)", Some("zero")),
            ("CAST('-0.0' AS FLOAT)", Some("zero")),
            ("CAST('NaN' AS FLOAT)", Some("nan")),
            ("CAST(1.5 AS FLOAT)", Some("1.5")),
            ("CAST(NULL AS FLOAT)", None),
        ],
        source_casts: &["{}", "CAST({} AS DOUBLE)"],
    },
    KeyColumn {
        name: "s",
        pool: &[
            ("''", Some("")),
            ("'a'", Some("a")),
            ("'ab'", Some("ab")),
            ("'abc'", Some("abc")),
            ("'\u{e9}'", Some("e-acute")),
            ("'e\u{301}'", Some("e+combining")),
            ("CAST(NULL AS STRING)", None),
        ],
        source_casts: &["{}"],
    },
    KeyColumn {
        name: "m",
        pool: &[
            ("CAST(0.5 AS DECIMAL(10,2))", Some("0.5")),
            ("CAST(1 AS DECIMAL(10,2))", Some("1")),
            ("CAST(1.25 AS DECIMAL(10,2))", Some("1.25")),
            ("CAST(-0.5 AS DECIMAL(10,2))", Some("-0.5")),
            // No double holds 0.01 exactly; 99999999.99 is the column's widest value (its
            // 10 digits still print back exactly): the file bounds written for this column.
            ("CAST(0.01 AS DECIMAL(10,2))", Some("0.01")),
            ("CAST(99999999.99 AS DECIMAL(10,2))", Some("99999999.99")),
            ("CAST(NULL AS DECIMAL(10,2))", None),
        ],
        source_casts: &["{}", "CAST({} AS DECIMAL(12,4))"],
    },
    KeyColumn {
        name: "w",
        // 20 digits: the first two are one double apart from nothing (the same f64), so a bound
        // read through a double would be rounded; no bounds are written or read for them.
        pool: &[
            (
                "CAST('1234567890123456.7891' AS DECIMAL(20,4))",
                Some("1234567890123456.7891"),
            ),
            (
                "CAST('1234567890123456.7892' AS DECIMAL(20,4))",
                Some("1234567890123456.7892"),
            ),
            ("CAST('0.0001' AS DECIMAL(20,4))", Some("0.0001")),
            ("CAST(NULL AS DECIMAL(20,4))", None),
        ],
        source_casts: &["{}", "CAST({} AS DECIMAL(22,6))"],
    },
    KeyColumn {
        name: "dt",
        pool: &[
            ("DATE '2030-01-01'", Some("2030-01-01")),
            ("DATE '2030-01-02'", Some("2030-01-02")),
            ("DATE '1969-12-31'", Some("1969-12-31")),
            ("CAST(NULL AS DATE)", None),
        ],
        source_casts: &["{}"],
    },
    KeyColumn {
        name: "ts",
        pool: &[
            (
                "to_timestamp_micros('2030-01-01T00:00:00.000001Z')",
                Some("t1"),
            ),
            (
                "to_timestamp_micros('2030-01-01T00:00:00.000002Z')",
                Some("t2"),
            ),
            (
                "to_timestamp_micros('1969-12-31T23:59:59.999999Z')",
                Some("t0"),
            ),
            ("CAST(NULL AS TIMESTAMP)", None),
        ],
        source_casts: &["{}", "CAST({} AS TIMESTAMP(9))"],
    },
    KeyColumn {
        name: "i",
        pool: &[
            ("CAST(0 AS BIGINT)", Some("0")),
            ("CAST(1 AS BIGINT)", Some("1")),
            ("CAST(-1 AS BIGINT)", Some("-1")),
            ("CAST(NULL AS BIGINT)", None),
        ],
        // STRING: a key pair without a shared equality (the key set is declined; the MERGE must
        // then read every row its ON can match).
        source_casts: &[
            "{}",
            "CAST({} AS INT)",
            "CAST({} AS SMALLINT)",
            "CAST({} AS STRING)",
        ],
    },
    KeyColumn {
        name: "r",
        // A DECIMAL(38,2) source meets this column in Spark's DECIMAL(38,2), rounding it: 1.005
        // and 1.01 are one key there and two here (red team helper-48). One class for both, so
        // no source holds the two; the key set must decline the rounding pair.
        pool: &[
            ("CAST('1.005' AS DECIMAL(38,18))", Some("1.01")),
            ("CAST('1.01' AS DECIMAL(38,18))", Some("1.01")),
            ("CAST('1.015' AS DECIMAL(38,18))", Some("1.02")),
            ("CAST('7' AS DECIMAL(38,18))", Some("7")),
            ("CAST(NULL AS DECIMAL(38,18))", None),
        ],
        source_casts: &["{}", "CAST({} AS DECIMAL(38,2))"],
    },
];

/// Predicates per column: SQL with `{}` for a pool literal, or a fixed predicate.
const PREDICATES: &[&str] = &[
    "{c} = {v}",
    "{c} IS NULL",
    "{c} < {v}",
    "{c} > {v}",
    "{c} IN ({v}, {w})",
    "{c} <> {v}",
];

/// The value classes the generator draws from (for reports and docs).
pub const VALUE_CLASSES: &str = "DOUBLE and FLOAT (0.0, -0.0, NaN, +inf, -inf, NULL), STRING ('', prefixes, composed and decomposed accents, NULL), DECIMAL(10,2) against DECIMAL(12,4) sources (0.01, the column's widest value), DECIMAL(20,4) against DECIMAL(22,6) (values one double apart from nothing), DATE, TIMESTAMP against nanosecond sources, BIGINT against INT/SMALLINT/STRING sources (a declined key set), DECIMAL(38,18) against DECIMAL(38,2) sources (a common type that rounds: a declined key set), multi-column keys of 1-3 of these";

#[derive(Debug, Clone)]
pub struct ValueSimConfig {
    pub seed: u64,
    pub writers: usize,
    pub txns: usize,
    pub conflict: ConflictConfig,
}

#[derive(Debug, Clone, Default)]
pub struct ValueSimReport {
    pub seed: u64,
    pub commits: u64,
    pub empty: u64,
    pub aborts: BTreeMap<String, u64>,
    /// Aborts by reason (`AbortReason::name`).
    pub reasons: BTreeMap<String, u64>,
    pub events: BTreeMap<String, u64>,
    /// Statements that failed the same way when replayed serially (e.g. a MERGE whose source
    /// matched a target row twice): not anomalies.
    pub failed_alike: u64,
    pub anomalies: Vec<String>,
    /// Re-execution on conflict (`conflict.reexecution`): runs after the first, and statements
    /// that committed on one.
    pub reruns: u64,
    pub committed_after_rerun: u64,
}

/// Serializable, every switch combination across seeds (legacy, all on, each switch off alone).
pub fn value_config_for_seed(seed: u64, txns: usize) -> ValueSimConfig {
    let mut cfg = crate::sim::config_for_seed(seed, txns);
    cfg.conflict.isolation = Some(IsolationLevel::Serializable);
    ValueSimConfig {
        seed,
        writers: cfg.writers,
        txns,
        conflict: cfg.conflict,
    }
}

fn pick<'a, T>(rng: &mut Rng, xs: &'a [T]) -> Option<&'a T> {
    xs.get(rng.below(xs.len() as u64) as usize)
}

fn lit(rng: &mut Rng, k: &KeyColumn) -> &'static str {
    pick(rng, k.pool).map_or("NULL", |l| l.0)
}

const COLUMNS: &str = "d, f, s, m, w, dt, ts, i, r, v";

fn row(rng: &mut Rng, v: i64) -> String {
    let vals: Vec<&str> = KEYS.iter().map(|k| lit(rng, k)).collect();
    format!("({}, {v})", vals.join(", "))
}

fn predicate(rng: &mut Rng) -> String {
    qualified_predicate(rng, "")
}

/// A predicate over one column, its name prefixed with `qualifier` (`t.` in MERGE clauses).
fn qualified_predicate(rng: &mut Rng, qualifier: &str) -> String {
    let Some(k) = pick(rng, KEYS) else {
        return "true".into();
    };
    let p = pick(rng, PREDICATES).copied().unwrap_or("{c} IS NULL");
    p.replace("{c}", &format!("{qualifier}{}", k.name))
        .replace("{v}", lit(rng, k))
        .replace("{w}", lit(rng, k))
}

/// A MERGE on 1–3 key columns whose source keys are distinct under SQL equality.
fn merge(rng: &mut Rng, op_id: i64) -> String {
    let mut cols: Vec<&KeyColumn> = Vec::new();
    for _ in 0..1 + rng.below(3) {
        if let Some(k) = pick(rng, KEYS) {
            if !cols.iter().any(|c| c.name == k.name) {
                cols.push(k);
            }
        }
    }
    let casts: Vec<&str> = cols
        .iter()
        .map(|k| pick(rng, k.source_casts).copied().unwrap_or("{}"))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let mut rows = Vec::new();
    for r in 0..1 + rng.below(4) {
        let lits: Vec<&Lit> = cols.iter().filter_map(|k| pick(rng, k.pool)).collect();
        // A tuple with a NULL equals nothing, so it may repeat; others must be distinct.
        let class: Option<Vec<&str>> = lits.iter().map(|l| l.1).collect();
        if let Some(c) = class {
            if !seen.insert(c) {
                continue;
            }
        }
        let vals: Vec<String> = lits
            .iter()
            .zip(&casts)
            .map(|(l, c)| c.replace("{}", l.0))
            .collect();
        rows.push(format!("({}, {})", vals.join(", "), op_id * 10 + r as i64));
    }
    let names: Vec<&str> = cols.iter().map(|k| k.name).collect();
    let on: Vec<String> = names.iter().map(|n| format!("t.{n} = s.{n}")).collect();
    let insert_vals: Vec<String> = names.iter().map(|n| format!("s.{n}")).collect();
    // Sometimes a NOT MATCHED BY SOURCE clause over target columns (Case 6).
    let nmbs = match rng.below(4) {
        0 => format!(
            " WHEN NOT MATCHED BY SOURCE AND {} THEN DELETE",
            qualified_predicate(rng, "t.")
        ),
        1 => format!(
            " WHEN NOT MATCHED BY SOURCE AND {} THEN UPDATE SET v = t.v + 1",
            qualified_predicate(rng, "t.")
        ),
        _ => String::new(),
    };
    // Sometimes a MATCHED clause with a condition over the target row: a target row it does not
    // hold for is matched but unchanged, and its existence still keeps NOT MATCHED from inserting
    // for that source row (a row the loser reads without changing; red-team 2026-12-06).
    let matched = match rng.below(3) {
        0 => format!("WHEN MATCHED AND {} ", qualified_predicate(rng, "t.")),
        _ => "WHEN MATCHED ".to_string(),
    };
    format!(
        "MERGE INTO t USING (SELECT * FROM (VALUES {}) AS x({}, v)) s ON {} {matched}THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT ({}, v) VALUES ({}, s.v){nmbs}",
        rows.join(", "),
        names.join(", "),
        on.join(" AND "),
        names.join(", "),
        insert_vals.join(", ")
    )
}

/// A random statement over the value-class table.
pub fn random_statement(rng: &mut Rng, op_id: i64) -> String {
    match rng.below(10) {
        0 | 1 => {
            let rows: Vec<String> = (0..1 + rng.below(3))
                .map(|r| row(rng, op_id * 10 + r as i64))
                .collect();
            format!("INSERT INTO t ({COLUMNS}) VALUES {}", rows.join(", "))
        }
        2 => format!("DELETE FROM t WHERE {}", predicate(rng)),
        3 | 4 => format!("UPDATE t SET v = v + 1000 WHERE {}", predicate(rng)),
        5..=8 => merge(rng, op_id),
        _ => "OPTIMIZE t".into(),
    }
}

fn table_sql(rng: &mut Rng) -> String {
    let mut props = vec![format!(
        "'delta.enableDeletionVectors' = '{}'",
        rng.chance(75)
    )];
    if rng.chance(30) {
        props.push("'delta.enableRowTracking' = 'true'".into());
    }
    format!(
        "CREATE TABLE t (d DOUBLE, f FLOAT, s STRING, m DECIMAL(10,2), w DECIMAL(20,4), dt DATE, ts TIMESTAMP, i BIGINT, r DECIMAL(38,18), v BIGINT) TBLPROPERTIES ({})",
        props.join(", ")
    )
}

static NONCE: AtomicU64 = AtomicU64::new(0);

async fn new_session(seed: u64, conflict: &ConflictConfig, tag: &str) -> (SqlSession, String) {
    let location = format!(
        "memory://values-{tag}-{seed}-{}/t",
        NONCE.fetch_add(1, Ordering::SeqCst)
    );
    let store = TableStore::from_object_store(Arc::new(InMemory::new()), &location, "t");
    let mut session = SqlSession::new(Env::deterministic(seed), conflict.clone());
    session.use_store(&location, store);
    session.register("t", &location);
    (session, location)
}

/// Every row of `batches`, rendered, sorted: the table as a multiset.
fn rows_of(batches: &[RecordBatch]) -> Result<Vec<String>, EngineError> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let fmts: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<_, _>>()?;
        for r in 0..b.num_rows() {
            let cells: Vec<String> = fmts.iter().map(|f| f.value(r).to_string()).collect();
            out.push(cells.join("|"));
        }
    }
    out.sort();
    Ok(out)
}

async fn table_rows(
    session: &SqlSession,
    version: Option<u64>,
) -> Result<Vec<String>, EngineError> {
    let at = version
        .map(|v| format!(" VERSION AS OF {v}"))
        .unwrap_or_default();
    let out = session
        .execute(&format!("SELECT {COLUMNS} FROM t{at}"))
        .await?;
    rows_of(&out.batches)
}

enum Slot {
    Idle,
    /// A started transaction, its record, and which run of its statement it is (1-based).
    Started(Box<Transaction>, usize, u32),
    /// A statement to run again after a true conflict (the engine's re-execution rule).
    Rerun(String, u32),
}

struct Record {
    sql: String,
    affected: Option<u64>,
    /// Committed at this version; None for aborted, empty and failed statements.
    version: Option<u64>,
    failed: Option<String>,
}

/// Runs one seeded history and judges it by serial replay.
pub async fn run_values(cfg: &ValueSimConfig) -> Result<ValueSimReport, EngineError> {
    let mut rng = Rng::new(cfg.seed);
    let ddl = table_sql(&mut rng);
    let setup: Vec<String> = (0..1 + rng.below(3))
        .map(|f| {
            let rows: Vec<String> = (0..4 + rng.below(12))
                .map(|r| row(&mut rng, -(f as i64 * 100 + r as i64) - 1))
                .collect();
            format!("INSERT INTO t ({COLUMNS}) VALUES {}", rows.join(", "))
        })
        .collect();
    let (session, location) = new_session(cfg.seed, &cfg.conflict, "history").await;
    session.execute(&ddl).await?;
    for s in &setup {
        session.execute(s).await?;
    }
    let base = session.table(&location)?.snapshot(None).await?.version;

    let mut report = ValueSimReport {
        seed: cfg.seed,
        ..Default::default()
    };
    let mut records: Vec<Record> = Vec::new();
    let mut slots: Vec<Slot> = (0..cfg.writers.max(1)).map(|_| Slot::Idle).collect();
    let mut remaining = cfg.txns;
    while remaining > 0 || slots.iter().any(|s| !matches!(s, Slot::Idle)) {
        let w = rng.below(slots.len() as u64) as usize;
        let Some(slot) = slots.get_mut(w) else {
            continue;
        };
        match std::mem::replace(slot, Slot::Idle) {
            Slot::Idle if remaining == 0 => {}
            state @ (Slot::Idle | Slot::Rerun(..)) => {
                let (sql, run) = match state {
                    Slot::Rerun(sql, run) => (sql, run),
                    _ => {
                        remaining -= 1;
                        (random_statement(&mut rng, records.len() as i64 + 1), 1)
                    }
                };
                let idx = records.len();
                match session.prepare(&sql).await {
                    Ok(Prepared::Write(t)) => {
                        records.push(Record {
                            sql,
                            affected: t.affected_rows,
                            version: None,
                            failed: None,
                        });
                        *slot = Slot::Started(t, idx, run);
                    }
                    Ok(_) => records.push(Record {
                        sql,
                        affected: None,
                        version: None,
                        failed: None,
                    }),
                    Err(e) => records.push(Record {
                        sql,
                        affected: None,
                        version: None,
                        failed: Some(e.to_string()),
                    }),
                }
            }
            Slot::Started(t, idx, run) => {
                let outcome = t.commit().await;
                let Some(rec) = records.get_mut(idx) else {
                    continue;
                };
                match outcome {
                    Ok(r) => {
                        for e in &r.events {
                            *report.events.entry(e.name.to_string()).or_default() += 1;
                        }
                        match r.version {
                            Some(v) if r.attempts > 0 => {
                                report.commits += 1;
                                report.committed_after_rerun += u64::from(run > 1);
                                rec.version = Some(v);
                            }
                            _ => report.empty += 1,
                        }
                    }
                    Err(e)
                        if cfg.conflict.reexecution.runs_again(
                            run,
                            delta_rlc_engine::txn::reexecute::may_run_again(&e),
                        ) =>
                    {
                        // Planned again from the latest version as a fresh transaction with its
                        // own record; the aborted run commits nothing.
                        report.reruns += 1;
                        if let EngineError::Conflict(c) = &e {
                            *report.aborts.entry(c.kind.name().to_string()).or_default() += 1;
                            crate::sim::count_reason(&mut report.reasons, c);
                        }
                        *slot = Slot::Rerun(rec.sql.clone(), run + 1);
                    }
                    Err(EngineError::Conflict(c)) => {
                        *report.aborts.entry(c.kind.name().to_string()).or_default() += 1;
                        crate::sim::count_reason(&mut report.reasons, &c);
                    }
                    Err(e) => rec.failed = Some(e.to_string()),
                }
            }
        }
    }

    // Serial replay: committed statements in version order, one at a time, on a fresh table.
    let (replay, _) = new_session(cfg.seed, &ConflictConfig::default(), "replay").await;
    replay.execute(&ddl).await?;
    for s in &setup {
        replay.execute(s).await?;
    }
    let mut committed: Vec<&Record> = records.iter().filter(|r| r.version.is_some()).collect();
    committed.sort_by_key(|r| r.version);
    let mut expected_version = base;
    for r in committed {
        let v = r.version.unwrap_or_default();
        expected_version += 1;
        if v != expected_version {
            report.anomalies.push(format!(
                "versions not contiguous: {v} after {}",
                expected_version - 1
            ));
            break;
        }
        // OPTIMIZE moves rows without changing them; what it compacts depends on the files at its
        // snapshot, so it is not replayed (its rows are still compared below).
        if r.sql != "OPTIMIZE t" {
            let out = match replay.execute(&r.sql).await {
                Ok(out) => out,
                Err(e) => {
                    report.anomalies.push(format!(
                        "v{v} committed but fails when replayed serially ({e}): {}",
                        r.sql
                    ));
                    break;
                }
            };
            let serial = out.commit.as_ref().filter(|c| c.attempts > 0);
            if serial.is_none() {
                report.anomalies.push(format!(
                    "v{v} committed, but serially the statement changes nothing: {}",
                    r.sql
                ));
                break;
            }
            if serial.and_then(|c| c.affected_rows) != r.affected {
                report.anomalies.push(format!(
                    "v{v} affected {:?} rows, serially {:?}: {}",
                    r.affected,
                    serial.and_then(|c| c.affected_rows),
                    r.sql
                ));
            }
        }
        let (got, want) = (
            table_rows(&session, Some(v)).await?,
            table_rows(&replay, None).await?,
        );
        if got != want {
            report.anomalies.push(format!(
                "v{v} rows differ from serial replay after: {}\n  history: {got:?}\n  serial:  {want:?}",
                r.sql
            ));
            break;
        }
    }
    // Failures: a statement that failed in the history must fail serially too (at its snapshot
    // it saw a committed prefix, so failing is only acceptable for reasons of its own, e.g. a
    // MERGE whose source matched one target row twice after coercion).
    for r in &records {
        if let Some(f) = &r.failed {
            if f.contains("more than one source row") || f.contains("multiple source rows") {
                report.failed_alike += 1;
            } else {
                report
                    .anomalies
                    .push(format!("unexpected failure: {f}: {}", r.sql));
            }
        }
    }
    Ok(report)
}
