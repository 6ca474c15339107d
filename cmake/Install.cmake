# `cmake --install` layout and the .deb (CPack):
#   bin/      ncclrr, ncclrr-viewer, ncclrr-example
#   lib/      libncclrr-interpose.so (LD_PRELOAD), libnccl-profiler-ncclrr.so, libncclrr-hostnccl.so
#   lib/hostnccl/libnccl.so.2   the host NCCL under NCCL's SONAME (found by RUNPATH only)
#   lib/ + include/ + lib/cmake/ncclrr/   the trace reader library for other tools:
#       find_package(ncclrr) ; target_link_libraries(t PRIVATE ncclrr::trace)
# Paths are relative ($ORIGIN), so the tree works wherever it is unpacked.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(CMAKE_INSTALL_LIBDIR lib)  # one layout everywhere: `record` finds ../lib from bin/

foreach(exe ncclrr ncclrr_example ncclrr_viewer ncclrr-viewer)
  if(TARGET ${exe})
    set_target_properties(${exe} PROPERTIES INSTALL_RPATH "\$ORIGIN/../lib" BUILD_WITH_INSTALL_RPATH ON)
    install(TARGETS ${exe} RUNTIME DESTINATION bin COMPONENT runtime)
  endif()
endforeach()
if(TARGET ncclrr_example)  # keeps its RUNPATH to the host NCCL
  set_target_properties(ncclrr_example PROPERTIES INSTALL_RPATH "\$ORIGIN/../lib/hostnccl")
endif()
foreach(lib ncclrr_interpose ncclrr_profiler ncclrr_hostnccl)
  if(TARGET ${lib})
    install(TARGETS ${lib} LIBRARY DESTINATION lib COMPONENT runtime)
  endif()
endforeach()
if(TARGET ncclrr_hostnccl_soname)
  install(TARGETS ncclrr_hostnccl_soname LIBRARY DESTINATION lib/hostnccl COMPONENT runtime)
  install(CODE "file(CREATE_LINK libnccl.so.2
                     \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/hostnccl/libnccl.so\" SYMBOLIC)"
          COMPONENT runtime)
endif()

# The reader library and its headers, with a CMake package.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/base/include/ncclrr ${PROJECT_SOURCE_DIR}/trace/include/ncclrr
        DESTINATION include COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/schemas/include/ncclrr/schema/trace_generated.h
              ${PROJECT_BINARY_DIR}/schemas/include/ncclrr/schema/schema_hash.h
        DESTINATION include/ncclrr/schema COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/schemas/trace.fbs DESTINATION share/ncclrr COMPONENT dev)
target_include_directories(ncclrr_trace PUBLIC $<INSTALL_INTERFACE:include>)
target_include_directories(ncclrr_base PUBLIC $<INSTALL_INTERFACE:include>)
target_include_directories(ncclrr_schema INTERFACE $<INSTALL_INTERFACE:include>)
set_target_properties(ncclrr_trace PROPERTIES EXPORT_NAME trace)
set_target_properties(ncclrr_base PROPERTIES EXPORT_NAME base)
set_target_properties(ncclrr_schema PROPERTIES EXPORT_NAME schema)
set_target_properties(ncclrr_warnings PROPERTIES EXPORT_NAME warnings)
install(TARGETS ncclrr_trace ncclrr_base ncclrr_schema ncclrr_warnings EXPORT ncclrrTargets
        ARCHIVE DESTINATION lib COMPONENT dev)
install(EXPORT ncclrrTargets NAMESPACE ncclrr:: DESTINATION lib/cmake/ncclrr COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ncclrrConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ncclrrConfig.cmake INSTALL_DESTINATION lib/cmake/ncclrr)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ncclrrConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ncclrrConfig.cmake
              ${PROJECT_BINARY_DIR}/ncclrrConfigVersion.cmake
        DESTINATION lib/cmake/ncclrr COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/ncclrr COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/ncclrr COMPONENT runtime)

set(CPACK_PACKAGE_NAME ncclrr)
set(CPACK_PACKAGE_VENDOR "ncclrr")
set(CPACK_PACKAGE_CONTACT "ncclrr maintainers <ncclrr@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "record, check, replay and show NCCL collectives")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /opt/ncclrr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
include(CPack)
