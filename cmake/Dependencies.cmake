# Third-party dependencies come from Debian packages (scripts/install-deps.sh installs them);
# CUDA, NCCL and CUPTI from /usr/local/cuda. Every optional part says why it is skipped.

find_package(FlatBuffers CONFIG REQUIRED)   # libflatbuffers-dev
find_program(FLATC flatc REQUIRED)          # flatbuffers-compiler
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(ZSTD QUIET IMPORTED_TARGET libzstd)  # libzstd-dev
endif()
if(NOT TARGET PkgConfig::ZSTD)  # no pkg-config (e.g. a GPU machine given headers by prefix)
  find_path(ZSTD_INCLUDE_DIR zstd.h REQUIRED)
  find_library(ZSTD_LIBRARY zstd REQUIRED)
  add_library(PkgConfig::ZSTD INTERFACE IMPORTED)
  target_include_directories(PkgConfig::ZSTD INTERFACE ${ZSTD_INCLUDE_DIR})
  target_link_libraries(PkgConfig::ZSTD INTERFACE ${ZSTD_LIBRARY})
endif()
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)  # nlohmann-json3-dev (Flight Recorder dumps, both ways)
# libfmt-dev: messages in the offline code (analysis, replayer, cli, viewer), header-only so that
# nothing new is needed at run time. Never in code that runs inside the user's job.
find_package(fmt REQUIRED)

# NCCL's header (types and signatures of the API we emulate and intercept). It includes
# cuda_runtime.h, so the CUDA include directory comes with it.
set(NCCLRR_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit root (headers, NCCL, CUPTI)")
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCLRR_CUDA_ROOT}/include)
find_path(CUDA_RUNTIME_INCLUDE_DIR cuda_runtime.h HINTS ${NCCLRR_CUDA_ROOT}/include)
if(NCCL_INCLUDE_DIR AND CUDA_RUNTIME_INCLUDE_DIR)
  add_library(ncclrr_nccl_headers INTERFACE)
  target_include_directories(ncclrr_nccl_headers SYSTEM INTERFACE
    ${NCCL_INCLUDE_DIR} ${CUDA_RUNTIME_INCLUDE_DIR})
  set(NCCLRR_HAVE_NCCL_HEADERS ON)
else()
  message(WARNING "nccl.h / cuda_runtime.h not found under ${NCCLRR_CUDA_ROOT}: "
                  "host NCCL, interposer and examples are skipped")
  set(NCCLRR_HAVE_NCCL_HEADERS OFF)
endif()

# CUDA kernels (sketches, GPU tests) build only with a CUDA compiler.
include(CheckLanguage)
if(EXISTS ${NCCLRR_CUDA_ROOT}/bin/nvcc AND NOT DEFINED CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER ${NCCLRR_CUDA_ROOT}/bin/nvcc)
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 75 90)
  endif()
  enable_language(CUDA)
  set(NCCLRR_HAVE_CUDA ON)
else()
  set(NCCLRR_HAVE_CUDA OFF)
endif()

if(NCCLRR_BUILD_VIEWER)
  find_package(Qt6 COMPONENTS Core Gui Widgets Test QUIET)
  if(NOT Qt6_FOUND)
    message(STATUS "Qt6 not found: the viewer is skipped (apt-get install qt6-base-dev)")
  endif()
endif()

if(NCCLRR_BUILD_TESTS)
  find_package(GTest REQUIRED)  # libgtest-dev
  include(GoogleTest)
endif()
