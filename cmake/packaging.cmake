# Install rules and the CPack .deb (docs/operations.md, "Install").
# The .deb installs under /usr. The binary targets' install rule (bin/) is in
# the top CMakeLists.txt.
# The unit's ExecStart names the installed gpuobsd: filled in at install time,
# where the prefix is known (`cmake --install --prefix /usr/local`, or cpack's
# /usr), not at configure time.
include(GNUInstallDirs)
set(GPUOBS_UNIT_OUT ${PROJECT_BINARY_DIR}/systemd/gpuobsd.service)
install(CODE "
  set(GPUOBS_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/systemd/gpuobsd.service.in\" \"${GPUOBS_UNIT_OUT}\" @ONLY)
")
install(FILES ${GPUOBS_UNIT_OUT} DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/systemd/gpuobs.sysusers DESTINATION lib/sysusers.d RENAME gpuobs.conf)
install(FILES ${PROJECT_SOURCE_DIR}/systemd/gpuobs.tmpfiles DESTINATION lib/tmpfiles.d RENAME gpuobs.conf)
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md DESTINATION share/doc/gpuobs)
# The drop-in that lets the Prometheus endpoint listen (the unit has no network).
install(FILES ${PROJECT_SOURCE_DIR}/systemd/gpuobsd-metrics.conf DESTINATION share/doc/gpuobs/examples)
# The configuration is a conffile: an upgrade keeps the administrator's edits.
set(GPUOBS_CONFIG_FILE ${PROJECT_SOURCE_DIR}/config/gpuobsd.conf)
if(EXISTS ${GPUOBS_CONFIG_FILE})
  install(FILES ${GPUOBS_CONFIG_FILE} DESTINATION /etc/gpuobs)
  set(GPUOBS_CONFFILES "/etc/gpuobs/gpuobsd.conf\n")
else()
  message(WARNING "config/gpuobsd.conf is missing: the package will have no configuration file")
  set(GPUOBS_CONFFILES "")
endif()

# Man pages from --help (help2man): one source of truth for the options.
find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(MAN_DIR ${PROJECT_BINARY_DIR}/man)
  add_custom_command(OUTPUT ${MAN_DIR}/gpuobsd.8
    COMMAND ${CMAKE_COMMAND} -E make_directory ${MAN_DIR}
    COMMAND ${HELP2MAN} --no-info --section 8 --name "record every GPU process on this host"
            --version-string ${PROJECT_VERSION} --output ${MAN_DIR}/gpuobsd.8 $<TARGET_FILE:gpuobsd>
    DEPENDS gpuobsd COMMENT "gpuobsd.8 from gpuobsd --help")
  add_custom_command(OUTPUT ${MAN_DIR}/gpuobs.1
    COMMAND ${CMAKE_COMMAND} -E make_directory ${MAN_DIR}
    COMMAND ${HELP2MAN} --no-info --section 1 --name "record and query GPU activity"
            --version-string ${PROJECT_VERSION} --output ${MAN_DIR}/gpuobs.1 $<TARGET_FILE:gpuobs>
    DEPENDS gpuobs COMMENT "gpuobs.1 from gpuobs --help")
  add_custom_target(man_pages ALL DEPENDS ${MAN_DIR}/gpuobsd.8 ${MAN_DIR}/gpuobs.1)
  install(FILES ${MAN_DIR}/gpuobsd.8 DESTINATION share/man/man8)
  install(FILES ${MAN_DIR}/gpuobs.1 DESTINATION share/man/man1)
else()
  message(WARNING "help2man not found (scripts/install-deps.sh): no man pages")
endif()

file(WRITE ${PROJECT_BINARY_DIR}/deb-control/conffiles "${GPUOBS_CONFFILES}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpuobs)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "gpuobs maintainers <gpuobs@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "system-wide GPU observer: BPF probes on CUDA/HIP and GPU driver ioctls")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Debug info stays in the build tree: the binaries are ~60 MB each with it.
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
# Self-contained binaries (GPUOBS_STATIC): glibc is the only shared library.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/deb/postinst
  ${PROJECT_SOURCE_DIR}/packaging/deb/prerm
  ${PROJECT_SOURCE_DIR}/packaging/deb/postrm
  ${PROJECT_BINARY_DIR}/deb-control/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
