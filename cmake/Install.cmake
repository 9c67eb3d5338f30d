# What `cmake --install` and `cpack -G DEB` put on a machine (docs/CONFIGURATION.md,
# "Installing"):
#   PREFIX/bin/ossmount                       the daemon; mount(8) reaches it through the
#                                             fuse3 package's /sbin/mount.fuse (fstab type
#                                             fuse.ossmount), which runs `ossmount` from PATH
#   PREFIX/lib/systemd/system/ossmount@.service   the template unit (ExecStart names
#                                             PREFIX/bin/ossmount, written at install time so
#                                             `cmake --install --prefix` and the .deb agree)
#   /etc/ossmount/config.example.json         OSSMOUNT_INSTALL_CONFIG_DIR; honours DESTDIR
#   PREFIX/share/doc/ossmount/                README and the operator docs, and
#                                             examples/train_imagefolder.py
#   PREFIX/lib/python3/dist-packages/ossmount_hints.py   the hints module (HintedSampler):
#                                             on Debian's python3 path for PREFIX /usr;
#                                             OSSMOUNT_INSTALL_PYTHON_DIR to change
if(NOT TARGET ossmount)
  return()
endif()

# `make install` and cpack install what is built; they do not build every test first (build,
# then install: `cmake --build build && cmake --install build`).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(OSSMOUNT_INSTALL_CONFIG_DIR "/etc/ossmount"
    CACHE PATH "Where the example config is installed (the daemon reads /etc/ossmount/)")
set(OSSMOUNT_INSTALL_UNIT_DIR "lib/systemd/system"
    CACHE STRING "systemd system unit directory, relative to the install prefix")

# The unit's ExecStart must name the binary where this install puts it: substitute at install
# time, when CMAKE_INSTALL_PREFIX is the real one (--prefix, or /usr inside cpack).
set(_unit_in "${PROJECT_SOURCE_DIR}/systemd/ossmount@.service.in")
set(_unit_out "${PROJECT_BINARY_DIR}/install-staging/ossmount@.service")
install(CODE "
  set(OSSMOUNT_INSTALL_FULL_BINDIR \"\${CMAKE_INSTALL_PREFIX}/bin\")
  configure_file(\"${_unit_in}\" \"${_unit_out}\" @ONLY)
")
install(FILES "${_unit_out}" DESTINATION "${OSSMOUNT_INSTALL_UNIT_DIR}")
install(FILES systemd/config.example.json DESTINATION "${OSSMOUNT_INSTALL_CONFIG_DIR}")
install(FILES README.md docs/CONFIGURATION.md docs/TROUBLESHOOTING.md docs/SEMANTICS.md
        DESTINATION share/doc/ossmount OPTIONAL)
install(FILES examples/train_imagefolder.py DESTINATION share/doc/ossmount/examples)

# The hints module, where Debian's /usr/bin/python3 finds it (`import ossmount_hints`) when
# PREFIX is /usr; with another prefix, set this or put the directory on PYTHONPATH.
set(OSSMOUNT_INSTALL_PYTHON_DIR "lib/python3/dist-packages"
    CACHE STRING "Where ossmount_hints.py is installed, relative to the install prefix")
install(FILES python/ossmount_hints.py DESTINATION "${OSSMOUNT_INSTALL_PYTHON_DIR}")

# The .deb: `cpack -G DEB` in the build directory (tests/packaging builds and installs it).
set(CPACK_PACKAGE_NAME ossmount)
set(CPACK_PACKAGE_VENDOR "ossmount")
set(CPACK_PACKAGE_CONTACT "ossmount maintainers <maintainers@ossmount.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Read-only FUSE mount of Alibaba Cloud OSS and S3-compatible buckets for training data")
set(CPACK_PACKAGE_DESCRIPTION
    "ossmount mounts an OSS (or S3-compatible) bucket read-only with FUSE, tuned for PyTorch \
datasets: one listing per directory, whole small files in one GET, prefetch beyond the \
readers' concurrency, a local disk cache. Mount from the command line, /etc/fstab \
(type fuse.ossmount) or the ossmount@.service systemd template.")
set(CPACK_GENERATOR DEB)
set(CPACK_SET_DESTDIR ON)  # absolute destinations (/etc/ossmount) land inside the package
set(CPACK_INSTALL_PREFIX /usr)  # the prefix inside the package (with CPACK_SET_DESTDIR)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The example config is a conffile: dpkg keeps local edits, `dpkg -P` removes it.
file(WRITE "${PROJECT_BINARY_DIR}/debian-control/conffiles"
     "${OSSMOUNT_INSTALL_CONFIG_DIR}/config.example.json\n")
# python3 writes the module's bytecode beside it when root imports it; the package removes
# that with the module, so `dpkg -P` leaves nothing behind.
file(WRITE "${PROJECT_BINARY_DIR}/debian-control/prerm"
     "#!/bin/sh\nset -e\nrm -f /usr/${OSSMOUNT_INSTALL_PYTHON_DIR}/__pycache__/ossmount_hints.*.pyc\n")
file(CHMOD "${PROJECT_BINARY_DIR}/debian-control/prerm"
     PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
                 WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${PROJECT_BINARY_DIR}/debian-control/conffiles;${PROJECT_BINARY_DIR}/debian-control/prerm")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library dependencies come from dpkg-shlibdeps on the binary; fuse3 provides mount.fuse3,
# fusermount3 and /dev/fuse's udev rule, which the binary does not link against.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fuse3, ca-certificates")
# media-types: /etc/mime.types, from which uploaded objects take their Content-Type.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "media-types")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Only the daemon, its unit, config example, the hints module and docs: no test binaries.
set(CPACK_STRIP_FILES ON)
include(CPack)
