//! `delta-rlc`: the command line. Argument parsing and printing only; the engine does the work.
//! Every failure prints one line to stderr and exits non-zero (2 bad input, 3 conflict, 4 not found,
//! 5 unsupported, 1 anything else).

mod common;
mod demo;
mod output;
mod repl;
mod scenario;

use std::process::ExitCode;

/// mimalloc instead of the system allocator: the engine allocates and frees many large arrow
/// buffers per statement, and glibc returns each large one to the kernel (an mmap, page faults on
/// first touch, an munmap) — a third of a 10M-row MERGE's samples in `perf`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use delta_rlc_engine::sql::Describe;
use delta_rlc_engine::EngineError;

use common::exit_code;
pub(crate) use common::one_line;

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

async fn run(cli: Cli) -> Result<(), EngineError> {
    let conflict = common::conflict_config(&cli.conf, cli.retry_on_conflict)?;
    let session = common::session(conflict, cli.memory_limit.clone())?;
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::run_main(cli.json, move || run(cli))
}
