//! `delta-rlc`: the command line. Argument parsing and printing only; the engine does the work.
//! Every failure prints one line to stderr and exits non-zero (2 bad input, 3 conflict, 4 not found,
//! 5 unsupported, 1 anything else).

mod bench;
mod demo;
mod lost_responses;
mod output;
mod repl;
mod scenario;
mod writers;

use std::process::ExitCode;

/// mimalloc instead of the system allocator: the engine allocates and frees many large arrow
/// buffers per statement, and glibc returns each large one to the kernel (an mmap, page faults on
/// first touch, an munmap) — a third of a 10M-row MERGE's samples in `perf`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Describe, SqlSession};
use delta_rlc_engine::{EngineError, ErrorKind};

#[derive(Parser)]
#[command(
    name = "delta-rlc",
    version,
    about = "A Delta Lake engine with row-level concurrency"
)]
struct Cli {
    /// Conflict-checker setting `key=value` (repeatable): legacy, isolation, maxAttempts,
    /// retryOnConflict, reconcile.maxMillis, reconcile.maxBytes, tier switches.
    #[arg(long = "conf", global = true)]
    conf: Vec<String>,
    /// Print machine-readable JSON instead of tables (same as --format json).
    #[arg(long, global = true)]
    json: bool,
    /// How `sql` prints query rows: table (first 10,000 rows), json, or csv / ndjson (streamed:
    /// every row, in bounded memory).
    #[arg(long, global = true, value_enum)]
    format: Option<output::Format>,
    /// Memory a statement's joins may hold before they spill to disk (a MERGE's join and source;
    /// e.g. 1.5GB, 512MB, or bytes). Default: no limit (or DELTA_RLC_MEMORY_LIMIT).
    #[arg(long = "memory-limit", global = true)]
    memory_limit: Option<String>,
    /// Re-run a statement that aborted on a true conflict up to N more times, planned again at
    /// the latest version (off by default; a session's `SET rlc.retryOnConflict = n` too). Only
    /// for statements whose input does not come from reading the table outside the statement.
    #[arg(long = "retry-on-conflict", global = true, value_name = "N")]
    retry_on_conflict: Option<u32>,
    /// After each writing statement, print on stderr the requests it sent to its table's store
    /// (by kind) and its critical path (the longest chain of round trips).
    #[arg(long, short = 'v', global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one SQL statement. Tables are referenced by path: './data/t' or delta.`s3://bucket/t`.
    /// With `-f FILE` (or `-f -` for standard input), every statement of a script, in order, in
    /// one session; the first failing statement stops the script with its exit code.
    Sql {
        statement: Option<String>,
        #[arg(short = 'f', long = "file", conflicts_with = "statement")]
        file: Option<std::path::PathBuf>,
        /// With -f: run every statement, print each error, and exit with the first error's code.
        #[arg(long, requires = "file")]
        continue_on_error: bool,
    },
    /// An interactive SQL shell: statements end with `;`; `.quit` or end of input leaves. Errors
    /// are printed and the shell goes on.
    Shell,
    /// Commit history of a table.
    History {
        table: String,
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Columns of a table (at a version with --at-version).
    Describe {
        table: String,
        #[arg(long = "at-version")]
        at_version: Option<u64>,
    },
    /// Conflict playground: run scenario files (TOML, see docs/scenarios.md).
    Scenario {
        #[command(subcommand)]
        action: ScenarioAction,
    },
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
    /// A guided demo on a local table: what delta-rlc is for.
    Demo {
        /// Folder for the demo tables (default: a temporary folder).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

#[derive(Subcommand)]
enum ScenarioAction {
    /// Run scenario files; exit 0 only if every expectation holds.
    Run {
        files: Vec<std::path::PathBuf>,
        /// Keep the scenario tables in this folder (default: a temporary folder).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
    /// Print the concurrency matrix (docs/concurrency.md) from the scenario files under DIR:
    /// every overlapping pair with this engine's outcome beside OSS Delta's (a legacy run).
    Matrix {
        #[arg(default_value = "tests/scenarios")]
        dir: std::path::PathBuf,
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

fn exit_code(e: &EngineError) -> u8 {
    match e.kind() {
        ErrorKind::InvalidArgument => 2,
        ErrorKind::Conflict => 3,
        ErrorKind::NotFound => 4,
        ErrorKind::Unsupported => 5,
        _ => 1,
    }
}

pub(crate) fn one_line(e: &EngineError) -> String {
    e.to_string().replace('\n', " ")
}

/// `delta-rlc sim --values`: value-class histories judged by serial replay; stops at the first
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
                "value history DELTA_SIM_SEED={seed} (delta-rlc sim --values --seeds 1 --start {seed}): {}",
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
    let mut conflict = ConflictConfig::from_env()?;
    for c in &cli.conf {
        let (k, v) = c
            .split_once('=')
            .ok_or_else(|| EngineError::invalid(format!("--conf {c:?} is not key=value")))?;
        conflict.set(k, v)?;
    }
    if let Some(n) = cli.retry_on_conflict {
        conflict.reexecution = delta_rlc_engine::txn::reexecute::Reexecution {
            reruns: delta_rlc_engine::txn::reexecute::Reexecution::reruns(n)?.reruns,
            ..conflict.reexecution
        };
    }
    let limit = cli
        .memory_limit
        .clone()
        .or_else(|| std::env::var("DELTA_RLC_MEMORY_LIMIT").ok());
    let env = Env {
        memory_limit: limit
            .as_deref()
            .map(delta_rlc_engine::env::parse_byte_size)
            .transpose()?,
        ..Env::default()
    };
    let session = SqlSession::new(env, conflict);
    output::set_verbose(cli.verbose);
    match cli.command {
        Command::Sql {
            statement,
            file,
            continue_on_error,
        } => {
            let format = cli.format.unwrap_or(if cli.json {
                output::Format::Json
            } else {
                output::Format::Table
            });
            let statements = match (statement, file) {
                (Some(s), None) => vec![s],
                (None, Some(f)) => {
                    let text = if f.as_os_str() == "-" {
                        std::io::read_to_string(std::io::stdin())
                    } else {
                        std::fs::read_to_string(&f)
                    }
                    .map_err(|e| {
                        EngineError::invalid(format!("cannot read {}: {e}", f.display()))
                    })?;
                    delta_rlc_engine::sql::split_statements(&text)?
                }
                _ => {
                    return Err(EngineError::invalid(
                        "give one statement, or a script with -f FILE",
                    ))
                }
            };
            let many = statements.len() > 1;
            let mut first_error: Option<u8> = None;
            for (i, st) in statements.iter().enumerate() {
                let res = repl::run_statement(&session, st, format)
                    .await
                    .map_err(|e| {
                        if many {
                            repl::prefix_error(e, &format!("statement {}", i + 1))
                        } else {
                            e
                        }
                    });
                match res {
                    Ok(()) => {}
                    Err(e) if continue_on_error => {
                        eprintln!("error: {}", one_line(&e));
                        first_error.get_or_insert(exit_code(&e));
                    }
                    Err(e) => return Err(e),
                }
            }
            if let Some(code) = first_error {
                // Every error is printed; the exit code is the first one's.
                std::process::exit(i32::from(code));
            }
        }
        Command::Shell => {
            repl::shell(&session, cli.format.unwrap_or(output::Format::Table)).await?
        }
        Command::History { table, limit } => {
            let out = session
                .describe(&table, Describe::History, None, limit)
                .await?;
            output::print_statement(&out, cli.json)?;
        }
        Command::Describe { table, at_version } => {
            let out = session
                .describe(&table, Describe::Columns, at_version, None)
                .await?;
            output::print_statement(&out, cli.json)?;
        }
        Command::Demo { dir } => demo::run(dir).await?,
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
        Command::Scenario {
            action: ScenarioAction::Run { files, dir },
        } => {
            let overrides: Vec<(String, String)> = cli
                .conf
                .iter()
                .filter_map(|c| {
                    c.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                })
                .collect();
            scenario::run(&files, dir, &overrides, cli.json).await?;
        }
        Command::Scenario {
            action: ScenarioAction::Matrix { dir },
        } => {
            let work = tempfile::tempdir().map_err(|e| EngineError::Internal(e.to_string()))?;
            let rows = delta_rlc_engine::scenario::matrix::matrix(&dir, work.path()).await?;
            print!("{}", delta_rlc_engine::scenario::matrix::to_markdown(&rows));
        }
    }
    Ok(())
}

/// Stack for the thread that runs statements and for the runtime's workers. Generated SQL nests
/// deeply (100k-term OR chains); DataFusion grows its own stack in its recursive passes, and this
/// covers the rest (our expression rewrites, dropping deep trees). Reserved, not committed, memory.
const STATEMENT_STACK_BYTES: usize = 512 << 20;

fn main() -> ExitCode {
    // A closed stdout (`delta-rlc sql … | head`) ends the process quietly, as it does for any
    // Unix tool, instead of a panic in a print: Rust starts programs with SIGPIPE ignored.
    #[cfg(unix)]
    // SAFETY: called first in main, before any thread exists; restores the default disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    delta_rlc_engine::warnings::set_warning_sink(|m| eprintln!("warning: {m}"));
    let runner = std::thread::Builder::new()
        .name("delta-rlc-main".into())
        .stack_size(STATEMENT_STACK_BYTES)
        .spawn(move || run_cli(cli));
    match runner.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => {
            eprintln!("error: internal error: the statement thread panicked");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: cannot start the statement thread: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_cli(cli: Cli) -> ExitCode {
    let json = cli.json;
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(STATEMENT_STACK_BYTES / 4)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if json {
                let kind = format!("{:?}", e.kind());
                let mut obj = serde_json::json!({"error": one_line(&e), "kind": kind});
                if let EngineError::Conflict(c) = &e {
                    obj["conflict"] = serde_json::json!({
                        "kind": c.kind.name(), "winningVersion": c.winning_version,
                        "winningOperation": c.winning_operation, "files": c.files,
                        "predicate": c.predicate, "tier": c.tier,
                    });
                }
                eprintln!("{obj}");
            } else {
                eprintln!("error: {}", one_line(&e));
            }
            ExitCode::from(exit_code(&e))
        }
    }
}
