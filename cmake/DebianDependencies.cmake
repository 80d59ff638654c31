# CPack-time step of cmake/Packaging.cmake (CPACK_PROJECT_CONFIG_FILE): the
# package's Depends and Recommends, from dpkg-shlibdeps run over the built
# binary and the report/diff module (Depends) and the exporter modules
# (Recommends; dpkg-shlibdeps drops from Recommends what Depends already has).
# The files are the build tree's: stripping changes no library they need.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
find_program(FUNCLATENCY_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NOT FUNCLATENCY_DPKG_SHLIBDEPS)
  message(FATAL_ERROR "compute the package's Depends: dpkg-shlibdeps is not installed "
                      "(apt-get install dpkg-dev)")
endif()
foreach(file IN LISTS FUNCLATENCY_SHLIBDEPS_BINARY FUNCLATENCY_SHLIBDEPS_MODULES)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "compute the package's Depends: ${file} is not built "
                        "(build the project before cpack)")
  endif()
endforeach()
# dpkg-shlibdeps wants to be run from a source package: give it an empty one.
if(CPACK_PACKAGE_DIRECTORY)
  set(shlibdeps_dir "${CPACK_PACKAGE_DIRECTORY}/_shlibdeps")
else()
  set(shlibdeps_dir "${FUNCLATENCY_SHLIBDEPS_SCRATCH}")
endif()
file(MAKE_DIRECTORY "${shlibdeps_dir}/debian")
file(WRITE "${shlibdeps_dir}/debian/control" "")
set(core_args)
foreach(file IN LISTS FUNCLATENCY_SHLIBDEPS_BINARY)
  list(APPEND core_args "-e${file}")
endforeach()
set(module_args)
foreach(module IN LISTS FUNCLATENCY_SHLIBDEPS_MODULES)
  list(APPEND module_args "-e${module}")
endforeach()
execute_process(
  COMMAND "${FUNCLATENCY_DPKG_SHLIBDEPS}" -O --warnings=0
          -dDepends ${core_args} -dRecommends ${module_args}
  WORKING_DIRECTORY "${shlibdeps_dir}"
  OUTPUT_VARIABLE substvars ERROR_VARIABLE shlibdeps_error RESULT_VARIABLE shlibdeps_status)
file(REMOVE_RECURSE "${shlibdeps_dir}")
if(NOT shlibdeps_status EQUAL 0)
  message(FATAL_ERROR "compute the package's Depends: dpkg-shlibdeps failed (${shlibdeps_status}): "
                      "${shlibdeps_error} (every library must come from an installed Debian package)")
endif()
string(REGEX MATCH "shlibs:Depends=([^\n]*)" _ "${substvars}")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${CMAKE_MATCH_1}")
string(REGEX MATCH "shlibs:Recommends=([^\n]*)" _ "${substvars}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "${CMAKE_MATCH_1}")
if(NOT CPACK_DEBIAN_PACKAGE_DEPENDS)
  message(FATAL_ERROR "compute the package's Depends: dpkg-shlibdeps printed no shlibs:Depends "
                      "for ${FUNCLATENCY_SHLIBDEPS_BINARY}: ${substvars}")
endif()
