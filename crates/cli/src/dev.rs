//! `delta-rlc-dev`: the developer tooling beside the product command line (`delta-rlc`): the
//! deterministic simulator, the load generators the multi-process tests drive, and the
//! benchmark drivers behind BENCHMARKS.md. Argument parsing and printing only; the engine and
//! the `sim` crate do the work. Failures print one line and exit non-zero, as `delta-rlc` does.

mod bench;
mod common;
mod lost_responses;
mod writers;

use std::process::ExitCode;

/// mimalloc, as in `delta-rlc` (benchmarks measure what the product runs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use delta_rlc_engine::EngineError;

#[derive(Parser)]
#[command(
    name = "delta-rlc-dev",
    version,
    about = "delta-rlc's simulator, load generators and benchmark drivers"
)]
struct Cli {
    /// Conflict-checker setting `key=value` (repeatable), as for `delta-rlc`.
    #[arg(long = "conf", global = true)]
    conf: Vec<String>,
    /// Errors as JSON on stderr.
    #[arg(long, global = true)]
    json: bool,
    /// Memory a statement's joins may hold before they spill (as for `delta-rlc`).
    #[arg(long = "memory-limit", global = true)]
    memory_limit: Option<String>,
    /// Re-run a statement that aborted on a true conflict up to N more times.
    #[arg(long = "retry-on-conflict", global = true, value_name = "N")]
    retry_on_conflict: Option<u32>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Deterministic simulation campaign judged by the serial-replay oracle.
    Sim {
        /// Number of seeded histories (stops earlier when --minutes is reached).
        #[arg(long, default_value_t = 1000)]
        seeds: u64,
        #[arg(long)]
        minutes: Option<f64>,
        /// First seed (replay one with --seeds 1 --start SEED, or DELTA_SIM_SEED).
        #[arg(long, default_value_t = 1)]
        start: u64,
        /// Transactions per history.
        #[arg(long, default_value_t = 10)]
        txns: usize,
        /// Value-class histories (floats with -0.0/NaN, strings, decimals of two scales,
        /// timestamps, NULLs, multi-column MERGE keys) judged by serial replay.
        #[arg(long)]
        values: bool,
        /// Schema-change histories: type widening on every table, a third of the operations
        /// widening `g` or writing and matching values only the widened type holds.
        #[arg(long)]
        schema_changes: bool,
        /// Metadata-pair histories: half the operations are ALTERs racing each other.
        #[arg(long)]
        metadata_pairs: bool,
        /// Identity histories: an identity column every insert generates values for, a column
        /// generated from it and a rule on it (the oracle's check I).
        #[arg(long)]
        identity: bool,
        /// Added-column histories: columns added and renamed while statements write and match
        /// values only an added column holds (by name, by position, `SET *` / `INSERT *`).
        #[arg(long)]
        added_values: bool,
    },
    /// In-process measurements for BENCHMARKS.md (see scripts/bench.py).
    Bench {
        #[command(subcommand)]
        action: BenchAction,
    },
    /// Load generators used by the multi-process tests and benchmarks.
    Stress {
        #[command(subcommand)]
        action: StressAction,
    },
}

#[derive(Subcommand)]
enum BenchAction {
    Tier1 {
        #[arg(long)]
        dir: std::path::PathBuf,
        #[arg(long, default_value_t = 10000)]
        files: usize,
        #[arg(long, default_value_t = 4)]
        preds: usize,
    },
    MergeExact {
        #[arg(long)]
        dir: std::path::PathBuf,
        #[arg(long, default_value_t = 4000000)]
        keys: usize,
        #[arg(long, default_value_t = 1000000)]
        changed: usize,
    },
    MakeLog {
        #[arg(long)]
        dir: std::path::PathBuf,
        #[arg(long, default_value_t = 100000)]
        files: usize,
    },
    LoadSnapshot {
        #[arg(long)]
        dir: std::path::PathBuf,
        /// Then commit one small version and time the handle's incremental load of it (changes
        /// the table).
        #[arg(long)]
        incremental: bool,
    },
    Capture {
        #[arg(long)]
        dir: std::path::PathBuf,
        #[arg(long, default_value_t = 4000000)]
        rows: u64,
    },
    /// Many writers on one table in an in-process store with S3's latency (crates/cli/src/writers.rs).
    Writers(writers::WritersArgs),
    /// Writers whose commit puts lose responses and requests; every outcome checked against the
    /// table (crates/cli/src/lost_responses.rs).
    LostResponses(lost_responses::LostResponsesArgs),
}

