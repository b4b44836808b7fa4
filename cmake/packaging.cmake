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
# The documents the man pages point to (packaging/man/see-also.h2m).
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md ${PROJECT_SOURCE_DIR}/docs/schema.md
              ${PROJECT_SOURCE_DIR}/docs/reports.md ${PROJECT_SOURCE_DIR}/docs/export.md DESTINATION share/doc/gpuobs)
# Completion of subcommands, report names and options (read from gpuobs itself).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/bash-completion/gpuobs DESTINATION share/bash-completion/completions)
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
            --version-string ${PROJECT_VERSION} --include ${PROJECT_SOURCE_DIR}/packaging/man/see-also.h2m
            --output ${MAN_DIR}/gpuobs.1 $<TARGET_FILE:gpuobs>
    DEPENDS gpuobs ${PROJECT_SOURCE_DIR}/packaging/man/see-also.h2m COMMENT "gpuobs.1 from gpuobs --help")
  # A page per subcommand, git-style (gpuobs-record(1), gpuobs-export-pprof(1)):
  # help2man reads `gpuobs SUB --help` through a wrapper named after the page,
  # which runs gpuobs with argv[0] "gpuobs" so the usage line reads as typed.
  set(GPUOBS_SUBCOMMAND_PAGES
    "record|record|run a command and record its GPU activity and that of its children"
    "report|report|print reports over a capture"
    "sql|sql|run a read-only SQL query over a capture"
    "stacks|stacks|the call stacks behind the most launches, bytes or blocked time"
    "export-folded|export folded|folded stacks for flame graphs"
    "export-perfetto|export perfetto|a Perfetto trace of a capture"
    "export-chrome|export chrome|a Chrome JSON trace of a capture"
    "export-pprof|export pprof|a pprof profile of a capture's stacks"
    "export-html|export html|one self-contained HTML page of a capture"
    "replay|replay|rebuild the GPU queues, their ordering and hazards from a capture"
    "status|status|is gpuobsd up, what it probes, its rates, drops and segments"
    "segments|segments|list gpuobsd's segment files"
    "check|check|check captures for damage"
    "upgrade|upgrade|bring captures of older gpuobs versions up to this schema")
  set(GPUOBS_MAN_PAGES ${MAN_DIR}/gpuobsd.8 ${MAN_DIR}/gpuobs.1)
  foreach(page IN LISTS GPUOBS_SUBCOMMAND_PAGES)
    string(REPLACE "|" ";" fields "${page}")
    list(GET fields 0 stem)
    list(GET fields 1 words)
    list(GET fields 2 summary)
    set(wrapper ${MAN_DIR}/bin/gpuobs-${stem})
    file(GENERATE OUTPUT ${wrapper}
      CONTENT "#!/bin/bash\nexec -a gpuobs $<TARGET_FILE:gpuobs> ${words} \"$@\"\n"
      FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    add_custom_command(OUTPUT ${MAN_DIR}/gpuobs-${stem}.1
      COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section 1 --name "${summary}"
              --version-string ${PROJECT_VERSION} --include ${PROJECT_SOURCE_DIR}/packaging/man/see-also.h2m
              --output ${MAN_DIR}/gpuobs-${stem}.1 ${wrapper}
      DEPENDS gpuobs ${PROJECT_SOURCE_DIR}/packaging/man/see-also.h2m
      COMMENT "gpuobs-${stem}.1 from gpuobs ${words} --help"
      VERBATIM)
    list(APPEND GPUOBS_MAN_PAGES ${MAN_DIR}/gpuobs-${stem}.1)
    install(FILES ${MAN_DIR}/gpuobs-${stem}.1 DESTINATION share/man/man1)
  endforeach()
  add_custom_target(man_pages ALL DEPENDS ${GPUOBS_MAN_PAGES})
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
