//! Opens the disassembler libraries at run time with `libloading`: back-ends are found, never
//! linked.

use std::ffi::CStr;
use std::mem::ManuallyDrop;

use libloading::os::unix::{Library as Loaded, RTLD_LOCAL, RTLD_NOW};

/// A shared library opened for the life of the process. It is never closed, so function
/// pointers taken from it stay valid wherever they are stored.
pub struct Library {
    loaded: ManuallyDrop<Loaded>,
    /// The name or path it was opened by.
    pub name: String,
}

impl Library {
    /// Opens `name` (a path, or a file name searched the way the dynamic linker does).
    pub fn open(name: &str) -> Option<Library> {
        // SAFETY: only disassembler libraries (COMGR, libLLVM) are opened, whose initialisers
        // have no preconditions. RTLD_LOCAL keeps their symbols out of the global namespace so
        // two LLVMs cannot collide.
        let loaded = unsafe { Loaded::open(Some(name), RTLD_NOW | RTLD_LOCAL) }.ok()?;
        Some(Library {
            loaded: ManuallyDrop::new(loaded),
            name: name.to_owned(),
        })
    }

    /// Symbol `name` as a function pointer of type `F`, or `None` when it is not exported (or
    /// is NULL).
    ///
    /// # Safety
    /// `F` must be a function-pointer type with the symbol's real C signature.
    pub unsafe fn function<F: Copy>(&self, name: &CStr) -> Option<F> {
        // `Option<F>` has the layout of a nullable function pointer, so NULL reads as `None`.
        let symbol = self.loaded.get::<Option<F>>(name).ok()?;
        *symbol
    }
}
