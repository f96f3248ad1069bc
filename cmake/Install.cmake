# Installs the libraries, headers and tools, and exports a CMake package so another project can
# find_package(ddprun) and link ddp::comm.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS ddp_comm EXPORT ddprunTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ddpbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/comm/include/ddp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/generated/ddp/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ddp)
install(EXPORT ddprunTargets NAMESPACE ddp:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddprun)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ddprunConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ddprunConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddprun)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ddprunConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ddprunConfig.cmake ${PROJECT_BINARY_DIR}/ddprunConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddprun)
