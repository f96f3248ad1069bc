# Finds every dependency once; says which backends this build has.
find_package(Threads REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
if(DDP_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()

# LibTorch: the gloo backend, DistributedDataParallel (ddp::torch) and the train example.
set(DDP_HAVE_GLOO OFF)
set(DDP_HAVE_TORCH OFF)
find_package(Torch QUIET)
if(Torch_FOUND)
  set(DDP_HAVE_TORCH ON)
  # TorchConfig finds c10 with find_library, which looks in the system's directories before
  # LibTorch's own: a pip wheel's LibTorch on a machine that has Debian's too would be linked
  # with Debian's libc10, two versions in one process. The c10 beside the LibTorch found is taken.
  set(_own_c10 "${TORCH_INSTALL_PREFIX}/lib/${CMAKE_SHARED_LIBRARY_PREFIX}c10${CMAKE_SHARED_LIBRARY_SUFFIX}")
  if(EXISTS "${_own_c10}" AND NOT c10_LIBRARY STREQUAL _own_c10)
    list(FIND TORCH_LIBRARIES "${c10_LIBRARY}" _at)
    if(_at GREATER_EQUAL 0)
      list(REMOVE_AT TORCH_LIBRARIES ${_at})
      list(INSERT TORCH_LIBRARIES ${_at} "${_own_c10}")
    endif()
    set(c10_LIBRARY "${_own_c10}" CACHE FILEPATH "c10 of the LibTorch found" FORCE)
  endif()
  set(DDP_HAVE_GLOO ${DDP_WITH_GLOO})
  # LibTorch 2.x (pip wheels) carries its own fmt headers, which then shadow the system's in
  # every file that includes torch: those files use fmt header-only, so no fmt symbol of
  # another version is left for the system libfmt to resolve.
  get_target_property(_fmt_includes fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
  set(DDP_TORCH_BUNDLES_FMT OFF)
  foreach(_dir IN LISTS TORCH_INCLUDE_DIRS)
    if(EXISTS "${_dir}/fmt/core.h" AND NOT _dir IN_LIST _fmt_includes)
      set(DDP_TORCH_BUNDLES_FMT ON)
    endif()
  endforeach()
else()
  message(STATUS "ddprun: LibTorch not found: building without gloo, ddp::torch and train")
endif()

# ddp_use_torch(TARGET SCOPE): TARGET includes and links LibTorch, with the fmt that LibTorch's
# headers bring (FMT_HEADER_ONLY where it bundles its own). Every target that includes torch.
function(ddp_use_torch target scope)
  target_link_libraries(${target} ${scope} ${TORCH_LIBRARIES})
  if(DDP_TORCH_BUNDLES_FMT)
    target_compile_definitions(${target} ${scope} FMT_HEADER_ONLY)
  endif()
endfunction()

set(DDP_HAVE_NCCL OFF)
if(DDP_WITH_NCCL)
  find_package(NCCL)
  if(NCCL_FOUND)
    set(DDP_HAVE_NCCL ON)
  else()
    message(STATUS "ddprun: CUDA runtime + NCCL not found: building without the nccl backend")
  endif()
endif()

set(_backends mpi)
if(DDP_HAVE_GLOO)
  list(APPEND _backends gloo)
endif()
if(DDP_HAVE_NCCL)
  list(APPEND _backends "nccl (NCCL ${NCCL_VERSION}, CUDA runtime in ${NCCL_CUDA_ROOT})")
endif()
list(JOIN _backends ", " _backends)
message(STATUS "ddprun backends: ${_backends}")

# ddp/config.hpp: the version and the backends this build has (DDP_HAVE_NCCL, ...).
configure_file(${PROJECT_SOURCE_DIR}/cmake/config.hpp.in ${PROJECT_BINARY_DIR}/generated/ddp/config.hpp)
