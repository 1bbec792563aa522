//! Python values and deltalake-style filters as typed expressions. A value arrives as a pyarrow
//! array (the Python side builds it with `pa.array`, which picks its Arrow type), becomes a
//! DataFusion literal, and is never printed into SQL text: a string holding quotes stays one
//! string, whatever it contains.

use arrow::array::{make_array, ArrayData, ArrayRef};
use arrow_pyarrow::FromPyArrow;
use delta_rlc::datafusion::common::{Column, ScalarValue, TableReference};
use delta_rlc::{lit, Expr, Expression};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// A pyarrow array's values as literals.
fn literals(values: &Bound<'_, PyAny>) -> PyResult<Vec<ScalarValue>> {
    let array: ArrayRef = make_array(ArrayData::from_pyarrow_bound(values)?);
    (0..array.len())
        .map(|i| {
            ScalarValue::try_from_array(&array, i)
                .map_err(|e| PyValueError::new_err(format!("a filter or update value: {e}")))
        })
        .collect()
}

/// A table column by its exact name (no parsing: a dot or a quote in it is part of the name).
fn column(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

/// A column of a MERGE's source, by its exact name, under the source's alias.
pub(crate) fn source_column(alias: &str, name: &str) -> Expression {
    Expr::Column(Column::new(Some(TableReference::bare(alias)), name)).into()
}

/// An assignment's value: SQL text (an expression over the table, parsed by the engine) or a
/// one-element pyarrow array (a Python value, as a literal).
pub(crate) fn assigned_value(value: &Bound<'_, PyAny>) -> PyResult<Expression> {
    if value.is_instance_of::<PyString>() {
        return Ok(Expression::from(value.extract::<String>()?));
    }
    match literals(value)?.as_slice() {
        [one] => Ok(lit(one.clone()).into()),
        other => Err(PyValueError::new_err(format!(
            "an update value is one value, got {}",
            other.len()
        ))),
    }
}

/// One `(column, op, values)` term: `=`, `!=`, `<`, `<=`, `>`, `>=` take one value (`=`/`!=` with
/// None mean IS NULL / IS NOT NULL, as deltalake reads them), `in`/`not in` a list.
fn term(name: &str, op: &str, values: &Bound<'_, PyAny>) -> PyResult<Expr> {
    let c = column(name);
    let values = literals(values)?;
    if op == "in" || op == "not in" {
        let list = values.into_iter().map(lit).collect();
        return Ok(c.in_list(list, op == "not in"));
    }
    let [v] = values.as_slice() else {
        return Err(PyValueError::new_err(format!(
            "filter on {name}: '{op}' takes one value"
        )));
    };
    let v = v.clone();
    Ok(match (op, v.is_null()) {
        ("=", true) => c.is_null(),
        ("!=", true) => c.is_not_null(),
        ("=", false) => c.eq(lit(v)),
        ("!=", false) => c.not_eq(lit(v)),
        ("<", _) => c.lt(lit(v)),
        ("<=", _) => c.lt_eq(lit(v)),
        (">", _) => c.gt(lit(v)),
        (">=", _) => c.gt_eq(lit(v)),
        _ => {
            return Err(PyValueError::new_err(format!(
                "filter on {name}: unknown operator {op:?}"
            )))
        }
    })
}

/// Filters in disjunctive normal form — an OR of ANDs of terms — as one condition; None for no
/// filter.
pub(crate) fn filters(
    dnf: Option<Vec<Vec<(String, String, Bound<'_, PyAny>)>>>,
) -> PyResult<Option<Expression>> {
    let Some(dnf) = dnf else { return Ok(None) };
    if dnf.iter().any(|conjunction| conjunction.is_empty()) {
        // An empty AND is TRUE, and so is any OR holding it: every row.
        return Ok(None);
    }
    let mut any: Option<Expr> = None;
    for conjunction in dnf {
        let mut all: Option<Expr> = None;
        for (name, op, values) in &conjunction {
            let t = term(name, op, values)?;
            all = Some(match all {
                Some(a) => a.and(t),
                None => t,
            });
        }
        let Some(all) = all else {
            return Ok(None);
        };
        any = Some(match any {
            Some(a) => a.or(all),
            None => all,
        });
    }
    Ok(any.map(Expression::from))
}
