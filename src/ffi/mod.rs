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

use crate::records::Status;

/// Runs `body`, turning a panic into `on_panic` so that no unwind crosses the C boundary.
pub(crate) fn guard(on_panic: Status, body: impl FnOnce() -> Status) -> i32 {
    guard_code(on_panic, || body() as i32)
}

/// [`guard`] for bodies that return a raw status (a client callback's status passed through).
pub(crate) fn guard_code(on_panic: Status, body: impl FnOnce() -> i32) -> i32 {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(on_panic as i32)
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
