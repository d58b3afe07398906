# check_layers.cmake passes the tree, and fails, naming the file, the include
# and the rule, on a copy with an upward include (between layers, and
# between core/'s folders) and on one with a sideways (backend to backend)
# include.
#
#   cmake -DCHECKER=<check_layers.cmake> -DROOT=<horovodcpp/> -DWORK=<scratch> -P ...
function(run_checker root out_result out_output)
  execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${root} -P ${CHECKER}
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  set(${out_result} ${result} PARENT_SCOPE)
  set(${out_output} "${output}" PARENT_SCOPE)
endfunction()

# A fresh copy of the tree with `line` appended to `file`; expects the
# checker to fail with each of `expected` in its message.
function(expect_violation file line)
  file(REMOVE_RECURSE ${WORK})
  file(COPY ${ROOT}/ DESTINATION ${WORK})
  file(APPEND ${WORK}/${file} "${line}\n")
  run_checker(${WORK} result output)
  if(result EQUAL 0)
    message(FATAL_ERROR "the checker passed ${file} with ${line}")
  endif()
  foreach(expected IN LISTS ARGN)
    string(FIND "${output}" "${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "the checker's message lacks \"${expected}\":\n${output}")
    endif()
  endforeach()
endfunction()

run_checker(${ROOT} result output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the checker fails on the tree:\n${output}")
endif()

expect_violation(core/execution/fusion_plan.cc "#include \"registry/transports.h\""
  "core/execution/fusion_plan.cc: #include \"registry/transports.h\""
  "core/ may not include the higher layer registry/")
expect_violation(store/file_store.cc "#include \"core/diagnostics/logging.h\""
  "store/file_store.cc: #include \"core/diagnostics/logging.h\""
  "store/ may not include the higher layer core/")
expect_violation(backend/nccl/nccl_hierarchical.cc "#include \"backend/shm/shm_backend.h\""
  "backend/nccl/nccl_hierarchical.cc: #include \"backend/shm/shm_backend.h\""
  "backend/nccl/ may not include another backend (backend/shm/)")
expect_violation(core/negotiation/tensor_queue.h "#include \"core/execution/fusion_plan.h\""
  "core/negotiation/tensor_queue.h: #include \"core/execution/fusion_plan.h\""
  "core/negotiation/ may not include the higher core/execution/")
expect_violation(include/horovodcpp/work.h "#include \"core/negotiation/work_state.h\""
  "a public header includes only public headers")
file(REMOVE_RECURSE ${WORK})
message(STATUS "the layer check passes the tree and fails each injected include")
