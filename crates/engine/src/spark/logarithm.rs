//! Spark's logarithms in place of DataFusion's: `log(x)` is the natural logarithm in Spark (the
//! base-10 one in DataFusion: `log(100)` was 2, Spark's 4.605…), `log(b, x)` is ln(x) / ln(b),
//! and every one is NULL where Spark's asymptote is (`ln(0)`, `log10(-1)`, `log(2, 0)`,
//! `log1p(-1)`: DataFusion gave -Infinity or NaN, which an UPDATE stored). DOUBLE in, DOUBLE out
//! (integers and DECIMALs are cast by the planner), as in Spark.
//!
//! To the last digit: Spark's generated code calls `java.lang.StrictMath` (fdlibm), whose `log`
//! is not always the correctly rounded one the platform's libm gives (a 3,000-expression campaign
//! against Spark found last-digit differences in `log(b, x)`). `log` is fdlibm's, ported here
//! operation for operation; `log10` is fdlibm's formula over it; `log2` is Spark's
//! ln(x) / ln(2); `log1p` is the `libm` crate's (FreeBSD's fdlibm-derived one). Spark's own
//! constant folding (a logarithm of literals only) calls `java.lang.Math` instead, which may
//! differ from StrictMath in the last digit: such an expression can differ there too.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// `log(x)` (natural) or `log(base, x)`.
    Log,
    Ln,
    Log10,
    Log2,
    Log1p,
}

/// The functions, to register in a planning context (each replaces DataFusion's of that name).
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    [Kind::Log, Kind::Ln, Kind::Log10, Kind::Log2, Kind::Log1p]
        .into_iter()
        .map(|kind| {
            let mut forms = vec![TypeSignature::Exact(vec![DataType::Float64])];
            if kind == Kind::Log {
                forms.push(TypeSignature::Exact(vec![
                    DataType::Float64,
                    DataType::Float64,
                ]));
            }
            Arc::new(ScalarUDF::from(SparkLog {
                kind,
                signature: Signature::one_of(forms, Volatility::Immutable),
            }))
        })
        .collect()
}

/// One argument's logarithm, NULL at or below Spark's asymptote (`UnaryLogExpression`).
fn unary(kind: Kind, x: f64) -> Option<f64> {
    let (asymptote, f): (f64, fn(f64) -> f64) = match kind {
        Kind::Log | Kind::Ln => (0.0, fdlibm_log),
        Kind::Log10 => (0.0, fdlibm_log10),
        // Spark's `Log2` is ln(x) / ln(2), not a base-2 logarithm (the last digit differs).
        Kind::Log2 => (0.0, |x| fdlibm_log(x) / fdlibm_log(2.0)),
        Kind::Log1p => (-1.0, libm::log1p),
    };
    (x.is_nan() || x > asymptote).then(|| f(x))
}

/// `log(base, x)` as Spark's `Logarithm`: NULL when either is at or below zero.
fn with_base(base: f64, x: f64) -> Option<f64> {
    (!(base <= 0.0 || x <= 0.0)).then(|| fdlibm_log(x) / fdlibm_log(base))
}

/// The high 32 bits of `x`, as fdlibm's `__HI`.
fn hi(x: f64) -> i32 {
    (x.to_bits() >> 32) as u32 as i32
}

/// `x` with its high 32 bits replaced, as fdlibm's `__HI(x) = h`.
fn with_hi(x: f64, h: i32) -> f64 {
    f64::from_bits((u64::from(h as u32) << 32) | (x.to_bits() & 0xffff_ffff))
}

/// fdlibm 5.3's `__ieee754_log` (Java's `StrictMath.log`), operation for operation: the
/// argument reduced to [sqrt(2)/2, sqrt(2)] and a degree-14 polynomial, summed in fdlibm's
/// order so that every rounding is the same. (The `libm` crate's `log` is musl's rewrite of
/// it, which rounds otherwise: ln(0.01) differed in the last digit.) Called for x > 0, NaN, +inf.
fn fdlibm_log(x: f64) -> f64 {
    const LN2_HI: u64 = 0x3fe6_2e42_fee0_0000;
    const LN2_LO: u64 = 0x3dea_39ef_3579_3c76;
    const LG: [u64; 7] = [
        0x3FE5_5555_5555_5593,
        0x3FD9_9999_9997_FA04,
        0x3FD2_4924_9422_9359,
        0x3FCC_71C5_1D8E_78AF,
        0x3FC7_4664_96CB_03DE,
        0x3FC3_9A09_D078_C69F,
        0x3FC2_F112_DF3E_5244,
    ];
    let (ln2_hi, ln2_lo) = (f64::from_bits(LN2_HI), f64::from_bits(LN2_LO));
    let lg = |i: usize| LG.get(i).map_or(0.0, |b| f64::from_bits(*b));
    let mut x = x;
    let mut hx = hi(x);
    let lx = x.to_bits() & 0xffff_ffff;
    let mut k: i32 = 0;
    if hx < 0x0010_0000 {
        if (hx & 0x7fff_ffff) == 0 && lx == 0 {
            return f64::NEG_INFINITY;
        }
        if hx < 0 {
            return f64::NAN;
        }
        k -= 54;
        x *= f64::from_bits(0x4350_0000_0000_0000);
        hx = hi(x);
    }
    if hx >= 0x7ff0_0000 {
        return x + x;
    }
    k += (hx >> 20) - 1023;
    hx &= 0x000f_ffff;
    let i = (hx + 0x95f64) & 0x0010_0000;
    x = with_hi(x, hx | (i ^ 0x3ff0_0000)); // normalize x or x/2
    k += i >> 20;
    let f = x - 1.0;
    if (0x000f_ffff & (2 + hx)) < 3 {
        // |f| < 2^-20
        if f == 0.0 {
            if k == 0 {
                return 0.0;
            }
            let dk = f64::from(k);
            return dk * ln2_hi + dk * ln2_lo;
        }
        let r = f * f * (0.5 - 0.333_333_333_333_333_3 * f);
        if k == 0 {
            return f - r;
        }
        let dk = f64::from(k);
        return dk * ln2_hi - ((r - dk * ln2_lo) - f);
    }
    let s = f / (2.0 + f);
    let dk = f64::from(k);
    let z = s * s;
    let mut i = hx - 0x6147a;
    let w = z * z;
    let j = 0x6b851 - hx;
    let t1 = w * (lg(1) + w * (lg(3) + w * lg(5)));
    let t2 = z * (lg(0) + w * (lg(2) + w * (lg(4) + w * lg(6))));
    i |= j;
    let r = t2 + t1;
    if i > 0 {
        let hfsq = 0.5 * f * f;
        if k == 0 {
            f - (hfsq - s * (hfsq + r))
        } else {
            dk * ln2_hi - ((hfsq - (s * (hfsq + r) + dk * ln2_lo)) - f)
        }
    } else if k == 0 {
        f - s * (f - r)
    } else {
        dk * ln2_hi - ((s * (f - r) - dk * ln2_lo) - f)
    }
}