#[derive(Subcommand)]
enum StressAction {
    /// Random DELETE / UPDATE / MERGE on this writer's own keys [writer*1000, writer*1000+1000) of a
    /// table (k BIGINT, v BIGINT); prints one JSON line per committed statement (its intent) and a
    /// summary, so a test can recompute the expected rows. `--optimize` loops OPTIMIZE instead
    /// (`--zorder` for ZORDER BY (v, k)).
    Soak {
        table: String,
        #[arg(long, default_value_t = 0)]
        writer: u64,
        #[arg(long, default_value_t = 50)]
        ops: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        optimize: bool,
        #[arg(long)]
        zorder: bool,
    },
    /// Runs a statement template in a loop for `seconds` (`{w}` = writer, `{n}` = iteration,
    /// `{n10}` = iteration * 10, `{lo}` = writer * region + (iteration * step) % region: the start
    /// of this statement's key range inside the writer's own region, `{new}` = 10^9 + writer *
    /// 10^8 + iteration * step: keys no writer has) against table `t`; a conflict counts as an
    /// abort and the loop goes on. Prints JSON: commits, aborts by kind, retries, rows changed,
    /// latencies of committed statements.
    Loop {
        table: String,
        #[arg(long)]
        sql: String,
        #[arg(long, default_value_t = 0)]
        writer: u64,
        #[arg(long, default_value_t = 30.0)]
        seconds: f64,
        /// Pause between statements (a periodic job, such as an ALTER every few seconds).
        #[arg(long, default_value_t = 0)]
        pause_ms: u64,
        /// Keys per writer, for `{lo}`.
        #[arg(long, default_value_t = 1)]
        region: u64,
        /// Keys per statement, for `{lo}` and `{new}`.
        #[arg(long, default_value_t = 0)]
        step: u64,
    },
    /// Append `count` single-row commits `(writer * 1000000 + i, writer)` to a table with columns
    /// (id BIGINT, writer INT); prints one JSON line with commits and retries.
    Append {
        table: String,
        #[arg(long, default_value_t = 100)]
        count: u64,
        #[arg(long, default_value_t = 0)]
        writer: u64,
    },
}

/// `delta-rlc-dev sim --values`: value-class histories judged by serial replay; stops at the first
/// anomaly with the seed that reproduces it.
async fn value_campaign(
    start: u64,
    seeds: u64,
    minutes: Option<f64>,
    txns: usize,
) -> Result<(), EngineError> {
    use delta_rlc_sim::values::{run_values, value_config_for_seed, VALUE_CLASSES};
    let began = std::time::Instant::now();
    let (mut n, mut commits, mut empty, mut failed_alike) = (0u64, 0u64, 0u64, 0u64);
    let mut aborts = std::collections::BTreeMap::<String, u64>::new();
    let mut events = std::collections::BTreeMap::<String, u64>::new();
    for seed in start..start.saturating_add(seeds) {
        if minutes.is_some_and(|m| began.elapsed().as_secs_f64() > m * 60.0) {
            break;
        }
        let r = run_values(&value_config_for_seed(seed, txns)).await?;
        if !r.anomalies.is_empty() {
            return Err(EngineError::Internal(format!(
                "value history DELTA_SIM_SEED={seed} (delta-rlc-dev sim --values --seeds 1 --start {seed}): {}",
                r.anomalies.join("; ")
            )));
        }
        n += 1;
        commits += r.commits;
        empty += r.empty;
        failed_alike += r.failed_alike;
        for (k, v) in r.aborts {
            *aborts.entry(k).or_default() += v;
        }
        for (k, v) in r.events {
            *events.entry(k).or_default() += v;
        }
    }
    let out = serde_json::json!({
        "histories": n, "seconds": began.elapsed().as_secs_f64(), "anomalies": 0,
        "commits": commits, "emptyCommits": empty, "aborts": aborts, "failedAlike": failed_alike,
        "reconcileEvents": events, "valueClasses": VALUE_CLASSES,
    });
    println!("{out}");
    Ok(())
}

