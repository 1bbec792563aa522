//! Exhaustive small scopes: every interleaving of the phases of two transactions over a small
//! operation alphabet, each judged by the oracle — the conflict matrix generated, not hand-written.

use std::collections::BTreeMap;

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Prepared, SqlSession};
use delta_rlc_engine::EngineError;

use crate::model::{Model, Op, Pred, Row};
use crate::oracle::{judge, Anomaly, Outcome, TxnRecord};

/// The alphabet: a blind append, a reading append, DELETE, UPDATE, MERGE, NMBS MERGE, a MERGE whose
/// MATCHED clause has a condition, OPTIMIZE.
pub fn alphabet() -> Vec<Op> {
    vec![
        Op::Insert(vec![(900, 5, 1)]),
        Op::InsertSelect {
            pred: Pred::KBetween(0, 4),
            offset: 5000,
        },
        Op::Delete(Pred::KBetween(10, 12)),
        Op::Delete(Pred::KBetween(60, 62)),
        Op::UpdateV {
            pred: Pred::KBetween(20, 21),
            add: 1,
        },
        Op::UpdateV {
            pred: Pred::KBetween(20, 21),
            add: 2,
        },
        Op::Merge(vec![(30, 7), (950, 7)]),
        Op::MergeNmbs {
            rows: vec![(31, 8)],
            g: 3,
        },
        // Updates k = 13 (g = 1) and matches k = 11 (g = 3) without changing it: a kept row the
        // DELETE of 10..12 removes from the same file (`ReadSet::kept_rows`).
        Op::MergeWhenG {
            rows: vec![(11, 9), (13, 9)],
            g: 1,
        },
        Op::Optimize,
    ]
}

/// The six interleavings of A.start, A.commit, B.start, B.commit that keep each start first.
pub fn interleavings() -> Vec<[(usize, bool); 4]> {
    let mut out = Vec::new();
    let phases = [(0usize, false), (0, true), (1, false), (1, true)];
    let mut idx = [0usize, 1, 2, 3];
    permute(&mut idx, 0, &mut |p| {
        let seq = [phases[p[0]], phases[p[1]], phases[p[2]], phases[p[3]]];
        let pos = |t: usize, c: bool| seq.iter().position(|x| *x == (t, c)).unwrap_or(0);
        if pos(0, false) < pos(0, true) && pos(1, false) < pos(1, true) {
            out.push(seq);
        }
    });
    out
}

fn permute(a: &mut [usize; 4], k: usize, f: &mut dyn FnMut(&[usize; 4])) {
    if k == a.len() {
        f(a);
        return;
    }
    for i in k..a.len() {
        a.swap(k, i);
        permute(a, k + 1, f);
        a.swap(k, i);
    }
}

#[derive(Debug, Default, Clone)]
pub struct Matrix {
    /// (opA, opB) → (committed, aborted, reconciled) counts over the interleavings.
    pub cells: BTreeMap<(String, String), (u64, u64, u64)>,
    pub anomalies: Vec<(String, Anomaly)>,
    pub runs: u64,
}

pub async fn run_pair(
    a: &Op,
    b: &Op,
    order: &[(usize, bool); 4],
    conflict: &ConflictConfig,
    n: u64,
) -> Result<(Vec<Outcome>, u64, Vec<Anomaly>), EngineError> {
    let location = format!("memory://exhaustive-{n}/t");
    let mut s = SqlSession::new(Env::deterministic(n), conflict.clone());
    s.register("t", &location);
    s.execute("CREATE TABLE t (k BIGINT NOT NULL, v BIGINT NOT NULL, g INT NOT NULL)")
        .await?;
    let mut model = Model::new();
    for f in 0..2i64 {
        let op = Op::Insert((0..50).map(|i| (f * 50 + i, i % 10, i % 4)).collect());
        s.execute(&op.sql()).await?;
        op.apply(&mut model, 0, &|_, _| false);
    }
    for r in model.values_mut() {
        *r = Row {
            by_blind_append: false,
            ..r.clone()
        };
    }
    let base = s.table(&location)?.snapshot(None).await?.version;
    let ops = [a.for_txn(0), b.for_txn(1)];
    let mut txns: [Option<Box<delta_rlc_engine::Transaction>>; 2] = [None, None];
    let mut records: Vec<TxnRecord> = ops
        .iter()
        .map(|op| TxnRecord {
            op: op.clone(),
            read_version: 0,
            isolation: delta_rlc_engine::conflict::IsolationLevel::Serializable,
            txn_id: String::new(),
            affected: None,
            outcome: Outcome::Empty,
            written: vec![],
        })
        .collect();
    let mut reconciled = 0u64;
    for (t, commit) in order {
        let (Some(rec), Some(slot)) = (records.get_mut(*t), txns.get_mut(*t)) else {
            continue;
        };
        if !commit {
            if let Prepared::Write(tx) = s.prepare(&rec.op.sql()).await? {
                rec.read_version = tx.read_snapshot.as_ref().map(|x| x.version).unwrap_or(0);
                rec.isolation = tx.isolation_level();
                rec.affected = tx.affected_rows;
                rec.written = tx
                    .adds()
                    .filter(|x| x.deletion_vector.is_none())
                    .map(|x| x.path.clone())
                    .collect();
                *slot = Some(tx);
            }
        } else if let Some(tx) = slot.take() {
            rec.outcome = match tx.commit().await {
                Ok(r) => {
                    reconciled += r
                        .events
                        .iter()
                        .filter(|e| !e.name.as_str().starts_with("delta.dml"))
                        .count() as u64;
                    match r.version {
                        Some(v) if r.attempts > 0 => Outcome::Committed(v),
                        _ => Outcome::Empty,
                    }
                }
                Err(EngineError::Conflict(c)) => Outcome::Aborted(c.kind.name().to_string()),
                Err(e) => Outcome::Failed(e.to_string()),
            };
        }
    }
    let anomalies = judge(&s, &location, &model, base, &records).await;
    Ok((
        records.into_iter().map(|r| r.outcome).collect(),
        reconciled,
        anomalies,
    ))
}

/// Runs the whole matrix under one configuration.
pub async fn run_matrix(conflict: &ConflictConfig) -> Result<Matrix, EngineError> {
    let mut m = Matrix::default();
    let ops = alphabet();
    let mut n = 0u64;
    for a in &ops {
        for b in &ops {
            for order in interleavings() {
                n += 1;
                let (outcomes, rec, anomalies) = run_pair(
                    a,
                    b,
                    &order,
                    conflict,
                    n + if conflict.legacy { 1_000_000 } else { 0 },
                )
                .await?;
                m.runs += 1;
                let cell = m
                    .cells
                    .entry((a.name().to_string(), b.name().to_string()))
                    .or_default();
                for o in &outcomes {
                    match o {
                        Outcome::Aborted(_) => cell.1 += 1,
                        _ => cell.0 += 1,
                    }
                }
                cell.2 += rec;
                for an in anomalies {
                    m.anomalies
                        .push((format!("{} | {} | {order:?}", a.sql(), b.sql()), an));
                }
            }
        }
    }
    Ok(m)
}