/// fdlibm 5.3's `__ieee754_log10` (Java's `StrictMath.log10`): the exponent's part and
/// `log(mantissa) / ln 10` summed in the order fdlibm sums them. Called for x > 0 (and NaN, +inf).
fn fdlibm_log10(x: f64) -> f64 {
    let two54 = f64::from_bits(0x4350_0000_0000_0000);
    let ivln10 = f64::from_bits(0x3FDB_CB7B_1526_E50E);
    let log10_2hi = f64::from_bits(0x3FD3_4413_509F_6000);
    let log10_2lo = f64::from_bits(0x3D59_FEF3_11F1_2B36);
    let mut x = x;
    let mut hx = (x.to_bits() >> 32) as u32 as i32;
    let mut k: i32 = 0;
    if hx < 0x0010_0000 {
        // Subnormal (zero and negatives never reach here): scale up.
        k -= 54;
        x *= two54;
        hx = (x.to_bits() >> 32) as u32 as i32;
    }
    if hx >= 0x7ff0_0000 {
        return x + x;
    }
    k += (hx >> 20) - 1023;
    let i = ((k as u32) & 0x8000_0000) >> 31;
    let hx = (hx & 0x000f_ffff) | ((0x3ff - i as i32) << 20);
    let y = f64::from(k + i as i32);
    let x = f64::from_bits((u64::from(hx as u32) << 32) | (x.to_bits() & 0xffff_ffff));
    let z = y * log10_2lo + ivln10 * fdlibm_log(x);
    z + y * log10_2hi
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkLog {
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for SparkLog {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Log => "log",
            Kind::Ln => "ln",
            Kind::Log10 => "log10",
            Kind::Log2 => "log2",
            Kind::Log1p => "log1p",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // All-scalar arguments give one-row arrays, and the one-row result stands for a scalar.
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let floats = |a: &ArrayRef| -> Result<Vec<Option<f64>>> {
            match a.data_type() {
                DataType::Float64 => Ok(a.as_primitive::<Float64Type>().iter().collect()),
                other => exec_err!("{}: expected a DOUBLE, found {other}", self.name()),
            }
        };
        let out: Float64Array = match arrays.as_slice() {
            [x] => floats(x)?
                .into_iter()
                .map(|x| x.and_then(|x| unary(self.kind, x)))
                .collect(),
            [base, x] => floats(base)?
                .into_iter()
                .zip(floats(x)?)
                .map(|(b, x)| with_base(b?, x?))
                .collect(),
            _ => return exec_err!("{}: one or two arguments", self.name()),
        };
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logarithms_as_spark() {
        // Spark 4: log(100D) 4.605170185988092, ln(0D) NULL, ln(-1D) NULL, log10(0D) NULL,
        // log(2D, 8D) 3.0, log(-2D, 8D) NULL, log(2D, 0D) NULL, log2(0D) NULL, log(1D, 5D) inf.
        assert_eq!(unary(Kind::Log, 100.0), Some(4.605170185988092));
        assert_eq!(unary(Kind::Ln, 0.0), None);
        assert_eq!(unary(Kind::Ln, -1.0), None);
        assert_eq!(unary(Kind::Log10, 0.0), None);
        assert_eq!(unary(Kind::Log2, 0.0), None);
        assert_eq!(unary(Kind::Log1p, -1.0), None);
        assert_eq!(unary(Kind::Log10, 1000.0), Some(3.0));
        assert!(unary(Kind::Ln, f64::NAN).is_some_and(f64::is_nan));
        assert_eq!(with_base(2.0, 8.0), Some(3.0));
        assert_eq!(with_base(-2.0, 8.0), None);
        assert_eq!(with_base(2.0, 0.0), None);
        assert_eq!(with_base(1.0, 5.0), Some(f64::INFINITY));
    }
}
