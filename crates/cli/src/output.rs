//! Printing statement results: aligned tables or JSON.

use arrow::array::RecordBatch;
use delta_rlc_engine::sql::StatementOutput;
use delta_rlc_engine::EngineError;

/// arrow's JSON array writer with NULL written as `null`: every row carries every column's key.
fn json_array_writer<W: std::io::Write>(w: W) -> arrow::json::ArrayWriter<W> {
    arrow::json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build(w)
}

/// Rows as a JSON array, written by arrow's JSON writer (decimals and floats exact: never parsed
/// back through f64; NULL as `null`).
pub fn batches_to_json_text(batches: &[RecordBatch]) -> Result<String, EngineError> {
    let mut buf = Vec::new();
    {
        let mut w = json_array_writer(&mut buf);
        let refs: Vec<&RecordBatch> = batches.iter().collect();
        w.write_batches(&refs)?;
        w.finish()?;
    }
    let text = String::from_utf8(buf).map_err(|e| EngineError::Internal(e.to_string()))?;
    Ok(if text.is_empty() { "[]".into() } else { text })
}

static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--verbose`: statements report what they sent to the store.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The requests line `--verbose` prints on stderr after a writing statement.
fn print_requests(out: &StatementOutput) {
    if !VERBOSE.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    if let Some(r) = &out.requests {
        eprintln!("requests: {r}");
    }
}

pub fn print_statement(out: &StatementOutput, json: bool) -> Result<(), EngineError> {
    print_requests(out);
    if json {
        let mut obj = serde_json::Map::new();
        let rows = (!out.batches.is_empty() || (out.commit.is_none() && out.message.is_none()))
            .then(|| batches_to_json_text(&out.batches))
            .transpose()?;
        if let Some(c) = &out.commit {
            obj.insert("version".into(), serde_json::json!(c.version));
            obj.insert("committed".into(), serde_json::json!(c.attempts > 0));
            obj.insert("attempts".into(), serde_json::json!(c.attempts));
            obj.insert("affectedRows".into(), serde_json::json!(c.affected_rows));
            let events: Vec<serde_json::Value> = c
                .events
                .iter()
                .map(|e| serde_json::json!({"name": e.name, "fields": e.fields}))
                .collect();
            obj.insert("events".into(), serde_json::Value::Array(events));
            obj.insert(
                "statementRuns".into(),
                serde_json::json!(c.earlier_runs.len() + 1),
            );
            obj.insert("earlierRuns".into(), serde_json::json!(c.earlier_runs));
        }
        if let Some(m) = &out.message {
            obj.insert("message".into(), serde_json::json!(m));
        }
        // The rows go in as arrow wrote them, spliced before the other fields.
        let rest = serde_json::Value::Object(obj).to_string();
        match rows {
            Some(r) if rest == "{}" => println!("{{\"rows\":{r}}}"),
            Some(r) => println!("{{\"rows\":{r},{}", &rest[1..]),
            None => println!("{rest}"),
        }
        return Ok(());
    }
    if let Some(c) = &out.commit {
        match c.version {
            // Nothing was written: the table stays at the version the statement read.
            Some(v) if c.attempts == 0 => println!(
                "nothing to commit: the table is unchanged at version {v}{}",
                c.affected_rows
                    .map(|n| format!(", {n} row(s) affected"))
                    .unwrap_or_default()
            ),
            Some(v) => println!(
                "committed version {v}{}{}",
                c.affected_rows
                    .map(|n| format!(", {n} row(s) affected"))
                    .unwrap_or_default(),
                if c.attempts > 1 {
                    format!(" after {} attempts", c.attempts)
                } else {
                    String::new()
                }
            ),
            None => println!("nothing to commit"),
        }
        // Re-execution on conflict ran the statement again: say how often, and why.
        for (run, why) in c.earlier_runs.iter().enumerate() {
            println!("run {} aborted, run again: {why}", run + 1);
        }
        for e in &c.events {
            println!(
                "event {} {}",
                e.name,
                serde_json::Value::Object(e.fields.clone())
            );
        }
    }
    if let Some(m) = &out.message {
        println!("{m}");
    }
    if out.commit.is_none() && out.message.is_none() {
        println!(
            "{}",
            arrow::util::pretty::pretty_format_batches(&out.batches)?
        );
    }
    Ok(())
}

/// How query rows are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// An aligned table of at most [`TABLE_ROW_LIMIT`] rows (a notice on stderr says how many
    /// more there were).
    Table,
    /// `{"rows": [...]}` (and the commit, for writes).
    Json,
    /// CSV with a header line, streamed.
    Csv,
    /// One JSON object per row, streamed.
    Ndjson,
}

/// The table format shows this many rows; the others print every row.
pub const TABLE_ROW_LIMIT: usize = 10_000;

/// Prints a query's rows as they arrive: memory holds one batch (the table format keeps its first
/// [`TABLE_ROW_LIMIT`] rows and counts the rest).
pub async fn print_stream(
    mut stream: datafusion::execution::SendableRecordBatchStream,
    format: Format,
) -> Result<(), EngineError> {
    use futures::StreamExt;
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match format {
        Format::Csv => {
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            let mut wrote = false;
            while let Some(b) = stream.next().await {
                w.write(&b?)?;
                wrote = true;
            }
            if !wrote {
                // No batch at all: still print the header.
                w.write(&RecordBatch::new_empty(stream.schema()))?;
            }
        }
        Format::Ndjson => {
            let mut w = arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, arrow::json::writer::LineDelimited>(&mut out);
            while let Some(b) = stream.next().await {
                w.write(&b?)?;
            }
            w.finish()?;
        }
        Format::Json => {
            // One document: built whole before any of it is printed, so a query that fails
            // part way prints only its error (csv and ndjson stream, a line at a time).
            let mut doc: Vec<u8> = b"{\"rows\":".to_vec();
            {
                // Writes `[]` when there is no row.
                let mut w = json_array_writer(&mut doc);
                while let Some(b) = stream.next().await {
                    w.write(&b?)?;
                }
                w.finish()?;
            }
            doc.extend_from_slice(b"}\n");
            out.write_all(&doc).map_err(io)?;
        }
        Format::Table => {
            let mut kept = Vec::new();
            let (mut shown, mut total) = (0usize, 0usize);
            while let Some(b) = stream.next().await {
                let b = b?;
                total += b.num_rows();
                if shown < TABLE_ROW_LIMIT {
                    let take = b.num_rows().min(TABLE_ROW_LIMIT - shown);
                    shown += take;
                    kept.push(b.slice(0, take));
                }
            }
            if kept.is_empty() {
                kept.push(RecordBatch::new_empty(stream.schema()));
            }
            writeln!(
                out,
                "{}",
                arrow::util::pretty::pretty_format_batches(&kept)?
            )
            .map_err(io)?;
            if total > shown {
                eprintln!(
                    "(showing the first {shown} of {total} rows; --format csv or ndjson prints every row)"
                );
            }
        }
    }
    out.flush().map_err(io)
}

fn io(e: std::io::Error) -> EngineError {
    EngineError::Internal(format!("writing the output: {e}"))
}
