//! The last line of defence: every export returns `Result`, so a panic is a
//! bug. wasm32 aborts on panic (a `RuntimeError: unreachable` trap in JS);
//! this hook records the panic message first, so the JS wrapper can throw an
//! `Error` with code `FG_PANIC` and the message instead of a bare trap.

use std::cell::RefCell;
use wasm_bindgen::prelude::*;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs once when the module is instantiated.
#[wasm_bindgen(start)]
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info.to_string();
        LAST_PANIC.with(|p| {
            if let Ok(mut slot) = p.try_borrow_mut() {
                *slot = Some(message);
            }
        });
    }));
}

/// The message of the panic that trapped the last call, if any (cleared).
#[wasm_bindgen(js_name = takePanicMessage)]
pub fn take_panic_message() -> Option<String> {
    LAST_PANIC.with(|p| p.try_borrow_mut().ok().and_then(|mut s| s.take()))
}

/// Panics on purpose, so the tests can check that a trap reaches JS as an
/// `Error` with code `FG_PANIC` and this message.
#[wasm_bindgen(js_name = panicForTest)]
pub fn panic_for_test() {
    panic!("fusegraph: deliberate panic for the boundary test");
}
