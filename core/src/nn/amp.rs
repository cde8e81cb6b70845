//! Autocast: a scope in which the matmul-heavy layers ([`super::Linear`],
//! [`super::Conv2d`]) compute in f16 or bf16 while parameters stay f32
//! (master weights). Casts are ops, so autograd returns f32 gradients for
//! the f32 parameters. Reductions that need range (softmax, cross-entropy,
//! norms) keep computing in f32 because their inputs are cast up first.

use std::cell::Cell;

use crate::dtype::DType;
use crate::error::{Error, Result};

thread_local! {
    static AUTOCAST: Cell<Option<DType>> = const { Cell::new(None) };
}

/// Runs `f` with layers computing in `dtype` (f16 or bf16) on this thread.
/// Scopes nest; the previous setting comes back when `f` returns.
pub fn autocast<R>(dtype: DType, f: impl FnOnce() -> Result<R>) -> Result<R> {
    if !matches!(dtype, DType::F16 | DType::BF16) {
        return Err(Error::UnsupportedDType {
            op: "autocast",
            dtype,
            why: "autocast computes in f16 or bf16",
        });
    }
    // Restored by a guard, so an early return or unwind cannot leak the scope.
    struct Restore(Option<DType>);
    impl Drop for Restore {
        fn drop(&mut self) {
            AUTOCAST.with(|a| a.set(self.0));
        }
    }
    let _restore = Restore(AUTOCAST.with(|a| a.replace(Some(dtype))));
    f()
}

/// The dtype layers compute in now (`None` outside an autocast scope).
pub fn autocast_dtype() -> Option<DType> {
    AUTOCAST.with(|a| a.get())
}
