//! `delta-rlc-dev bench lost-responses`: issue #48's zero-ambiguity campaign. Writers commit to one
//! table while their commit puts lose a share of their responses (the store applied the put, the
//! writer hears nothing) and of their requests (nothing applied, the writer hears nothing), in the
//! store's own commit primitive (`TableStore::with_commit_faults`): the local disk's, S3's or
//! Azure's. After every statement its effect is read back through a fault-free handle and held
//! against what the statement reported:
//!
//! - committed: its effect is there, once;
//! - a conflict or any other failure: nothing of it is there (else "reported failed, landed");
//! - unknown (`CommitUnknown`): resolved by that read — landed or not, never half, never twice.
//!
//! At the end every row is checked against the writers' models (an INSERT applied twice shows as
//! a duplicate id, an UPDATE applied twice as a counter ahead of its model), the log is read for
//! transaction ids committed at two versions (a commit put again with the same actions leaves the
//! rows as once: a re-added path replaces itself), and reading the whole table reads every data
//! file the log references, so a file of a landed commit deleted by any cleanup fails the run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::{Array, Int64Array};
use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::error::ErrorKind;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::EngineError;
use delta_rlc_storage::{CommitFaults, TableStore};

/// `delta-rlc-dev bench lost-responses` (module header).
#[derive(clap::Args)]
pub struct LostResponsesArgs {
    /// Table location: a local path, s3://…, az://… or memory://… (credentials from the
    /// environment). A table is created there: it must not hold one.
    #[arg(long)]
    location: String,
    /// Stop once this many faults (lost responses and lost requests) have been injected.
    #[arg(long, default_value_t = 1_000)]
    losses: u64,
    #[arg(long, default_value_t = 4)]
    writers: u64,
    /// Commit puts whose response is lost, per mille.
    #[arg(long, default_value_t = 400)]
    lose_response: u64,
    /// Commit puts whose request is lost, per mille.
    #[arg(long, default_value_t = 200)]
    lose_request: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// What the statements reported and what reading back found.
#[derive(Default, Debug, Clone)]
struct Tally {
    statements: u64,
    committed: u64,
    conflicts: u64,
    failed: u64,
    unknown_landed: u64,
    unknown_not_landed: u64,
    /// Violations: an id present twice, or a counter ahead of every outcome the statement allows.
    applied_twice: u64,
    /// Violations: reported as a conflict or failure, yet its effect is in the table.
    failed_but_landed: u64,
    /// Violations: reported committed, yet its effect is not (or not exactly) there.
    committed_but_missing: u64,
    /// Violations: an unknown outcome the read matches neither way.
    unresolved: u64,
    examples: Vec<String>,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.statements += o.statements;
        self.committed += o.committed;
        self.conflicts += o.conflicts;
        self.failed += o.failed;
        self.unknown_landed += o.unknown_landed;
        self.unknown_not_landed += o.unknown_not_landed;
        self.applied_twice += o.applied_twice;
        self.failed_but_landed += o.failed_but_landed;
        self.committed_but_missing += o.committed_but_missing;
        self.unresolved += o.unresolved;
        self.examples.extend(o.examples.iter().take(5).cloned());
    }

    fn violations(&self) -> u64 {
        self.applied_twice + self.failed_but_landed + self.committed_but_missing + self.unresolved
    }

    fn violation(&mut self, what: String) {
        if self.examples.len() < 5 {
            self.examples.push(what);
        }
    }
}

/// The rows of the touched ids: id → every counter found (more than one = a duplicate).
type Seen = BTreeMap<i64, Vec<i64>>;

/// What the table should hold for the touched ids: id → counter, absent = no row.
type Expect = BTreeMap<i64, i64>;

