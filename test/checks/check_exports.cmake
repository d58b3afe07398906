# libhorovodcpp exports the public API only (HVD_EXPORT, cmake/libhorovodcpp.map):
# every dynamic symbol it defines is in namespace hvd, and none of the
# internals that programs using the public API never name is among them.
#
#   cmake -DNM=<nm> -DLIBRARY=<libhorovodcpp.so> -P check_exports.cmake
execute_process(COMMAND ${NM} -DC --defined-only ${LIBRARY}
                RESULT_VARIABLE result OUTPUT_VARIABLE symbols ERROR_VARIABLE error)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIBRARY}: ${error}")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(count 0)
foreach(line IN LISTS lines)
  # "<address> <type> <name>"
  string(REGEX REPLACE "^[0-9a-f]+ [A-Za-z] " "" name "${line}")
  if(name STREQUAL "")
    continue()
  endif()
  math(EXPR count "${count} + 1")
  if(NOT name MATCHES "^(typeinfo for |typeinfo name for |vtable for )?hvd::")
    message(FATAL_ERROR "exported, but not the public API: ${name}")
  endif()
  foreach(internal "hvd::Runtime::" "hvd::Coordinator::" "hvd::create_transport("
                   "hvd::detail::WorkState::" "hvd::Controller::" "hvd::env_")
    string(FIND "${name}" "${internal}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "exported, but internal: ${name}")
    endif()
  endforeach()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${LIBRARY} exports nothing")
endif()
message(STATUS "${LIBRARY}: ${count} exported symbols, all public API")
