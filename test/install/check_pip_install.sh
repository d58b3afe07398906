#!/usr/bin/env bash
# `pip install <checkout>` as a cluster user does it: no root, a fresh venv
# of PYTHON (with its system site packages: Debian's torch), build tools
# (scikit-build-core, pybind11) from PyPI through pip's build isolation. Then,
# in a clean environment (no LD_LIBRARY_PATH, no PYTHONPATH):
# `python -m horovodcpp.check`, and a 2-rank torch training step launched by
# the venv's hvdrun with the venv's horovodcpp, and find_package(horovodcpp)
# from the venv's site-packages by a C++ project. With TENSORFLOW_PYTHON (an
# interpreter that has TensorFlow), a 2-rank TensorFlow step with the same
# installed package. Run as root, it creates an unprivileged user for this;
# exit 77 (skipped) where it cannot.
#   check_pip_install.sh SOURCE_DIR PYTHON [TENSORFLOW_PYTHON]
set -euo pipefail
source_dir=$(cd "$1" && pwd)
python=$2
tensorflow_python=${3:-}

as_user=()
if [ "$(id -u)" -eq 0 ]; then
  user=hvdcpp-pip
  if ! id -u "$user" >/dev/null 2>&1 && ! useradd --system --no-create-home "$user" &&
     ! id -u "$user" >/dev/null 2>&1; then  # (another run may have just created it)
    echo "skipped: cannot create an unprivileged user"
    exit 77
  fi
  as_user=(runuser -u "$user" --)
fi

scratch=$(mktemp -d /tmp/hvdcpp-pip.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# The checkout as the user gets it (a clone), without this tree's build outputs.
mkdir "$scratch/checkout" "$scratch/home"
git -C "$source_dir" ls-files -z --cached --others --exclude-standard |
  tar -C "$source_dir" --null -T - --ignore-failed-read -cf - 2>/dev/null |
  tar -C "$scratch/checkout" -xf -
[ ${#as_user[@]} -eq 0 ] || chown -R "$user" "$scratch"

# Runs bash CODE as the user in the environment of a fresh login, plus SCRATCH
# and the NAME=VALUE arguments.
as_user_login() {
  local code=$1
  shift
  "${as_user[@]}" env -i HOME="$scratch/home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
    SCRATCH="$scratch" "$@" bash -euo pipefail -c "$(declare -f identical); $code"
}
# Both ranks of a training step report the venv's horovodcpp and identical
# parameters (counted per match: the ranks' lines may interleave).
identical() {
  local line="horovodcpp from $SCRATCH/venv/[^ ]*, loss [^,]*, parameters identical on all 2 ranks"
  [ "$(grep -o "$line" "$1" | wc -l)" -eq 2 ]
}
as_user_login '
  cd "$SCRATCH"
  "$PYTHON" -m venv --system-site-packages venv
  . venv/bin/activate
  start=$(date +%s)
  pip install -v --no-cache-dir --disable-pip-version-check ./checkout >pip.log 2>&1 ||
    { cat pip.log; exit 1; }
  echo "pip install ./checkout as $(id -un): $(( $(date +%s) - start )) s"
  grep -E "^ *-- horovodcpp " pip.log
  [ "$(command -v hvdrun)" = "$SCRATCH/venv/bin/hvdrun" ]
  cd /  # away from the checkout: everything comes from the venv
  python -m horovodcpp.check | tee "$SCRATCH/check.txt"
  grep -qx "hvdrun: $SCRATCH/venv/bin/hvdrun" "$SCRATCH/check.txt"
  grep -qE "^    \[X\] PyTorch " "$SCRATCH/check.txt"
  hvdrun -np 2 python "$SCRATCH/checkout/test/install/torch_train_step.py" |
    tee "$SCRATCH/torch.txt"
  identical "$SCRATCH/torch.txt"
  site=$(python -c "import sysconfig; print(sysconfig.get_path(\"platlib\"))")
  echo "$site" >"$SCRATCH/site-packages.txt"
  # libhorovodcpp keeps the directory MPI was found in (on a cluster: the MPI module).
  mpi_dir=$(python -c "import horovodcpp._build_info as b; print(b.MPI_LIBRARIES.split(\";\")[0])")
  readelf -d "$site/horovodcpp/lib/libhorovodcpp.so" | grep RUNPATH | grep -qF "${mpi_dir%/*}"
  # C++ users of the venv: find_package(horovodcpp) with site-packages as the prefix.
  cmake -S "$SCRATCH/checkout/test/install" -B "$SCRATCH/consumer" -DCMAKE_PREFIX_PATH="$site" \
    >/dev/null
  cmake --build "$SCRATCH/consumer" >/dev/null
  "$SCRATCH/consumer/consumer"
' PYTHON="$python"

if [ -n "$tensorflow_python" ]; then
  # The package installed above, imported by another environment's interpreter.
  as_user_login '
    cd /
    export PYTHONPATH=$(cat "$SCRATCH/site-packages.txt")
    "$SCRATCH/venv/bin/hvdrun" -np 2 "$TENSORFLOW_PYTHON" \
      "$SCRATCH/checkout/test/install/tensorflow_train_step.py" | tee "$SCRATCH/tensorflow.txt"
    identical "$SCRATCH/tensorflow.txt"
  ' TENSORFLOW_PYTHON="$tensorflow_python" TF_CPP_MIN_LOG_LEVEL=2
fi
echo "pip install as a user without root: ok"
