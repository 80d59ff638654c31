#!/bin/sh
# Regenerates the committed seed corpus of the ELF reader fuzzer: tiny ELF
# files (an executable, a shared object, a stripped copy, a truncated header)
# and one file that is not ELF. Run from anywhere; needs gcc and strip.
set -eu
out=$(cd "$(dirname "$0")" && pwd)/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
printf 'void _start(void) { for (;;) ; }\nint helper(int x) { return x + 1; }\n' > "$work/tiny.c"
tiny="-Os -nostdlib -Wl,-z,max-page-size=0x10 -Wl,-z,noseparate-code -fcf-protection=full"
gcc $tiny -static -fno-pie -no-pie -Wl,--build-id "$work/tiny.c" -o "$out/tiny_exec"
gcc $tiny -shared -fPIC "$work/tiny.c" -o "$out/tiny_shared.so"
strip -o "$out/tiny_stripped" "$out/tiny_exec"
head -c 64 "$out/tiny_exec" > "$out/elf_header_only"
printf '#!/bin/sh\necho not an ELF file\n' > "$out/not_elf.sh"
