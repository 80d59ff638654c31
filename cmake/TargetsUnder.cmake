# funclatency_targets_under(<out> <dir>...): every target defined in the
# directories at or below the given source directories, for a target that
# builds a whole area (e2e-programs, in the top-level CMakeLists.txt) without a
# list each new program must be added to. Call it once those directories are
# added.
function(funclatency_targets_under out)
  set(targets)
  set(queue ${CMAKE_SOURCE_DIR})
  while(queue)
    list(POP_FRONT queue dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND queue ${subdirs})
    foreach(root IN LISTS ARGN)
      cmake_path(IS_PREFIX root ${dir} NORMALIZE under)
      if(under)
        get_property(dir_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
        list(APPEND targets ${dir_targets})
        break()
      endif()
    endforeach()
  endwhile()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()
