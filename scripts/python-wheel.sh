#!/bin/bash
# The Python module as Python users install it: libaccel installed under a
# prefix (found by pkg-config), the abi3 wheel built from python/ with
# Debian's setuptools and no network (pip wheel --no-build-isolation), then
# installed into a fresh virtual environment with the system's site
# packages (NumPy, pytest), where the module's suite runs against it, not
# against the build tree. Ends with the suite's "N passed, N failed".
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/deps.sh python python-tests
work=$(mktemp -d /tmp/accel-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
make -s install PREFIX="$work/prefix" UDEVRULESDIR="$work/prefix/udev" >/dev/null
export PKG_CONFIG_PATH=$work/prefix/lib/pkgconfig
cp -r python "$work/src"	# setuptools writes its build beside the sources
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
py=$work/venv/bin/python
"$py" -m pip wheel -q --no-build-isolation --no-index --no-deps \
	-w "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/accel-*.whl)
case $wheel in
*-cp311-abi3-linux_*.whl) echo "python-wheel: built $(basename "$wheel")" ;;
*) echo "python-wheel: not an abi3 wheel: $(basename "$wheel")"; exit 1 ;;
esac
"$py" -m pip install -q --no-index --no-deps "$wheel"
where=$(cd "$work" && "$py" -c 'import importlib.util as u, accel
assert u.find_spec("accel_numba"), "accel_numba is not installed"
print(accel.__file__)')
case $where in
"$work/venv/"*) echo "python-wheel: accel from $where" ;;
*) echo "python-wheel: accel came from $where, not the wheel"; exit 1 ;;
esac
ACCEL_PYTHONPATH='' PYTHON=$py scripts/pytest-suite.sh "$@"
