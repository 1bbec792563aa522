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
        // Rows of DESCRIBE, SHOW, table_changes(…), delta_files(…) in the format asked for.
        StreamingOutput::Done(out)
            if out.commit.is_none()
                && out.message.is_none()
                && matches!(format, output::Format::Csv | output::Format::Ndjson) =>
        {
            let schema = out.batches.first().map_or_else(
                || std::sync::Arc::new(arrow::datatypes::Schema::empty()),
                |b| b.schema(),
            );
            let rows = futures::stream::iter(out.batches.into_iter().map(Ok));
            let stream = Box::pin(
                datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(schema, rows),
            );
            output::print_stream(stream, format).await
        }
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

/// Where the shell's lines come from: a line editor with history on a terminal, plain standard
/// input otherwise (scripts piped in, tests).
enum LineSource {
    Editor(Box<rustyline::DefaultEditor>),
    Stdin(std::io::Lines<std::io::StdinLock<'static>>),
}

/// What reading a line gave.
enum Line {
    Text(String),
    /// Ctrl-C: drop the statement being typed.
    Interrupted,
    End,
}

impl LineSource {
    fn open() -> LineSource {
        use std::io::{BufRead, IsTerminal};
        if std::io::stdin().is_terminal() {
            if let Ok(mut ed) = rustyline::DefaultEditor::new() {
                if let Some(h) = history_file() {
                    let _ = ed.load_history(&h);
                }
                return LineSource::Editor(Box::new(ed));
            }
        }
        LineSource::Stdin(std::io::stdin().lock().lines())
    }

    fn read(&mut self, prompt: &str) -> Result<Line, EngineError> {
        use rustyline::error::ReadlineError;
        match self {
            LineSource::Editor(ed) => match ed.readline(prompt) {
                Ok(l) => Ok(Line::Text(l)),
                Err(ReadlineError::Interrupted) => Ok(Line::Interrupted),
                Err(ReadlineError::Eof) => Ok(Line::End),
                Err(e) => Err(EngineError::invalid(format!("cannot read input: {e}"))),
            },
            LineSource::Stdin(lines) => match lines.next() {
                Some(Ok(l)) => Ok(Line::Text(l)),
                Some(Err(e)) => Err(EngineError::invalid(format!("cannot read input: {e}"))),
                None => Ok(Line::End),
            },
        }
    }

    /// Remembers a statement in the editor's history (and its file).
    fn remember(&mut self, statement: &str) {
        if let LineSource::Editor(ed) = self {
            let _ = ed.add_history_entry(statement.trim());
            if let Some(h) = history_file() {
                let _ = ed.save_history(&h);
            }
        }
    }

    fn interactive(&self) -> bool {
        matches!(self, LineSource::Editor(_))
    }
}

fn history_file() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".delta_rlc_history"))
}

/// The interactive shell: reads statements ending in `;` (line editing and history on a
/// terminal), runs each in one session, prints errors (one line) and goes on.
pub async fn shell(session: &SqlSession, format: output::Format) -> Result<(), EngineError> {
    let mut source = LineSource::open();
    let interactive = source.interactive();
    let mut buf = String::new();
    loop {
        let prompt = match (interactive, buf.trim().is_empty()) {
            (false, _) => "",
            (true, true) => "delta-rlc> ",
            (true, false) => "      -> ",
        };
        let line = match source.read(prompt)? {
            Line::Text(l) => l,
            Line::Interrupted => {
                buf.clear();
                continue;
            }
            Line::End => break,
        };
        if buf.trim().is_empty() && matches!(line.trim(), ".quit" | ".exit" | "quit" | "exit") {
            return Ok(());
        }
        if buf.trim().is_empty() && line.trim() == ".help" {
            println!("{HELP}");
            continue;
        }
        buf.push_str(&line);
        buf.push('\n');
        // Only a top-level `;` ends a statement (not one inside a comment or a string).
        if !delta_rlc_engine::sql::statement_complete(&buf) {
            continue;
        }
        source.remember(&buf);
        run_all(session, &buf, format, interactive).await;
        buf.clear();
    }
    // End of input: a last statement without `;` still runs.
    if !buf.trim().is_empty() {
        run_all(session, &buf, format, interactive).await;
    }
    Ok(())
}

/// Runs every statement of `text`, printing errors (one line each) and, on a terminal, timings.
async fn run_all(session: &SqlSession, text: &str, format: output::Format, timed: bool) {
    match delta_rlc_engine::sql::split_statements(text) {
        Ok(statements) => {
            for st in statements {
                let began = std::time::Instant::now();
                if let Err(e) = run_statement(session, &st, format).await {
                    eprintln!("error: {}", one_line(&e));
                }
                if timed {
                    eprintln!("({:.3} s)", began.elapsed().as_secs_f64());
                }
            }
        }
        Err(e) => eprintln!("error: {}", one_line(&e)),
    }
}
