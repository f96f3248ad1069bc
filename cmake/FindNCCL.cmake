# Finds NCCL and the CUDA runtime: NCCL_HOME / CUDA_HOME (variables or environment), then
# /usr/local/cuda. Defines NCCL_FOUND, NCCL_VERSION, NCCL_CUDA_ROOT and the imported target
# NCCL::nccl (NCCL + cudart).
set(_roots ${NCCL_HOME} $ENV{NCCL_HOME} ${CUDA_HOME} $ENV{CUDA_HOME} /usr/local/cuda)
find_path(NCCL_INCLUDE_DIR nccl.h PATHS ${_roots} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(NCCL_LIBRARY nccl PATHS ${_roots} PATH_SUFFIXES lib64 lib NO_DEFAULT_PATH)
find_path(CUDART_INCLUDE_DIR cuda_runtime_api.h PATHS ${_roots} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(CUDART_LIBRARY cudart PATHS ${_roots} PATH_SUFFIXES lib64 lib NO_DEFAULT_PATH)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define NCCL_${_part} ([0-9]+).*" "\\1" NCCL_${_part} "${_nccl_version_lines}")
  endforeach()
  set(NCCL_VERSION "${NCCL_MAJOR}.${NCCL_MINOR}.${NCCL_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR CUDART_LIBRARY CUDART_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND)
  get_filename_component(NCCL_CUDA_ROOT "${CUDART_INCLUDE_DIR}" DIRECTORY)
  if(NOT TARGET NCCL::nccl)
    add_library(NCCL::nccl INTERFACE IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR};${CUDART_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${NCCL_LIBRARY};${CUDART_LIBRARY}")
  endif()
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY CUDART_INCLUDE_DIR CUDART_LIBRARY)
