#!/usr/bin/env bash
# The C++ sources are as clang-format 14 writes them (.clang-format, the
# style pinned to Debian 12's clang-format). Fails naming each file that is
# not; `clang-format-14 -i FILE` fixes one.
#   check_format.sh CLANG_FORMAT SOURCE_DIR
set -u
format=${1:?usage: check_format.sh CLANG_FORMAT SOURCE_DIR}
cd "${2:?usage: check_format.sh CLANG_FORMAT SOURCE_DIR}" || exit 1
"$format" --version | grep -q "version 14\." || { echo "check_format: $format is not clang-format 14"; exit 1; }
# Tracked files in a checkout; every source file in a tree without git.
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu')
else
  mapfile -t files < <(find horovodcpp runner test bench bindings examples \
                         \( -name '*.cc' -o -name '*.h' -o -name '*.cu' \) -type f | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "check_format: no sources found"; exit 1; }
mapfile -t unformatted < <("$format" --dry-run "${files[@]}" 2>&1 |
                             sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' |
                             sort -u)
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "check_format: ${#unformatted[@]} of ${#files[@]} files are not clang-formatted; run"
  echo "  clang-format-14 -i ${unformatted[*]}"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
