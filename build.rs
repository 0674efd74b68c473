fn main() {
    // SONAME of the shared library: consumers link against the 0.3 ABI.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librocprof-trace-decoder.so.0.3");
}
