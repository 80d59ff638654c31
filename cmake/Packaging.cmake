# What `cmake --install` lays out and what `cpack -G DEB` packs, in one place
# (included last by the top-level CMakeLists.txt, once every target exists),
# plus the version header: the project version set in project() is the only
# version there is; --version, the OTLP scope and the package all show it.
#
#   PREFIX/bin/funclatency
#   PREFIX/lib/funclatency/funclatency-{otlp,prometheus,offline}.so
#                                      found from the binary as ../lib/funclatency (exporter_module.h)
#   PREFIX/share/man/man8/funclatency.8.gz
#   PREFIX/share/bash-completion/completions/funclatency
#   PREFIX/lib/systemd/system/funclatency.service            ExecStart=PREFIX/bin/funclatency
#   PREFIX/share/doc/funclatency/                            README.md, docs/ (the guide), deploy/ examples
include(GNUInstallDirs)

# --- Version ------------------------------------------------------------------
set(FUNCLATENCY_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
set(funclatency_version_header ${FUNCLATENCY_GENERATED_DIR}/funclatency_version.h)
set(funclatency_version_args
    -DVERSION=${PROJECT_VERSION} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
    -DOUTPUT=${funclatency_version_header} -P ${CMAKE_CURRENT_LIST_DIR}/VersionHeader.cmake)
execute_process(COMMAND ${CMAKE_COMMAND} ${funclatency_version_args})
# Runs on every build (a new commit shows without reconfiguring); the header
# changes, and config.cpp recompiles, only when the revision does.
add_custom_target(funclatency_version_header
  COMMAND ${CMAKE_COMMAND} ${funclatency_version_args}
  BYPRODUCTS ${funclatency_version_header} VERBATIM)
add_dependencies(fl_command_line funclatency_version_header)
target_include_directories(fl_command_line PRIVATE ${FUNCLATENCY_GENERATED_DIR})

# --- Install layout -----------------------------------------------------------
# bin and lib/funclatency are fixed (not GNUInstallDirs' BINDIR/LIBDIR, which
# may be lib/x86_64-linux-gnu): the binary finds its modules at
# ../lib/funclatency, so the two must not move apart.
install(TARGETS funclatency RUNTIME DESTINATION bin)
foreach(module funclatency_otlp funclatency_prometheus funclatency_offline)
  if(TARGET ${module})
    install(TARGETS ${module} LIBRARY DESTINATION lib/funclatency)
  endif()
endforeach()

# Debian wants man pages compressed (gzip -n: no name or time, so the same
# page gives the same bytes).
set(funclatency_man_page ${FUNCLATENCY_GENERATED_DIR}/funclatency.8.gz)
add_custom_command(
  OUTPUT ${funclatency_man_page}
  COMMAND gzip -9nc ${CMAKE_SOURCE_DIR}/docs/funclatency.8 > ${funclatency_man_page}
  DEPENDS ${CMAKE_SOURCE_DIR}/docs/funclatency.8
  COMMENT "Compressing the man page")
add_custom_target(funclatency_man ALL DEPENDS ${funclatency_man_page})
install(FILES ${funclatency_man_page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

install(FILES completions/funclatency.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME funclatency)

# The unit names the binary by its installed path: deploy/ holds it with
# /usr/bin (the package's), rewritten here for any other prefix at install
# time (CPack installs with CMAKE_INSTALL_PREFIX=/usr and a DESTDIR).
install(CODE "set(FUNCLATENCY_UNIT_SOURCE \"${CMAKE_SOURCE_DIR}/deploy/systemd/funclatency.service\")
set(FUNCLATENCY_UNIT_STAGING \"${FUNCLATENCY_GENERATED_DIR}/systemd\")")
install(SCRIPT cmake/InstallUnit.cmake)

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The guide the README links to (docs/NAME.md), under the same relative path.
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md"
        PATTERN "*.yaml" PATTERN "*.png")
install(DIRECTORY deploy/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/deploy
        PATTERN systemd EXCLUDE)

# --- Debian package -----------------------------------------------------------
# cpack -G DEB (or: cpack --config BUILD/CPackConfig.cmake -B OUTDIR) packs
# what the rules above install, stripped, under /usr. Depends and Recommends
# come from dpkg-shlibdeps at packing time (cmake/DebianDependencies.cmake):
# the binary's libraries are Depends, the exporter modules' (gRPC, protobuf,
# libcurl, cpp-httplib, OpenSSL) Recommends, so
# `apt-get install --no-install-recommends` gives a small tool whose --otlp
# and --prometheus say which library is missing.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME funclatency)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "funclatency maintainers <funclatency@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "latency histograms of any user-space function, with eBPF uprobes")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "\
funclatency times every call of any function with a symbol, in any binary or
shared library (C, C++, Go), in processes that are already running, and prints
a log2 latency histogram with percentiles. It exports real histograms over
OTLP (--otlp) and to Prometheus (--prometheus). Those exporters are modules
loaded on demand: their libraries are Recommends.")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # funclatency_VERSION_ARCH.deb
# DESTDIR staging with CMAKE_INSTALL_PREFIX=/usr, so the unit's ExecStart
# (cmake/InstallUnit.cmake) says /usr/bin.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_PROJECT_CONFIG_FILE ${FUNCLATENCY_GENERATED_DIR}/DebianDependencies.cmake)
set(funclatency_modules)
foreach(module funclatency_otlp funclatency_prometheus)
  if(TARGET ${module})
    list(APPEND funclatency_modules $<TARGET_FILE:${module}>)
  endif()
endforeach()
# `report` and `diff` are the tool's own commands: their module's libraries
# are Depends, as the binary's are.
set(funclatency_core_files $<TARGET_FILE:funclatency>)
if(TARGET funclatency_offline)
  list(APPEND funclatency_core_files $<TARGET_FILE:funclatency_offline>)
endif()
file(GENERATE OUTPUT ${CPACK_PROJECT_CONFIG_FILE} CONTENT
"# Generated from cmake/Packaging.cmake: the files dpkg-shlibdeps reads.
set(FUNCLATENCY_SHLIBDEPS_BINARY \"${funclatency_core_files}\")
set(FUNCLATENCY_SHLIBDEPS_MODULES \"${funclatency_modules}\")
set(FUNCLATENCY_SHLIBDEPS_SCRATCH \"${FUNCLATENCY_GENERATED_DIR}/shlibdeps\")
include(\"${CMAKE_CURRENT_LIST_DIR}/DebianDependencies.cmake\")
")
# cpack packs the build as it is (a test packs the build it just tested, in
# seconds): its preinstall step does not rebuild everything first.
# DebianDependencies.cmake refuses a build whose binaries are missing.
# Build, then install or pack: cmake --build B && cpack --config B/CPackConfig.cmake
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
include(CPack)
