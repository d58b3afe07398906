# The layer rule of horovodcpp/ (docs/architecture.md, "Layers"): a file may
# include headers of its own layer and of the layers below it, and the public
# headers (horovodcpp/...) from anywhere. A backend includes no other backend.
# Inside core/, the same rule holds between its folders, in their own order.
# Fails naming each file, include and the rule it breaks.
#
#   cmake -DROOT=<the horovodcpp/ folder> -P check_layers.cmake
if(NOT ROOT)
  message(FATAL_ERROR "check_layers.cmake: pass -DROOT=<the horovodcpp/ folder>")
endif()

# Bottom to top. include/ holds the public headers (they include only their own).
set(layers base settings store core gpu backend registry api)
string(REPLACE ";" " < " layer_order "${layers}")
# core/'s folders, bottom to top.
set(core_parts diagnostics tuning negotiation process_sets execution device runtime)
string(REPLACE ";" " < " core_order "${core_parts}")

function(layer_of path out_layer out_part)
  string(REPLACE "/" ";" parts "${path}")
  list(GET parts 0 layer)
  set(part "")
  if(layer STREQUAL "backend" OR layer STREQUAL "core")
    list(LENGTH parts n)
    if(n GREATER 1)
      list(GET parts 1 part)
    endif()
  endif()
  set(${out_layer} ${layer} PARENT_SCOPE)
  set(${out_part} "${part}" PARENT_SCOPE)
endfunction()

get_filename_component(ROOT ${ROOT} ABSOLUTE)
file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/*.h ${ROOT}/*.cc ${ROOT}/*.cu)
if(NOT files)
  message(FATAL_ERROR "check_layers.cmake: no sources under ${ROOT}")
endif()
set(violations "")
foreach(file IN LISTS files)
  layer_of(${file} layer part)
  if(layer STREQUAL "include")
    set(rank -1)  # public headers: only other public headers
  else()
    list(FIND layers ${layer} rank)
    if(rank EQUAL -1)
      string(APPEND violations "${file}: not in a layer (${layer_order})\n")
      continue()
    endif()
  endif()
  file(STRINGS ${ROOT}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" included "${line}")
    layer_of(${included} target target_part)
    if(target STREQUAL "horovodcpp")
      continue()  # a public header
    endif()
    list(FIND layers ${target} target_rank)
    if(target_rank EQUAL -1)
      continue()  # not ours (a third-party header)
    endif()
    if(rank EQUAL -1)
      string(APPEND violations
             "${file}: #include \"${included}\": a public header includes only public headers (horovodcpp/...)\n")
    elseif(target_rank GREATER rank)
      string(APPEND violations
             "${file}: #include \"${included}\": ${layer}/ may not include the higher layer ${target}/ (${layer_order})\n")
    elseif(layer STREQUAL "core" AND target STREQUAL "core")
      list(FIND core_parts "${part}" part_rank)
      list(FIND core_parts "${target_part}" target_part_rank)
      if(part_rank EQUAL -1)
        string(APPEND violations "${file}: core/${part}/ is not in core's order (${core_order})\n")
      elseif(target_part_rank GREATER part_rank)
        string(APPEND violations
               "${file}: #include \"${included}\": core/${part}/ may not include the higher core/${target_part}/ (${core_order})\n")
      endif()
    elseif(layer STREQUAL "backend" AND target STREQUAL "backend" AND NOT part STREQUAL target_part)
      string(APPEND violations
             "${file}: #include \"${included}\": backend/${part}/ may not include another backend (backend/${target_part}/); shared code belongs in core/\n")
    endif()
  endforeach()
endforeach()

if(violations)
  # Unformatted (message(FATAL_ERROR) would rewrap the lines).
  message("${violations}")
  message(FATAL_ERROR "the layer rule is broken (docs/architecture.md, \"Layers\"); see above")
endif()
