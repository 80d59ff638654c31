# Go programs that the tests and benchmarks trace (tests/programs/go, the Go
# fixtures of tests/unit/symbols and tests/unit/stacks, bench/go_hot_target),
# built with the system's Go toolchain (Debian's golang-go), offline.
#
# Go 1.19 ships its standard library compiled for the default settings; a
# build with other settings compiles it again: with -trimpath it took 12 CPU-s
# (go-workload, a cold cache), -buildmode=pie 14. So the programs build with the defaults
# (none of them imports a package that uses cgo, so they are static binaries
# all the same), except the PIE fixtures, and all share one build cache in
# the build tree and build one after the other, the second PIE reusing the
# first's library. Each with its own cache and settings, side by side, they
# took 71 s of the build's CPU; now ~18 (docs/DEVELOPING.md, "Building").
#
#   funclatency_go_build(<target> OUTPUT <file> SOURCE_DIR <dir> [ALL]
#                        [ARGS arg...] [ENV VAR=value...] [DEPENDS file...])
# Defines <target>, which runs `go build ARGS -o OUTPUT .` in SOURCE_DIR with
# the shared environment plus ENV (which wins), after every Go build defined
# before it. FUNCLATENCY_GO is empty when Go is not installed.

find_program(FUNCLATENCY_GO NAMES go PATHS /usr/lib/go/bin)
set(FUNCLATENCY_GO_ENV GOCACHE=${PROJECT_BINARY_DIR}/gocache GOPATH=${PROJECT_BINARY_DIR}/gopath
                       GOENV=off GOFLAGS= GOPROXY=off GOWORK=off GOTOOLCHAIN=local)

function(funclatency_go_build target)
  cmake_parse_arguments(ARG "ALL" "OUTPUT;SOURCE_DIR" "ARGS;ENV;DEPENDS" ${ARGN})
  if(NOT ARG_OUTPUT OR NOT ARG_SOURCE_DIR)
    message(FATAL_ERROR "funclatency_go_build(${target}): OUTPUT and SOURCE_DIR are required")
  endif()
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -E env ${FUNCLATENCY_GO_ENV} ${ARG_ENV}
            ${FUNCLATENCY_GO} build ${ARG_ARGS} -o ${ARG_OUTPUT} .
    WORKING_DIRECTORY ${ARG_SOURCE_DIR}
    DEPENDS ${ARG_DEPENDS}
    COMMENT "Building ${target} with ${FUNCLATENCY_GO}"
    VERBATIM)
  set(all)
  if(ARG_ALL)
    set(all ALL)
  endif()
  add_custom_target(${target} ${all} DEPENDS ${ARG_OUTPUT})
  # One after the other, across directories: a target-level dependency on the
  # Go build defined last (make and Ninja both honour it).
  get_property(previous GLOBAL PROPERTY FUNCLATENCY_LAST_GO_BUILD)
  if(previous)
    add_dependencies(${target} ${previous})
  endif()
  set_property(GLOBAL PROPERTY FUNCLATENCY_LAST_GO_BUILD ${target})
endfunction()
