//! DType names shared with JS ("f32", "f16", "bf16", "f64", "i32", "u8", "bool").

use crate::error::invalid;
use fusegraph_core::{DType, Result};

/// Parses a dtype name from JS.
pub fn parse(op: &'static str, name: &str) -> Result<DType> {
    DType::parse(name).ok_or_else(|| {
        invalid(
            op,
            "dtype",
            "one of f32, f16, bf16, f64, i32, u8, bool",
            name,
        )
    })
}
