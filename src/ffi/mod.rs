//! The C ABI of the 0.3.0 header set. This layer validates every pointer, size and handle,
//! keeps panics from crossing into C, and converts between C and Rust types; it holds no
//! decoding logic.

pub mod c_enums;
pub mod c_instrument;
pub mod handle;
pub mod info;
pub mod parse;
pub mod pma;
pub mod scan;
pub mod types;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::records::Status;

/// Runs `body`, turning a panic into `on_panic` so that no unwind crosses the C boundary.
pub(crate) fn guard(on_panic: Status, body: impl FnOnce() -> Status) -> i32 {
    guard_code(on_panic, || body() as i32)
}

/// [`guard`] for bodies that return a raw status (a client callback's status passed through).
pub(crate) fn guard_code(on_panic: Status, body: impl FnOnce() -> i32) -> i32 {
    survived(
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)),
        on_panic as i32,
    )
}

/// Panics caught at the C boundary since the library was loaded. Each is a bug that a client
/// only sees as an error status; the test suites read this count and fail when it moves.
static CAUGHT_PANICS: AtomicU64 = AtomicU64::new(0);

/// How many panics the exported functions have caught so far (see [`CAUGHT_PANICS`]).
pub fn caught_panics() -> u64 {
    CAUGHT_PANICS.load(Ordering::Relaxed)
}

/// The value of a body run under `catch_unwind`, or `on_panic` (counted) if it panicked.
pub(crate) fn survived<T>(result: std::thread::Result<T>, on_panic: T) -> T {
    result.unwrap_or_else(|_| {
        CAUGHT_PANICS.fetch_add(1, Ordering::Relaxed);
        on_panic
    })
}

/// Borrows `len` bytes at `ptr`; `None` for a null pointer or a length no allocation can have.
///
/// # Safety
/// A non-null `ptr` must point to `len` readable bytes that outlive the returned slice.
pub(crate) unsafe fn bytes<'a>(ptr: *const u8, len: u64) -> Option<&'a [u8]> {
    if ptr.is_null() || len > isize::MAX as u64 {
        return None;
    }
    Some(std::slice::from_raw_parts(ptr, len as usize))
}
