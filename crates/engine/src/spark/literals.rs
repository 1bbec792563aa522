//! Spark's reading of numeric literals written with an exponent: `1e3`, `1.5E-2` and `1e300` are
//! DOUBLE in Spark. This engine has DataFusion read `1.5` as a DECIMAL (as Spark does), so without
//! this step an exponent literal would be a DECIMAL with a negative scale — `1e3` a DECIMAL(1,-3),
//! and `1e300` not a value at all (scale -300 is out of range). Before planning, each such
//! literal becomes `CAST('<its text>' AS DOUBLE)`: the text read by a correctly rounded parser,
//! the double Spark reads. Literals without an exponent are left as written.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self as ast, CastKind, ExactNumberInfo, ValueWithSpan, VisitMut, VisitorMut,
};

/// Rewrites every exponent literal of `node` (a statement or an expression) in place.
pub fn exponent_literals_as_double<N: VisitMut>(node: &mut N) {
    let _ = node.visit(&mut ExponentLiterals);
}

struct ExponentLiterals;

impl VisitorMut for ExponentLiterals {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Value(v) = e else {
            return ControlFlow::Continue(());
        };
        let ast::Value::Number(text, false) = &v.value else {
            return ControlFlow::Continue(());
        };
        if !text.contains(['e', 'E']) {
            return ControlFlow::Continue(());
        }
        let literal = ValueWithSpan {
            value: ast::Value::SingleQuotedString(text.clone()),
            span: v.span,
        };
        *e = ast::Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(ast::Expr::Value(literal)),
            data_type: ast::DataType::Double(ExactNumberInfo::None),
            array: false,
            format: None,
        };
        ControlFlow::Continue(())
    }
}
