//! The one boundary every exported function goes through: panics stop here, pointers and sizes
//! from C are turned into references here, and handles are resolved here.
//!
//! * [`ffi_boundary!`] wraps the body of every `extern "C"` function; a panic in it becomes the
//!   function's documented failure value instead of unwinding into C.
//! * [`bytes`], [`c_str`] and [`OutPtr`] are the only places a C pointer becomes a Rust reference.
//! * [`Registry`] maps the integer handles given to C (decoder handles, PMA decoders) to their
//!   state, so a stale or invented handle is recognised instead of dereferenced.

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::types::StatusCode;
use crate::records::Status;

/// Runs the body of an `extern "C"` function: `ffi_boundary!(on_panic, { body })` returns the
/// body's value in its C form, or `on_panic` in its C form if the body panicked.
///
/// `return` inside the body leaves the body (it is a closure), with a value of the body's type.
macro_rules! ffi_boundary {
    ($on_panic:expr, $body:block) => {
        $crate::ffi::boundary::catch_panic($on_panic, || $body)
    };
}
pub(crate) use ffi_boundary;

/// What an `extern "C"` body produces, and how C receives it.
pub(crate) trait ToC {
    type C;
    fn to_c(self) -> Self::C;
}

impl ToC for Status {
    type C = StatusCode;
    fn to_c(self) -> StatusCode {
        self as StatusCode
    }
}

/// A raw status: one passed through from a client callback.
impl ToC for StatusCode {
    type C = StatusCode;
    fn to_c(self) -> StatusCode {
        self
    }
}

/// A static string, handed to C as a pointer to its first character.
impl ToC for &'static CStr {
    type C = *const c_char;
    fn to_c(self) -> *const c_char {
        self.as_ptr()
    }
}

/// Panics caught at the C boundary since the library was loaded. Each is a bug that a client
/// only sees as an error status; the test suites read this count and fail when it moves.
static CAUGHT_PANICS: AtomicU64 = AtomicU64::new(0);

/// How many panics the exported functions have caught so far.
pub fn caught_panics() -> u64 {
    CAUGHT_PANICS.load(Ordering::Relaxed)
}

/// The implementation of [`ffi_boundary!`]: the single place a panic is caught, and counted.
pub(crate) fn catch_panic<B: ToC>(on_panic: impl ToC<C = B::C>, body: impl FnOnce() -> B) -> B::C {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value.to_c(),
        Err(_) => {
            CAUGHT_PANICS.fetch_add(1, Ordering::Relaxed);
            on_panic.to_c()
        }
    }
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

/// Borrows the NUL-terminated string at `ptr`; `None` for a null pointer.
///
/// # Safety
/// A non-null `ptr` must point to a NUL-terminated string that outlives the returned reference.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char) -> Option<&'a CStr> {
    (!ptr.is_null()).then(|| CStr::from_ptr(ptr))
}

/// A non-null pointer through which C receives one `T` (an out-parameter).
pub(crate) struct OutPtr<T>(NonNull<T>);

impl<T> OutPtr<T> {
    /// `None` for a null pointer.
    ///
    /// # Safety
    /// A non-null `ptr` must be valid for reading and writing one `T` while the result lives.
    pub(crate) unsafe fn new(ptr: *mut T) -> Option<OutPtr<T>> {
        NonNull::new(ptr).map(OutPtr)
    }

    pub(crate) fn write(&mut self, value: T) {
        // SAFETY: `new`'s contract.
        unsafe { self.0.as_ptr().write(value) }
    }
}

impl<T: Copy> OutPtr<T> {
    /// What C put there (an in/out parameter).
    pub(crate) fn read(&self) -> T {
        // SAFETY: `new`'s contract.
        unsafe { self.0.as_ptr().read() }
    }
}

/// The objects behind the integer handles given to C.
///
/// Ids come from a counter starting at 1 and are never reused, so 0 is never valid and a
/// destroyed handle stays invalid. Each object is reference-counted: a call that looked one up
/// keeps it alive even if another thread destroys the handle meanwhile.
pub(crate) struct Registry<T> {
    next_id: AtomicU64,
    live: Mutex<BTreeMap<u64, Arc<T>>>,
}

impl<T> Registry<T> {
    pub(crate) const fn new() -> Registry<T> {
        Registry {
            next_id: AtomicU64::new(1),
            live: Mutex::new(BTreeMap::new()),
        }
    }

    fn live(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<T>>> {
        // Every operation on the map completes or leaves it untouched, so poisoning is harmless.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `object` and returns its new id.
    pub(crate) fn insert(&self, object: T) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.live().insert(id, Arc::new(object));
        id
    }

    /// The object of `id`, or `None` for an id never handed out or already removed.
    pub(crate) fn get(&self, id: u64) -> Option<Arc<T>> {
        self.live().get(&id).cloned()
    }

    /// Forgets `id`; false when it was not live.
    pub(crate) fn remove(&self, id: u64) -> bool {
        // The object is dropped after the registry's lock is released.
        let removed = self.live().remove(&id);
        removed.is_some()
    }
}
