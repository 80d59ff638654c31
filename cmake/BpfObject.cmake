# Builds a BPF C source into an object and a bpftool skeleton at build time
# (never at run time) and exposes the skeleton as an INTERFACE library.
#
#   funclatency_add_bpf_object(<target> <source.bpf.c> SKELETON_NAME <name>
#                              [INCLUDES dir...] [DEPENDS file...])
# Defines <target>, whose include directory holds <name>.skel.h.

find_program(BPF_CLANG clang REQUIRED)
find_program(BPFTOOL bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

set(FUNCLATENCY_VMLINUX_DIR ${CMAKE_BINARY_DIR}/vmlinux)
set(FUNCLATENCY_VMLINUX_H ${FUNCLATENCY_VMLINUX_DIR}/vmlinux.h)
set(FUNCLATENCY_KERNEL_BTF /sys/kernel/btf/vmlinux CACHE FILEPATH "BTF the BPF code is built against")

if(NOT TARGET funclatency_vmlinux_h)
  add_custom_command(
    OUTPUT ${FUNCLATENCY_VMLINUX_H}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${FUNCLATENCY_VMLINUX_DIR}
    COMMAND ${BPFTOOL} btf dump file ${FUNCLATENCY_KERNEL_BTF} format c > ${FUNCLATENCY_VMLINUX_H}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${FUNCLATENCY_VMLINUX_H}.tmp ${FUNCLATENCY_VMLINUX_H}
    COMMENT "Generating vmlinux.h from ${FUNCLATENCY_KERNEL_BTF}"
    VERBATIM)
  add_custom_target(funclatency_vmlinux_h DEPENDS ${FUNCLATENCY_VMLINUX_H})
endif()

function(funclatency_add_bpf_object target source)
  cmake_parse_arguments(ARG "" "SKELETON_NAME" "INCLUDES;DEPENDS" ${ARGN})
  if(NOT ARG_SKELETON_NAME)
    message(FATAL_ERROR "funclatency_add_bpf_object(${target}): SKELETON_NAME is required")
  endif()
  get_filename_component(source_abs ${source} ABSOLUTE)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_skel)
  set(object ${out_dir}/${ARG_SKELETON_NAME}.bpf.o)
  set(skeleton ${out_dir}/${ARG_SKELETON_NAME}.skel.h)
  set(include_flags -I${FUNCLATENCY_VMLINUX_DIR})
  foreach(dir IN LISTS ARG_INCLUDES)
    list(APPEND include_flags -I${dir})
  endforeach()
  # -mcpu=v3: atomics (cmpxchg) and 32-bit subregisters. -g for BTF; bpftool's
  # linker then writes the object without the DWARF (~80% of it), which the
  # skeleton would otherwise embed and libbpf walk past at every start.
  add_custom_command(
    OUTPUT ${object}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror
            ${include_flags} -c ${source_abs} -o ${object}.debug
    COMMAND ${BPFTOOL} gen object ${object} ${object}.debug
    DEPENDS ${source_abs} ${ARG_DEPENDS} ${FUNCLATENCY_VMLINUX_H}
    COMMENT "Compiling BPF ${source}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skeleton}
    COMMAND ${BPFTOOL} gen skeleton ${object} name ${ARG_SKELETON_NAME} > ${skeleton}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${skeleton}.tmp ${skeleton}
    DEPENDS ${object}
    COMMENT "Generating skeleton ${ARG_SKELETON_NAME}.skel.h"
    VERBATIM)
  add_custom_target(${target}_gen DEPENDS ${skeleton})
  add_dependencies(${target}_gen funclatency_vmlinux_h)
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_gen)
  target_include_directories(${target} INTERFACE ${out_dir})
endfunction()
