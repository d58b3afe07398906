# cmake --install: headers, libhorovodcpp and a package config, so that an
# outside project can find_package(horovodcpp) and link horovodcpp::horovodcpp.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS horovodcpp EXPORT horovodcppTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY horovodcpp/include/horovodcpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/generated/horovodcpp/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/horovodcpp)
install(EXPORT horovodcppTargets NAMESPACE horovodcpp::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/horovodcpp)

configure_package_config_file(cmake/horovodcppConfig.cmake.in
  ${PROJECT_BINARY_DIR}/horovodcppConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/horovodcpp)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/horovodcppConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/horovodcppConfig.cmake
              ${PROJECT_BINARY_DIR}/horovodcppConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/horovodcpp)