pub async fn run(args: LostResponsesArgs, conflict: ConflictConfig) -> Result<(), EngineError> {
    let base = TableStore::open(&args.location)?;
    let faults = CommitFaults::new(args.lose_response, args.lose_request, args.seed);
    let faulty = base.with_commit_faults(Arc::clone(&faults));
    let reader_store = base.clone();
    let reader = Arc::new(session(&args.location, base, &conflict));
    reader
        .execute(
            "CREATE TABLE t (id BIGINT NOT NULL, w BIGINT, k BIGINT) \
             TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        )
        .await?;
    let stop = Arc::new(AtomicBool::new(false));
    let statements = Arc::new(AtomicU64::new(0));
    // A bound on statements, so a run with no faults armed ends too.
    let max_statements = args.losses.saturating_mul(20).max(100);
    let mut tasks = Vec::new();
    for w in 0..args.writers.max(1) {
        let writer = session(&args.location, faulty.clone(), &conflict);
        let (reader, faults, stop, statements) = (
            Arc::clone(&reader),
            Arc::clone(&faults),
            Arc::clone(&stop),
            Arc::clone(&statements),
        );
        let (losses, seed) = (args.losses, args.seed);
        tasks.push(tokio::spawn(async move {
            let mut model = Writer::new(w, seed);
            let mut tally = Tally::default();
            while !stop.load(Ordering::Relaxed) {
                let (_, responses, requests) = faults.counts();
                if responses + requests >= losses
                    || statements.fetch_add(1, Ordering::Relaxed) >= max_statements
                {
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
                model.step(&writer, &reader, &mut tally).await?;
            }
            Ok::<(Writer, Tally), EngineError>((model, tally))
        }));
    }
    let mut total = Tally::default();
    let mut expect = Expect::new();
    for t in tasks {
        let (model, tally) = t
            .await
            .map_err(|e| EngineError::Internal(format!("a writer panicked: {e}")))??;
        total.add(&tally);
        expect.extend(model.live);
    }
    // The whole table: every file the log references is read; every row is some writer's.
    let all = rows(&reader, "SELECT id, k FROM t").await?;
    let mut final_mismatches = 0u64;
    for (id, ks) in &all {
        if ks.len() > 1 {
            total.applied_twice += 1;
            total.violation(format!("id {id} is in the table {} times", ks.len()));
        } else if expect.get(id) != ks.first() {
            final_mismatches += 1;
            total.violation(format!(
                "id {id}: the table has {ks:?}, the model {:?}",
                expect.get(id)
            ));
        }
    }
    let missing = expect.keys().filter(|id| !all.contains_key(id)).count() as u64;
    // A statement applied twice with the same actions leaves the rows as once (a re-added path
    // replaces itself), so the log is the judge: one commit per transaction id.
    let twice = commits_per_transaction(&reader_store).await?;
    if twice > 0 {
        total.applied_twice += twice;
        total.violation(format!(
            "{twice} transaction id(s) committed at two versions"
        ));
    }
    let (puts, responses, requests) = faults.counts();
    let version = reader.table(&args.location)?.snapshot(None).await?.version;
    println!(
        "lost-responses at {}: {} writers, {} statements — {} committed, {} conflicts, {} failed, {} unknown (landed {}, not landed {}); \
         {} commit puts, {} responses lost, {} requests lost ({} faults); table at version {version}, {} rows, every file read; \
         violations: applied twice {}, reported failed but landed {}, committed but missing {}, unknown unresolved {}, final rows off {}, rows missing {}",
        args.location,
        args.writers,
        total.statements,
        total.committed,
        total.conflicts,
        total.failed,
        total.unknown_landed + total.unknown_not_landed,
        total.unknown_landed,
        total.unknown_not_landed,
        puts,
        responses,
        requests,
        responses + requests,
        all.len(),
        total.applied_twice,
        total.failed_but_landed,
        total.committed_but_missing,
        total.unresolved,
        final_mismatches,
        missing,
    );
    let violations = total.violations() + final_mismatches + missing;
    if violations > 0 {
        let shown: Vec<String> = total
            .examples
            .iter()
            .take(3)
            .map(|e| e.chars().take(240).collect())
            .collect();
        return Err(EngineError::Internal(format!(
            "{violations} violation(s), e.g. {}",
            shown.join("; ")
        )));
    }
    Ok(())
}

/// Transaction ids (`commitInfo.txnId`) found in more than one commit of the log.
async fn commits_per_transaction(store: &TableStore) -> Result<u64, EngineError> {
    use futures::StreamExt;
    let commits: Vec<String> = store
        .list("_delta_log")
        .await?
        .into_iter()
        .map(|o| o.path)
        .filter(|p| p.ends_with(".json"))
        .collect();
    let bodies: Vec<_> = futures::stream::iter(commits)
        .map(|p| {
            let store = store.clone();
            async move { store.get(&p).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for body in bodies {
        let body = body?;
        for line in body.split(|b| *b == b'\n') {
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            if let Some(id) = v.pointer("/commitInfo/txnId").and_then(|t| t.as_str()) {
                *seen.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    Ok(seen.values().filter(|n| **n > 1).count() as u64)
}

fn session(location: &str, store: TableStore, conflict: &ConflictConfig) -> SqlSession {
    let mut s = SqlSession::new(Env::default(), conflict.clone());
    s.use_store(location, store);
    s.register("t", location);
    s
}

/// `id → every k` of the rows `sql` returns (columns id, k).
async fn rows(session: &SqlSession, sql: &str) -> Result<Seen, EngineError> {
    let out = session.execute(sql).await?;
    let mut seen = Seen::new();
    for b in out.batches.iter() {
        let col = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .cloned()
                .ok_or_else(|| EngineError::Internal("id and k are BIGINT".into()))
        };
        let (ids, ks) = (col(0)?, col(1)?);
        for r in 0..b.num_rows() {
            let k = if ks.is_null(r) { -1 } else { ks.value(r) };
            seen.entry(ids.value(r)).or_default().push(k);
        }
    }
    Ok(seen)
}

/// One writer: its own ids (a region no other writer touches) and what the table holds of them.
struct Writer {
    w: u64,
    rng: u64,
    next: i64,
    live: Expect,
}

impl Writer {
    fn new(w: u64, seed: u64) -> Self {
        Writer {
            w,
            rng: (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (w + 1)) | 1,
            next: (w as i64 + 1) * 1_000_000_000,
            live: Expect::new(),
        }
    }

    fn draw(&mut self, below: u64) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % below.max(1)
    }

    /// One statement: the SQL, the ids it touches, and what they hold if it lands.
    fn plan(&mut self) -> (String, Expect, Vec<i64>) {
        let pick = self.draw(100);
        let existing: Vec<i64> = self.live.keys().copied().collect();
        let chosen = existing
            .get(self.draw(existing.len() as u64) as usize)
            .copied();
        match (pick, chosen) {
            (0..=44, _) | (_, None) => {
                let (a, b) = (self.next, self.next + 1);
                self.next += 2;
                let sql = format!(
                    "INSERT INTO t VALUES ({a}, {}, 0), ({b}, {}, 0)",
                    self.w, self.w
                );
                (sql, [(a, 0), (b, 0)].into(), vec![a, b])
            }
            (45..=84, Some(id)) => {
                let k = self.live.get(&id).copied().unwrap_or(0);
                let sql = format!("UPDATE t SET k = k + 1 WHERE id = {id}");
                (sql, [(id, k + 1)].into(), vec![id])
            }
            (_, Some(id)) => (
                format!("DELETE FROM t WHERE id = {id}"),
                Expect::new(),
                vec![id],
            ),
        }
    }

    async fn step(
        &mut self,
        writer: &SqlSession,
        reader: &SqlSession,
        tally: &mut Tally,
    ) -> Result<(), EngineError> {
        let (sql, after, ids) = self.plan();
        let before: Expect = ids
            .iter()
            .filter_map(|id| self.live.get(id).map(|k| (*id, *k)))
            .collect();
        let outcome = writer.execute(&sql).await;
        tally.statements += 1;
        let list: Vec<String> = ids.iter().map(i64::to_string).collect();
        let seen = rows(
            reader,
            &format!("SELECT id, k FROM t WHERE id IN ({})", list.join(", ")),
        )
        .await?;
        if seen.values().any(|ks| ks.len() > 1) {
            tally.applied_twice += 1;
            tally.violation(format!("{sql}: {seen:?}"));
            return Ok(());
        }
        let found: Expect = seen
            .iter()
            .filter_map(|(id, ks)| ks.first().map(|k| (*id, *k)))
            .collect();
        let landed = found == after;
        let not_landed = found == before;
        // A counter past both outcomes: the UPDATE was applied more than once.
        let past = |id: &i64| after.get(id).max(before.get(id)).copied();
        if ids
            .iter()
            .any(|id| found.get(id).is_some_and(|k| Some(*k) > past(id)))
        {
            tally.applied_twice += 1;
            tally.violation(format!("{sql}: found {found:?}"));
        } else {
            self.judge(&sql, outcome, landed, not_landed, &found, tally);
        }
        // The model follows the table (a violation is already counted).
        for id in &ids {
            match found.get(id) {
                Some(k) => self.live.insert(*id, *k),
                None => self.live.remove(id),
            };
        }
        Ok(())
    }

    /// Holds a statement's reported outcome against what reading back found.
    fn judge(
        &self,
        sql: &str,
        outcome: Result<delta_rlc_engine::sql::StatementOutput, EngineError>,
        landed: bool,
        not_landed: bool,
        found: &Expect,
        tally: &mut Tally,
    ) {
        match outcome {
            Ok(_) => {
                tally.committed += 1;
                if !landed {
                    tally.committed_but_missing += 1;
                    tally.violation(format!("{sql}: committed, found {found:?}"));
                }
            }
            Err(e) if e.kind() == ErrorKind::CommitUnknown => match (landed, not_landed) {
                (true, _) => tally.unknown_landed += 1,
                (false, true) => tally.unknown_not_landed += 1,
                (false, false) => {
                    tally.unresolved += 1;
                    tally.violation(format!("{sql}: unknown, found {found:?}"));
                }
            },
            Err(e) => {
                match e {
                    EngineError::Conflict(_) => tally.conflicts += 1,
                    _ => tally.failed += 1,
                }
                if !not_landed {
                    tally.failed_but_landed += 1;
                    tally.violation(format!("{sql}: failed ({e}), found {found:?}"));
                }
            }
        }
    }
}
