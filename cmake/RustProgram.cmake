# Rust programs that the tests trace (tests/programs/rust), built with
# Debian's rustc (scripts/setup installs it for the tests) and no cargo: one
# crate of a few files, nothing fetched, so a rustc call per program is the
# whole build (about a second each: -O -g against the prebuilt standard
# library). Debian's /usr/bin/rustc is asked for first, before a rustup
# toolchain on PATH, so that the tests see the compiler the package list names;
# -DFUNCLATENCY_RUSTC=... picks another.
#
#   funclatency_rust_build(<target> <output> <main.rs> [rustc flag...])
# Defines <target>, built by a whole build (ALL), which runs
# `rustc -O -g FLAGS -o OUTPUT main.rs` again when any .rs file beside main.rs
# changes. FUNCLATENCY_RUSTC is empty when rustc is not installed.

find_program(FUNCLATENCY_RUSTC NAMES rustc HINTS /usr/bin)

function(funclatency_rust_build target output main)
  get_filename_component(crate_dir ${main} DIRECTORY)
  file(GLOB crate_sources CONFIGURE_DEPENDS ${crate_dir}/*.rs)
  add_custom_command(OUTPUT ${output}
    COMMAND ${FUNCLATENCY_RUSTC} -O -g ${ARGN} -o ${output} ${main}
    DEPENDS ${crate_sources} COMMENT "Building ${target} with ${FUNCLATENCY_RUSTC}" VERBATIM)
  add_custom_target(${target} ALL DEPENDS ${output})
endfunction()
