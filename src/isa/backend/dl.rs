//! A thin `dlopen`/`dlsym` wrapper: back-ends are found at run time, never linked.

use std::ffi::{c_void, CStr, CString};

/// A shared library opened for the life of the process. It is never closed, so function
/// pointers taken from it stay valid wherever they are stored.
pub struct Library {
    handle: *mut c_void,
    /// The name or path it was opened by.
    pub name: String,
}

// SAFETY: a dlopen handle is a process-wide token; dlsym is thread-safe.
unsafe impl Send for Library {}
unsafe impl Sync for Library {}

impl Library {
    /// Opens `name` (a path, or a file name searched the way the dynamic linker does).
    pub fn open(name: &str) -> Option<Library> {
        let c_name = CString::new(name).ok()?;
        // SAFETY: a valid NUL-terminated name; RTLD_LOCAL keeps its symbols out of the global
        // namespace so two LLVMs cannot collide.
        let handle = unsafe { libc::dlopen(c_name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        (!handle.is_null()).then(|| Library {
            handle,
            name: name.to_owned(),
        })
    }

    /// The address of symbol `name`, or `None` when it is not exported.
    pub fn address(&self, name: &CStr) -> Option<*mut c_void> {
        // SAFETY: a live handle and a NUL-terminated name.
        let address = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        (!address.is_null()).then_some(address)
    }
}

/// Takes symbol `$name` of `$lib` as a value of function-pointer type `$ty`, or returns
/// `None` from the enclosing function.
///
/// The caller vouches (by using this in an `unsafe` context) that `$ty` is the symbol's real C
/// signature.
macro_rules! symbol {
    ($lib:expr, $name:literal, $ty:ty) => {{
        let address = $lib.address($name)?;
        std::mem::transmute::<*mut std::ffi::c_void, $ty>(address)
    }};
}
pub(crate) use symbol;
