//! Printing statement results: aligned tables or JSON.

use arrow::array::RecordBatch;
use delta_rlc_engine::sql::StatementOutput;
use delta_rlc_engine::EngineError;

pub fn batches_to_json(batches: &[RecordBatch]) -> Result<serde_json::Value, EngineError> {
    let mut buf = Vec::new();
    {
        let mut w = arrow::json::ArrayWriter::new(&mut buf);
        let refs: Vec<&RecordBatch> = batches.iter().collect();
        w.write_batches(&refs)?;
        w.finish()?;
    }
    if buf.is_empty() {
        return Ok(serde_json::Value::Array(vec![]));
    }
    serde_json::from_slice(&buf).map_err(|e| EngineError::Internal(e.to_string()))
}

pub fn print_statement(out: &StatementOutput, json: bool) -> Result<(), EngineError> {
    if json {
        let mut obj = serde_json::Map::new();
        if !out.batches.is_empty() || (out.commit.is_none() && out.message.is_none()) {
            obj.insert("rows".into(), batches_to_json(&out.batches)?);
        }
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
        }
        if let Some(m) = &out.message {
            obj.insert("message".into(), serde_json::json!(m));
        }
        println!("{}", serde_json::Value::Object(obj));
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