async fn run(cli: Cli) -> Result<(), EngineError> {
    let conflict = common::conflict_config(&cli.conf, cli.retry_on_conflict)?;
    let session = common::session(conflict, cli.memory_limit.clone())?;
    match cli.command {
        Command::Bench { action } => match action {
            BenchAction::Tier1 { dir, files, preds } => bench::tier1(&dir, files, preds).await?,
            BenchAction::MergeExact { dir, keys, changed } => {
                bench::merge_exact(&dir, keys, changed).await?
            }
            BenchAction::MakeLog { dir, files } => bench::make_log(&dir, files).await?,
            BenchAction::LoadSnapshot { dir, incremental } => {
                bench::load_snapshot(&dir, incremental).await?
            }
            BenchAction::Capture { dir, rows } => bench::capture(&dir, rows).await?,
            BenchAction::Writers(args) => writers::run(args, session.conflict.clone()).await?,
            BenchAction::LostResponses(args) => {
                lost_responses::run(args, session.conflict.clone()).await?
            }
        },
        Command::Sim {
            seeds,
            minutes,
            start,
            txns,
            values,
            schema_changes,
            metadata_pairs,
            identity,
            added_values,
        } => {
            let start = std::env::var("DELTA_SIM_SEED")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(start);
            if values {
                return value_campaign(start, seeds, minutes, txns).await;
            }
            let began = std::time::Instant::now();
            let mut total = delta_rlc_sim::sim::SimReport::default();
            let mut n = 0u64;
            for seed in start..start + seeds {
                if minutes.is_some_and(|m| began.elapsed().as_secs_f64() > m * 60.0) {
                    break;
                }
                let mut config = delta_rlc_sim::sim::config_for_seed(seed, txns);
                config.schema_changes = schema_changes;
                config.metadata_pairs = metadata_pairs;
                config.identity = identity;
                config.added_values = added_values;
                let r = delta_rlc_sim::sim::run(&config).await?;
                delta_rlc_sim::sim::accumulate(&mut total, &r);
                n += 1;
                if !r.anomalies.is_empty() {
                    return Err(EngineError::Internal(format!(
                        "DELTA_SIM_SEED={seed}: {:?}",
                        r.anomalies
                    )));
                }
            }
            let out = serde_json::json!({
                "histories": n, "seconds": began.elapsed().as_secs_f64(), "anomalies": 0,
                "commits": total.commits, "emptyCommits": total.empty, "aborts": total.aborts,
                "reconcileEvents": total.events, "faultsFired": total.faults_fired,
                "transientFaults": total.transient_faults,
            });
            println!("{out}");
        }
        Command::Stress {
            action:
                StressAction::Soak {
                    table,
                    writer,
                    ops,
                    seed,
                    optimize,
                    zorder,
                },
        } => {
            let mut session = session;
            session.register("t", &table);
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (writer + 1);
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let (mut commits, mut aborts) =
                (0u64, std::collections::BTreeMap::<String, u64>::new());
            let mut events: std::collections::BTreeMap<String, u64> = Default::default();
            for _ in 0..ops {
                let base = writer as i64 * 1000;
                let k = base + (next() % 1000) as i64;
                let d = (next() % 9) as i64 + 1;
                let (kind, stmt) = if optimize {
                    (
                        "optimize",
                        if zorder {
                            "OPTIMIZE t ZORDER BY (v, k)".to_string()
                        } else {
                            "OPTIMIZE t".to_string()
                        },
                    )
                } else {
                    match next() % 3 {
                        0 => ("delete", format!("DELETE FROM t WHERE k = {k}")),
                        1 => ("update", format!("UPDATE t SET v = v + {d} WHERE k = {k}")),
                        _ => ("merge", format!("MERGE INTO t USING (SELECT {k} AS k, {d} AS v) s ON t.k = s.k WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *")),
                    }
                };
                match session.execute(&stmt).await {
                    Ok(out) => {
                        commits += 1;
                        if let Some(c) = &out.commit {
                            for e in &c.events {
                                *events.entry(e.name.to_string()).or_default() += 1;
                            }
                        }
                        println!("{}", serde_json::json!({"op": kind, "k": k, "d": d}));
                    }
                    Err(EngineError::Conflict(c)) => {
                        *aborts.entry(c.kind.name().to_string()).or_default() += 1
                    }
                    Err(e) => return Err(e),
                }
            }
            println!(
                "{}",
                serde_json::json!({"summary": true, "writer": writer, "commits": commits, "aborts": aborts, "events": events})
            );
        }
        Command::Stress {
            action:
                StressAction::Loop {
                    table,
                    sql,
                    writer,
                    seconds,
                    pause_ms,
                    region,
                    step,
                },
        } => {
            let mut session = session;
            session.register("t", &table);
            let began = std::time::Instant::now();
            let (mut commits, mut retries, mut n) = (0u64, 0u64, 0u64);
            // Runs of a statement after a true conflict (`--retry-on-conflict`), committed or not.
            let mut reruns = 0u64;
            let mut rows_changed = 0u64;
            let mut aborts: std::collections::BTreeMap<String, u64> = Default::default();
            // Conflict-checker events of the commits, by name (and tier, for skipped files).
            let mut events: std::collections::BTreeMap<String, u64> = Default::default();
            let mut latencies: Vec<f64> = Vec::new();
            while began.elapsed().as_secs_f64() < seconds {
                if pause_ms > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(pause_ms)).await;
                }
                let region = region.max(1);
                let lo = writer.saturating_mul(region) + n.saturating_mul(step) % region;
                let new =
                    1_000_000_000 + writer.saturating_mul(100_000_000) + n.saturating_mul(step);
                let stmt = sql
                    .replace("{lo}", &lo.to_string())
                    .replace("{new}", &new.to_string())
                    .replace("{w}", &writer.to_string())
                    .replace("{n10}", &(n * 10).to_string())
                    .replace("{n}", &n.to_string());
                // A job whose statement aborts runs it again (a new transaction): aborted work
                // costs time, as it does for a real pipeline.
                let t0 = std::time::Instant::now();
                match session.execute(&stmt).await {
                    Ok(out) => {
                        n += 1;
                        commits += 1;
                        if let Some(c) = &out.commit {
                            retries += u64::from(c.attempts.saturating_sub(1));
                            reruns += c.earlier_runs.len() as u64;
                            rows_changed += c.affected_rows.unwrap_or(0);
                            for e in &c.events {
                                let key = match e.fields.get("tier").and_then(|t| t.as_str()) {
                                    Some(tier) => format!("{}/{tier}", e.name),
                                    None => e.name.to_string(),
                                };
                                *events.entry(key).or_default() += 1;
                            }
                        }
                        latencies.push(t0.elapsed().as_secs_f64() * 1000.0);
                    }
                    Err(EngineError::Conflict(c)) => {
                        reruns += u64::from(c.statement_runs.saturating_sub(1));
                        *aborts.entry(c.kind.name().to_string()).or_default() += 1
                    }
                    Err(e) => return Err(e),
                }
            }
            latencies.sort_by(|a, b| a.total_cmp(b));
            let pct = |p: f64| {
                latencies
                    .get(((latencies.len() as f64 - 1.0) * p).round().max(0.0) as usize)
                    .copied()
                    .unwrap_or(0.0)
            };
            println!(
                "{}",
                serde_json::json!({"writer": writer, "seconds": began.elapsed().as_secs_f64(), "commits": commits, "aborts": aborts,
                    "retries": retries, "reruns": reruns, "rowsChanged": rows_changed, "p50Ms": pct(0.5), "p99Ms": pct(0.99), "events": events})
            );
        }
        Command::Stress {
            action:
                StressAction::Append {
                    table,
                    count,
                    writer,
                },
        } => {
            let t = table.replace('\'', "''");
            let mut retries = 0u64;
            for i in 0..count {
                let out = session
                    .execute(&format!(
                        "INSERT INTO '{t}' VALUES ({}, {writer})",
                        writer * 1_000_000 + i
                    ))
                    .await?;
                retries += out
                    .commit
                    .map(|c| u64::from(c.attempts.saturating_sub(1)))
                    .unwrap_or(0);
            }
            println!(
                "{}",
                serde_json::json!({"writer": writer, "commits": count, "retries": retries})
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::run_main(cli.json, move || run(cli))
}
