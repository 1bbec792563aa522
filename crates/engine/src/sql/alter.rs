//! `ALTER TABLE <path> …` (Delta Spark's forms): ADD COLUMN[S], RENAME COLUMN, DROP COLUMN[S],
//! SET / UNSET TBLPROPERTIES, ALTER | CHANGE [COLUMN] c SET | DROP NOT NULL | COMMENT '…', ADD CONSTRAINT n
//! CHECK (…), DROP CONSTRAINT [IF EXISTS] n. What `ops/alter.rs` cannot do yet is refused by name
//! (an unsupported error, nothing committed).

use datafusion::sql::sqlparser::tokenizer::Token;

use super::bind::TableRef;
use super::parser::Cursor;
use crate::error::{EngineError, Result};
use crate::ops::alter::{alter_txn, AlterOp};
use crate::txn::{Operation, Transaction};

fn unsupported(what: &str) -> EngineError {
    EngineError::Unsupported(format!("ALTER TABLE … {what} is not supported yet"))
}

/// A list of column paths, parenthesized or not.
fn column_paths(c: &mut Cursor) -> Result<Vec<Vec<String>>> {
    if c.eat(&Token::LParen) {
        let mut out = vec![c.column_path()?];
        while c.eat(&Token::Comma) {
            out.push(c.column_path()?);
        }
        c.expect(&Token::RParen)?;
        Ok(out)
    } else {
        Ok(vec![c.column_path()?])
    }
}

fn if_exists(c: &mut Cursor) -> Result<bool> {
    if c.eat_kw("IF") {
        c.expect_kw("EXISTS")?;
        return Ok(true);
    }
    Ok(false)
}

/// Parses the operation after `ALTER TABLE <name>`.
fn parse_op(c: &mut Cursor) -> Result<AlterOp> {
    let op = if c.eat_kw("ADD") {
        if c.eat_kw("CONSTRAINT") {
            let name = c.ident()?;
            c.expect_kw("CHECK")?;
            let expr = c.parenthesized_sql()?;
            return finish(c, AlterOp::AddConstraint { name, expr });
        }
        if !c.eat_kw("COLUMNS") {
            c.expect_kw("COLUMN")?;
        }
        let cols = if c.eat(&Token::LParen) {
            let cols = c.column_path_defs()?;
            c.expect(&Token::RParen)?;
            cols
        } else {
            c.column_path_defs()?
        };
        match cols.iter().all(|(parent, _)| parent.is_empty()) {
            true => AlterOp::AddColumns(cols.into_iter().map(|(_, f)| f).collect()),
            false => AlterOp::AddNestedColumns(cols),
        }
    } else if c.eat_kw("RENAME") {
        if !c.eat_kw("COLUMN") {
            return Err(unsupported("RENAME TO (tables are paths)"));
        }
        let from = c.column_path()?;
        c.expect_kw("TO")?;
        AlterOp::RenameColumn {
            from,
            to: c.ident()?,
        }
    } else if c.eat_kw("DROP") {
        if c.eat_kw("CONSTRAINT") {
            let if_exists = if_exists(c)?;
            let name = c.ident()?;
            return finish(c, AlterOp::DropConstraint { name, if_exists });
        }
        if !c.eat_kw("COLUMNS") {
            c.expect_kw("COLUMN")?;
        }
        let if_exists = if_exists(c)?;
        AlterOp::DropColumns {
            paths: column_paths(c)?,
            if_exists,
        }
    } else if c.eat_kw("SET") {
        c.expect_kw("TBLPROPERTIES")?;
        AlterOp::SetProperties(c.properties()?)
    } else if c.eat_kw("UNSET") {
        c.expect_kw("TBLPROPERTIES")?;
        let if_exists = if_exists(c)?;
        c.expect(&Token::LParen)?;
        let mut keys = vec![c.property_key()?];
        while c.eat(&Token::Comma) {
            keys.push(c.property_key()?);
        }
        c.expect(&Token::RParen)?;
        AlterOp::UnsetProperties { keys, if_exists }
    } else if c.eat_kw("ALTER") || c.eat_kw("CHANGE") {
        c.eat_kw("COLUMN");
        let col = c.column_path()?;
        if c.eat_kw("DROP") {
            c.expect_kw("NOT")?;
            c.expect_kw("NULL")?;
            AlterOp::DropNotNull(col)
        } else if c.eat_kw("SET") {
            c.expect_kw("NOT")?;
            c.expect_kw("NULL")?;
            match <[String; 1]>::try_from(col) {
                Ok([col]) => AlterOp::SetNotNull(col),
                Err(_) => return Err(unsupported("SET NOT NULL on a nested field")),
            }
        } else if c.eat_kw("TYPE") {
            AlterOp::ChangeType {
                column: col,
                to: c.data_type()?,
            }
        } else if c.eat_kw("COMMENT") {
            AlterOp::SetColumnMetadata {
                column: col,
                metadata: [("comment".to_string(), c.string()?)].into(),
            }
        } else {
            return Err(unsupported(&format!("ALTER COLUMN … {}", c.describe())));
        }
    } else if c.eat_kw("CLUSTER") {
        c.expect_kw("BY")?;
        match c.eat_kw("NONE") {
            true => AlterOp::ClusterBy(Vec::new()),
            false => AlterOp::ClusterBy(c.ident_list()?),
        }
    } else {
        return Err(EngineError::invalid(format!(
            "SQL syntax error: unexpected {} in ALTER TABLE",
            c.describe()
        )));
    };
    finish(c, op)
}

/// `op`, when nothing follows it.
fn finish(c: &Cursor, op: AlterOp) -> Result<AlterOp> {
    if !c.at_end() {
        return Err(EngineError::invalid(format!(
            "SQL syntax error: unexpected {} in ALTER TABLE",
            c.describe()
        )));
    }
    Ok(op)
}

/// Reads the operation of `ALTER TABLE <target> …` (the cursor after the table).
pub fn read_alter(c: &mut Cursor) -> Result<AlterOp> {
    parse_op(c)
}

/// Plans an ALTER TABLE operation as a transaction on the table's latest snapshot.
pub async fn prepare_alter(
    session: &super::SqlSession,
    target: &TableRef,
    op: AlterOp,
) -> Result<Transaction> {
    let (table, _, snapshot) =
        super::dml::open_target(std::slice::from_ref(target), &target.ident, session).await?;
    alter_txn(
        Transaction::new(&table, Some(snapshot), Operation::Alter),
        op,
    )
    .await
}
