//! `sum` of floats and `avg` of integers and floats in a window, as Spark computes them: DOUBLE
//! additions in the frame's row order, each frame summed afresh from its first row.
//!
//! DataFusion's window accumulators add the rows entering a sliding frame and subtract the rows
//! leaving it. In floating point that is not the frame's sum: after 1e17 left a frame, 3 + 5 read
//! 0 (red team helper-40: `avg(b) OVER (… ROWS 1 PRECEDING)` stored 0.0 where Spark stores 4.0,
//! and `avg` over {MAX, MIN} of a BIGINT gave 0.5). Spark's sliding frame sums its rows again for
//! each row (the cost is the frame's length per row, as there), and a growing frame adds one row
//! after the other; both are what this module does. Integers are cast to DOUBLE one by one, as
//! Spark's `Average` casts them.
//!
//! Only windows use these functions (`aggregates::spark_window_aggregate`): a GROUP BY's sum of
//! floats has no order in either engine.

use std::sync::{Arc, OnceLock};

use super::frame_values::FrameValues;
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

/// What the frame's values become.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Sum,
    Avg,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FrameFloat {
    kind: Kind,
    signature: Signature,
}

/// `sum` of FLOAT or DOUBLE values in a window.
pub fn window_float_sum() -> Arc<AggregateUDF> {
    static F: OnceLock<Arc<AggregateUDF>> = OnceLock::new();
    Arc::clone(F.get_or_init(|| Arc::new(AggregateUDF::from(FrameFloat::new(Kind::Sum)))))
}

/// `avg` of integer, FLOAT or DOUBLE values in a window.
pub fn window_float_avg() -> Arc<AggregateUDF> {
    static F: OnceLock<Arc<AggregateUDF>> = OnceLock::new();
    Arc::clone(F.get_or_init(|| Arc::new(AggregateUDF::from(FrameFloat::new(Kind::Avg)))))
}

impl FrameFloat {
    fn new(kind: Kind) -> Self {
        FrameFloat {
            kind,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for FrameFloat {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Sum => "spark_window_sum",
            Kind::Avg => "spark_window_avg",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[sum]", args.name),
                DataType::Float64,
                true,
            )),
            Arc::new(Field::new(
                format!("{}[count]", args.name),
                DataType::Int64,
                true,
            )),
        ])
    }
    /// A growing frame (or a whole partition): one row after the other.
    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Running {
            kind: self.kind,
            sum: 0.0,
            count: 0,
        }))
    }
    /// A sliding frame: its values kept and summed afresh, in order, per frame.
    fn create_sliding_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Sliding {
            kind: self.kind,
            values: FrameValues::default(),
        }))
    }
}

/// The non-NULL values of `a` as DOUBLEs (an integer cast as Spark casts a long to a double).
fn doubles(a: &ArrayRef) -> Result<Vec<f64>> {
    let a = match a.data_type() {
        DataType::Float64 => Arc::clone(a),
        DataType::Float32
        | DataType::Float16
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64 => arrow::compute::cast(a, &DataType::Float64)?,
        other => return exec_err!("spark_window_sum/avg of {other}"),
    };
    Ok(a.as_primitive::<Float64Type>().iter().flatten().collect())
}

fn value(kind: Kind, sum: f64, count: i64) -> ScalarValue {
    match (count, kind) {
        (0, _) => ScalarValue::Float64(None),
        (_, Kind::Sum) => ScalarValue::Float64(Some(sum)),
        (n, Kind::Avg) => ScalarValue::Float64(Some(sum / n as f64)),
    }
}

#[derive(Debug)]
struct Running {
    kind: Kind,
    sum: f64,
    count: i64,
}

impl Accumulator for Running {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            for v in doubles(a)? {
                self.sum += v;
                self.count += 1;
            }
        }
        Ok(())
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(sums), Some(counts)) = (states.first(), states.get(1)) else {
            return exec_err!("spark_window_sum/avg: a state has two fields");
        };
        let sums = sums.as_primitive::<Float64Type>();
        let counts = counts.as_primitive::<Int64Type>();
        for (s, c) in sums.iter().zip(counts.iter()) {
            if let (Some(s), Some(c)) = (s, c) {
                if c > 0 {
                    self.sum += s;
                    self.count += c;
                }
            }
        }
        Ok(())
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Float64(Some(self.sum)),
            ScalarValue::Int64(Some(self.count)),
        ])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(value(self.kind, self.sum, self.count))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

#[derive(Debug)]
struct Sliding {
    kind: Kind,
    values: FrameValues<f64>,
}

impl Sliding {
    fn sum(&self) -> f64 {
        self.values.iter().fold(0.0, |s, v| s + v)
    }
}

impl Accumulator for Sliding {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            self.values.extend(doubles(a)?);
        }
        Ok(())
    }
    /// The frame's first rows leaving it (the oldest values, in order; NULLs were never kept).
    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            self.values.retract(a);
        }
        Ok(())
    }
    fn supports_retract_batch(&self) -> bool {
        true
    }
    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        exec_err!("spark_window_sum/avg: a sliding frame is not merged")
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Float64(Some(self.sum())),
            ScalarValue::Int64(Some(self.values.len() as i64)),
        ])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(value(self.kind, self.sum(), self.values.len() as i64))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.heap_size()
    }
}
