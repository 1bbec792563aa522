//! Running statements one after another: scripts (`sql -f`) and the interactive shell, both in one
//! session, each statement's result printed as it completes.

use delta_rlc_engine::sql::{SqlSession, StreamingOutput};
use delta_rlc_engine::EngineError;

use crate::{one_line, output};

/// Runs one statement and prints its result; a query's rows are streamed.
pub async fn run_statement(
    session: &SqlSession,
    statement: &str,
    format: output::Format,
) -> Result<(), EngineError> {
    // A spinner on stderr while a long statement runs (only on a terminal).
    let spinner = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_message(
            statement
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_uppercase(),
        );
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        pb
    });
    let out = session.execute_streaming(statement).await;
    // The spinner stops before anything is printed.
    if let Some(pb) = spinner {
        pb.finish_and_clear();
    }
    match out? {
        StreamingOutput::Rows(stream) => output::print_stream(stream, format).await,
        StreamingOutput::Done(out) => output::print_statement(&out, format == output::Format::Json),
    }
}

/// The same error (same kind), its message prefixed with `what` (which statement of a script).
pub fn prefix_error(e: EngineError, what: &str) -> EngineError {
    match e {
        EngineError::InvalidArgument(m) => EngineError::InvalidArgument(format!("{what}: {m}")),
        EngineError::NotFound(m) => EngineError::NotFound(format!("{what}: {m}")),
        EngineError::Unsupported(m) => EngineError::Unsupported(format!("{what}: {m}")),
        EngineError::Internal(m) => EngineError::Internal(format!("{what}: {m}")),
        EngineError::DataFusion(d) => EngineError::DataFusion(Box::new(
            datafusion::error::DataFusionError::Context(what.to_string(), d),
        )),
        // Conflicts, storage and table errors keep their own message.
        other => other,
    }
}

const HELP: &str =
    "Statements end with ';' and may span lines. Tables are paths: SELECT * FROM './data/t'.
Files load by extension: INSERT INTO './t' SELECT * FROM 'new.csv' (.csv .parquet .json .ndjson),
or with read_csv('f', header => false, delimiter => ';'), read_parquet('dir/*.parquet'), read_json('f').
Time travel: ... FROM './t' VERSION AS OF 3 | TIMESTAMP AS OF '2026-12-01 10:00:00'.
Write query results: COPY (SELECT ...) TO 'out.parquet' STORED AS PARQUET.
.help  this text      .quit  leave (or end of input)";

/// The interactive shell: reads statements ending in `;` from standard input, runs each in one
/// session, prints errors (one line) and goes on.
pub async fn shell(session: &SqlSession, format: output::Format) -> Result<(), EngineError> {
    use std::io::{BufRead, IsTerminal, Write};
    let interactive = std::io::stdin().is_terminal();
    let prompt = |cont: bool| {
        if interactive {
            eprint!("{}", if cont { "      -> " } else { "delta-rlc> " });
            let _ = std::io::stderr().flush();
        }
    };
    let mut buf = String::new();
    prompt(false);
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| EngineError::invalid(format!("cannot read input: {e}")))?;
        if buf.trim().is_empty() && matches!(line.trim(), ".quit" | ".exit" | "quit" | "exit") {
            return Ok(());
        }
        if buf.trim().is_empty() && line.trim() == ".help" {
            println!("{HELP}");
            prompt(false);
            continue;
        }
        buf.push_str(&line);
        buf.push('\n');
        if !line.trim_end().ends_with(';') {
            prompt(true);
            continue;
        }
        match delta_rlc_engine::sql::split_statements(&buf) {
            Ok(statements) => {
                for st in statements {
                    let began = std::time::Instant::now();
                    if let Err(e) = run_statement(session, &st, format).await {
                        eprintln!("error: {}", one_line(&e));
                    }
                    if interactive {
                        eprintln!("({:.3} s)", began.elapsed().as_secs_f64());
                    }
                }
            }
            Err(e) => eprintln!("error: {}", one_line(&e)),
        }
        buf.clear();
        prompt(false);
    }
    // End of input: a last statement without `;` still runs.
    if !buf.trim().is_empty() {
        for st in delta_rlc_engine::sql::split_statements(&buf)? {
            if let Err(e) = run_statement(session, &st, format).await {
                eprintln!("error: {}", one_line(&e));
            }
        }
    }
    Ok(())
}
