# Installs the libraries, headers and tools, and exports a CMake package so another project can
# find_package(ddprun) and link ddp::comm.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
# ddp::common, ddp::comm with its backends and their registry (ddp::backends: builtinBackends()
# picks mpi, gloo or nccl by name), and ddp::profiler.
set(_ddp_libraries ddp_common ddp_comm ddp_backends ddp_profiler)
if(DDP_HAVE_GLOO)
  list(APPEND _ddp_libraries ddp_comm_gloo)
endif()
if(DDP_HAVE_NCCL)
  list(APPEND _ddp_libraries ddp_comm_nccl)
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddprun)
endif()
install(TARGETS ${_ddp_libraries} EXPORT ddprunTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ddpbench ddprof ddprun ddprun-worker RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_part common comm profiler)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_part}/include/ddp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/profiler/data/instances.json DESTINATION ${CMAKE_INSTALL_DATADIR}/ddprun)
# The Python package ddprun puts on Python ranks' path (docs/python.md): PREFIX/share/ddprun/python.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/ DESTINATION ${CMAKE_INSTALL_DATADIR}/ddprun/python
  FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
set(DDP_CONFIG_DEPENDENCIES "")
if(DDP_HAVE_TORCH)
  # ddp::torch (DistributedDataParallel) for LibTorch projects, and the train example.
  install(TARGETS ddp_torch EXPORT ddprunTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(TARGETS train RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  string(APPEND DDP_CONFIG_DEPENDENCIES "find_dependency(Torch)\n")
endif()
if(DDP_HAVE_NCCL)
  string(APPEND DDP_CONFIG_DEPENDENCIES "list(APPEND CMAKE_MODULE_PATH \"\${CMAKE_CURRENT_LIST_DIR}\")\nfind_dependency(NCCL)\n")
endif()
install(FILES ${PROJECT_BINARY_DIR}/generated/ddp/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ddp)
install(EXPORT ddprunTargets NAMESPACE ddp:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddprun)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ddprunConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ddprunConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddprun)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ddprunConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ddprunConfig.cmake ${PROJECT_BINARY_DIR}/ddprunConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddprun)

# A Debian package of the same install tree: `cpack -G DEB` in the build directory.
set(CPACK_PACKAGE_NAME ddprun)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ddprun")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Distributed data-parallel training toolkit: comm backends, LibTorch DDP, ddpbench, train")
set(CPACK_PACKAGE_CONTACT "ddprun developers <ddprun@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The headers and the CMake package need the development packages to be used.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenmpi-dev, libfmt-dev, libspdlog-dev, nlohmann-json3-dev")
include(CPack)
