//! `var_samp`, `var_pop`, `stddev_samp`, `stddev_pop` (and their aliases) with Spark's
//! `CentralMomentAgg` arithmetic over DOUBLEs:
//! - a row: `n += 1; delta = x - avg; deltaN = delta / n; avg += deltaN;
//!   m2 += delta * (delta - deltaN)`;
//! - two partial states: `n = n1 + n2; delta = avg2 - avg1; deltaN = delta / n;
//!   avg = avg1 + deltaN * n2; m2 = m2_1 + m2_2 + delta * deltaN * n1 * n2`;
//! - the result: `m2 / (n - 1)` or `m2 / n` (the square root for stddev); NULL with no row, and
//!   NULL for a sample statistic of one row.
//!
//! DataFusion's update takes `x - new_mean`, which rounds at the mean's magnitude: `var_samp` of
//! the INTs {2147483647, 2147483647, 2147483646} came out 0.3333333730697632 where Spark gives
//! 0.33333333333333337 (red team helper-41). A sliding window frame is computed afresh from its
//! first row for each row, as Spark's sliding frame is (DataFusion's took leaving rows out of
//! the moments and drifted). Integers and FLOATs are cast to DOUBLE first, as Spark casts them.

use std::sync::{Arc, OnceLock};

use super::frame_values::FrameValues;
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

/// Which statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Stat {
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Moments {
    stat: Stat,
    signature: Signature,
}

/// Our function for the aggregate `name`, when it is one of this module's.
pub(super) fn spark_moment(name: &str) -> Option<Arc<AggregateUDF>> {
    static F: [OnceLock<Arc<AggregateUDF>>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let stat = match name.to_ascii_lowercase().as_str() {
        "var_samp" | "var" | "variance" | "var_sample" => Stat::VarSamp,
        "var_pop" | "var_population" => Stat::VarPop,
        "stddev" | "stddev_samp" | "std" => Stat::StddevSamp,
        "stddev_pop" => Stat::StddevPop,
        _ => return None,
    };
    let cell = F.get(stat as usize)?;
    Some(Arc::clone(cell.get_or_init(|| {
        Arc::new(AggregateUDF::from(Moments {
            stat,
            signature: Signature::any(1, Volatility::Immutable),
        }))
    })))
}

/// (n, avg, m2) as Spark keeps them.
#[derive(Debug, Clone, Copy, Default)]
struct State {
    n: f64,
    avg: f64,
    m2: f64,
}

impl State {
    fn update(&mut self, x: f64) {
        let n = self.n + 1.0;
        let delta = x - self.avg;
        let delta_n = delta / n;
        self.avg += delta_n;
        self.m2 += delta * (delta - delta_n);
        self.n = n;
    }

    fn merge(&mut self, other: State) {
        let n = self.n + other.n;
        let delta = other.avg - self.avg;
        let delta_n = if n == 0.0 { 0.0 } else { delta / n };
        self.avg += delta_n * other.n;
        self.m2 += other.m2 + delta * delta_n * self.n * other.n;
        self.n = n;
    }

    fn result(&self, stat: Stat) -> Option<f64> {
        if self.n == 0.0 {
            return None;
        }
        match stat {
            Stat::VarSamp if self.n == 1.0 => None,
            Stat::StddevSamp if self.n == 1.0 => None,
            Stat::VarSamp => Some(self.m2 / (self.n - 1.0)),
            Stat::StddevSamp => Some((self.m2 / (self.n - 1.0)).sqrt()),
            Stat::VarPop => Some(self.m2 / self.n),
            Stat::StddevPop => Some((self.m2 / self.n).sqrt()),
        }
    }
}

/// The non-NULL values of `a` as DOUBLEs (cast first, as Spark casts the argument).
fn doubles(a: &ArrayRef) -> Result<Vec<f64>> {
    let a = match a.data_type() {
        DataType::Float64 => Arc::clone(a),
        t if t.is_numeric() => arrow::compute::cast(a, &DataType::Float64)?,
        other => return exec_err!("variance of {other}"),
    };
    Ok(a.as_primitive::<Float64Type>().iter().flatten().collect())
}

impl AggregateUDFImpl for Moments {
    fn name(&self) -> &str {
        match self.stat {
            Stat::VarSamp => "spark_var_samp",
            Stat::VarPop => "spark_var_pop",
            Stat::StddevSamp => "spark_stddev_samp",
            Stat::StddevPop => "spark_stddev_pop",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(["n", "avg", "m2"]
            .iter()
            .map(|k| {
                Arc::new(Field::new(
                    format!("{}[{k}]", args.name),
                    DataType::Float64,
                    true,
                ))
            })
            .collect())
    }
    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Running {
            stat: self.stat,
            state: State::default(),
        }))
    }
    /// A sliding window frame's: its values kept and the moments computed afresh per frame.
    fn create_sliding_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Sliding {
            stat: self.stat,
            values: FrameValues::default(),
        }))
    }
}

#[derive(Debug)]
struct Running {
    stat: Stat,
    state: State,
}

impl Accumulator for Running {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            for x in doubles(a)? {
                self.state.update(x);
            }
        }
        Ok(())
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(n), Some(avg), Some(m2)) = (states.first(), states.get(1), states.get(2)) else {
            return exec_err!("variance: a state has three fields");
        };
        let (n, avg, m2) = (
            n.as_primitive::<Float64Type>(),
            avg.as_primitive::<Float64Type>(),
            m2.as_primitive::<Float64Type>(),
        );
        for i in 0..n.len() {
            if n.is_valid(i) && avg.is_valid(i) && m2.is_valid(i) {
                self.state.merge(State {
                    n: n.value(i),
                    avg: avg.value(i),
                    m2: m2.value(i),
                });
            }
        }
        Ok(())
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let s = self.state;
        Ok(vec![
            ScalarValue::Float64(Some(s.n)),
            ScalarValue::Float64(Some(s.avg)),
            ScalarValue::Float64(Some(s.m2)),
        ])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float64(self.state.result(self.stat)))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

#[derive(Debug)]
struct Sliding {
    stat: Stat,
    values: FrameValues<f64>,
}

impl Sliding {
    fn state(&self) -> State {
        let mut s = State::default();
        for x in self.values.iter() {
            s.update(*x);
        }
        s
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
        exec_err!("variance: a sliding frame is not merged")
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let s = Sliding::state(self);
        Ok(vec![
            ScalarValue::Float64(Some(s.n)),
            ScalarValue::Float64(Some(s.avg)),
            ScalarValue::Float64(Some(s.m2)),
        ])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float64(Sliding::state(self).result(self.stat)))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.heap_size()
    }
}
