# Install-time step of cmake/Packaging.cmake: installs the systemd unit with
# ExecStart naming the binary where this install puts it (the unit in deploy/
# says /usr/bin, the package's path). Runs inside cmake_install.cmake, where
# CMAKE_INSTALL_PREFIX is the prefix being installed to (DESTDIR apart).
file(READ "${FUNCLATENCY_UNIT_SOURCE}" unit)
string(FIND "${unit}" "ExecStart=/usr/bin/funclatency " exec_start)
if(exec_start EQUAL -1)
  message(FATAL_ERROR "install the systemd unit: ${FUNCLATENCY_UNIT_SOURCE} has no "
                      "'ExecStart=/usr/bin/funclatency ' line to point at the installed binary "
                      "(keep ExecStart on /usr/bin/funclatency; the install rewrites the prefix)")
endif()
string(REPLACE "ExecStart=/usr/bin/funclatency " "ExecStart=${CMAKE_INSTALL_PREFIX}/bin/funclatency "
               unit "${unit}")
file(MAKE_DIRECTORY "${FUNCLATENCY_UNIT_STAGING}")
file(WRITE "${FUNCLATENCY_UNIT_STAGING}/funclatency.service" "${unit}")
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES "${FUNCLATENCY_UNIT_STAGING}/funclatency.service")
