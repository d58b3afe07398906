# Sourced by the namespace harnesses: their programs run from a copy under
# /tmp, in a folder whose name has a space, so that a checkout or a build
# directory there (each simulated node has a /tmp of its own), or a path
# with a space, breaks the tests and not a user's first job.
#
# tmp_copy_make: makes $TMP_COPY ("/tmp/hvd copy.XXXXXX"; removed at exit
# by tmp_copy_cleanup); tmp_copy FILE [SUBDIR]: copies FILE (a folder
# whole) into $TMP_COPY/SUBDIR and prints the copy's path. A copied
# program finds its library (libhorovodcpp) in the copy: tmp_copy_library
# PROGRAM copies the one it links and puts that folder first on
# LD_LIBRARY_PATH (ahead of the build's RUNPATH).
tmp_copy_make() {
  TMP_COPY=$(mktemp -d "/tmp/hvd copy.XXXXXX") || return 1
}

tmp_copy() {  # file [subdir]
  local dest="$TMP_COPY/${2:-bin}"
  mkdir -p "$dest" && cp -a "$1" "$dest/" && echo "$dest/$(basename "$1")"
}

tmp_copy_library() {  # program
  local lib
  # "libhorovodcpp.so.0 => /a path/libhorovodcpp.so.0 (0x...)": the path may have spaces.
  lib=$(ldd "$1" | sed -n 's/^[[:space:]]*libhorovodcpp\.so[^ ]* => \(.*\) (0x[0-9a-f]*)$/\1/p' | head -n1)
  [ -n "$lib" ] || return 0
  mkdir -p "$TMP_COPY/lib" && cp -aL "$lib" "$TMP_COPY/lib/" || return 1
  export LD_LIBRARY_PATH="$TMP_COPY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

tmp_copy_cleanup() {
  [ -n "${TMP_COPY:-}" ] && rm -rf "$TMP_COPY"
}
