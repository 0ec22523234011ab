# Installation and packaging (docs/install.md).
#
#   cmake --install build/release --prefix /opt/rdmq                    # everything below
#   cmake --install build/release --prefix /opt/rdmq --component runtime # rdmq-broker and the tools
#   cmake --install build/release --prefix /opt/rdmq --component devel   # client libraries, headers,
#                                                                        # lib/cmake/rdmq
#   cpack --config build/release/CPackConfig.cmake                       # rdmq_<version>_<arch>.deb
#
# Components: runtime (the daemon and the command-line tools), devel (the static client
# libraries, their public headers and the CMake package: another project does
# find_package(rdmq) and links rdmq::producer, rdmq::consumer or rdmq::client), service (the
# systemd unit and /etc/rdmq/broker.json; absolute paths, RDMQ_INSTALL_UNITDIR and
# RDMQ_INSTALL_CONFDIR, meant for the package).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(RDMQ_INSTALL_UNITDIR "/lib/systemd/system" CACHE PATH "Where the systemd unit is installed (service component)")
set(RDMQ_INSTALL_CONFDIR "/etc/rdmq" CACHE PATH "Where the broker's config file is installed (service component)")

# The client libraries and every library they link (static libraries carry their dependencies).
set(rdmq_exported common config auth compression storage fabric rpc protocol client producer consumer)
set(rdmq_export_targets "")
foreach(lib IN LISTS rdmq_exported)
  set_target_properties(rdmq_${lib} PROPERTIES EXPORT_NAME ${lib})
  list(APPEND rdmq_export_targets rdmq_${lib})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${lib}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel)
endforeach()
install(TARGETS ${rdmq_export_targets} EXPORT rdmqTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
set(rdmq_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/rdmq)
install(EXPORT rdmqTargets NAMESPACE rdmq:: DESTINATION ${rdmq_cmake_dir} COMPONENT devel)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rdmqConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rdmqConfig.cmake INSTALL_DESTINATION ${rdmq_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rdmqConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rdmqConfig.cmake ${PROJECT_BINARY_DIR}/rdmqConfigVersion.cmake
  DESTINATION ${rdmq_cmake_dir} COMPONENT devel)

# (rdmq-bench stays in the build tree: it links the Redis and NATS clients, which a broker host
# does not need.)
set(rdmq_programs rdmq-broker rdmq rdmq-produce rdmq-consume)
install(TARGETS ${rdmq_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT runtime
  PATTERN "img" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/prometheus ${PROJECT_SOURCE_DIR}/deploy/grafana
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/monitoring COMPONENT runtime)

install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/rdmq-broker.service DESTINATION ${RDMQ_INSTALL_UNITDIR}
  COMPONENT service)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/broker.json DESTINATION ${RDMQ_INSTALL_CONFDIR} COMPONENT service)

# The Debian package: one package with every component; its dependencies from dpkg-shlibdeps.
set(CPACK_PACKAGE_NAME rdmq)
set(CPACK_PACKAGE_VENDOR rdmq)
set(CPACK_PACKAGE_CONTACT "rdmq developers <rdmq-dev@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Kafka-like message broker whose data path is one-sided (RDMA, shared memory, TCP)")
set(CPACK_PACKAGE_DESCRIPTION "rdmq-broker and its tools, the C++ client libraries and a systemd unit.")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_WARN_ON_ABSOLUTE_INSTALL_DESTINATION OFF)
include(CPack)
