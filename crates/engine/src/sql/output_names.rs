//! The names a query's output columns get.

use crate::error::Result;

use super::bind::TableRef;

/// Output columns named without the generated names of path references (`count(__delta_t0.id)`
/// is `count(id)`): what headers show and what CREATE TABLE AS SELECT stores. Left as they are
/// when two columns would get one name.
pub(super) fn without_generated_qualifiers(
    df: datafusion::dataframe::DataFrame,
    refs: &[TableRef],
) -> Result<datafusion::dataframe::DataFrame> {
    use datafusion::common::Column;
    use datafusion::logical_expr::Expr;
    let generated: Vec<String> = refs
        .iter()
        .filter(|r| r.ident.starts_with("__delta_t") || r.ident.starts_with("__file_t"))
        .map(|r| format!("{}.", r.ident))
        .collect();
    let strip = |name: &str| {
        generated
            .iter()
            .fold(name.to_string(), |n, g| n.replace(g.as_str(), ""))
    };
    let schema = df.schema().clone();
    let names: Vec<String> = schema.fields().iter().map(|f| strip(f.name())).collect();
    let changed = schema
        .fields()
        .iter()
        .zip(&names)
        .any(|(f, n)| f.name() != n);
    let distinct = names.iter().collect::<std::collections::HashSet<_>>().len() == names.len();
    if !changed || !distinct {
        return Ok(df);
    }
    let exprs: Vec<Expr> = schema
        .iter()
        .zip(&names)
        .map(|((q, f), n)| Expr::Column(Column::from((q, f))).alias(n))
        .collect();
    Ok(df.select(exprs)?)
}
