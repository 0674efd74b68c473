# Sourced by scripts/pgo.sh and scripts/bench.sh: the host triple, and the name of cargo's
# RUSTFLAGS variable for it, which adds to the flags of .cargo/config.toml where RUSTFLAGS would
# replace them.
host_triple="$(rustc -vV | sed -n 's/^host: //p')"
host_rustflags_var="CARGO_TARGET_$(echo "$host_triple" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
