# The daemon's layers (docs/architecture.md "Layers"): server -> scheduler, server -> monitor, and
# both of those -> the core (base, policy, protocol, image, runtime). A lower layer that includes a
# header of a higher one, or the scheduler and the monitor each other's, fails the build here, before
# any compiler runs; the linker check (lsb_layer_check_*) catches calls that slip past headers.
# Run as: cmake -DSRC=<src dir> -DSTAMP=<file to touch> -P check_layers.cmake
set(forbidden_scheduler "server/" "monitor/" "cli/")
set(forbidden_monitor "server/" "scheduler/" "cli/")
set(forbidden_server "cli/")
set(problems "")
foreach(layer scheduler monitor server)
  # Subfolders too (scheduler/archive/, scheduler/session/, server/e2b/, ...): a layer is its whole tree.
  file(GLOB_RECURSE files "${SRC}/${layer}/*.h" "${SRC}/${layer}/*.cc")
  foreach(f ${files})
    file(STRINGS "${f}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line ${includes})
      foreach(bad ${forbidden_${layer}})
        if(line MATCHES "\"${bad}")
          file(RELATIVE_PATH rel "${SRC}/.." "${f}")
          string(STRIP "${line}" line)
          string(APPEND problems "\n  ${rel}: ${line} (the ${layer} layer may not use ${bad}; see docs/architecture.md \"Layers\")")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "layer boundary crossed:${problems}")
endif()
file(TOUCH "${STAMP}")
