#!/bin/bash
# Fetch a recent rdma-core Debian source package and build it in place (libibverbs,
# librdmacm, the providers incl. rxe, and pyverbs for /usr/bin/python3), so the pyverbs
# e2e tests can run inside the soft-RoCE VM against the pyverbs >= 50 module layout
# (pyverbs.libibverbs_enums / pyverbs.librdmacm_enums) instead of Debian 12's pyverbs 44.
# No rdma-core code is kept in pykv: the pinned source package is built in a cache dir.
#
# Usage: build-rdma-core.sh [DEST]
#   DEST   copy the run-time files there (default: <project>/build/rdma-core, which the VM
#          sees because the project is shared into it at the same path): DEST/lib
#          (libibverbs, librdmacm, the providers), DEST/python (pyverbs), DEST/etc
#          (libibverbs.d), DEST/BUILD_DIR (the in-place build dir compiled into libibverbs:
#          inside the VM, link that path to DEST so the providers are found there), DEST/env
#          (the variables to source: LD_LIBRARY_PATH, PYTHONPATH, RDMAV_DRIVERS).
# Env:
#   RDMA_CORE_VERSION     Debian source version (default 65.0-1.1, Debian sid)
#   RDMA_CORE_DSC_SHA256  SHA256 of that version's .dsc (pinned for the default; empty =
#                         trust the .dsc as downloaded)
#   RDMA_CORE_ORIG_SHA256 SHA256 of the upstream tarball as the .dsc lists it (pinned for the
#                         default): used when the archive does not serve the .dsc
#   RDMA_CORE_CACHE       cache directory (default /var/tmp/pykv-rdma-core); a finished
#                         build there is reused
#   DEBIAN_MIRROR         the Debian archive (default: the one in apt's sources)
#   JOBS                  parallel build jobs (default 2)
# Exit status: 0 built (or reused), 3 download or checksum failure (e.g. no network),
# 4 build dependencies missing, 5 build failure.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PROJ=$(cd "$HERE/../../.." && pwd)
VERSION=${RDMA_CORE_VERSION:-65.0-1.1}
DEFAULT_VERSION=65.0-1.1
if [ "$VERSION" = "$DEFAULT_VERSION" ]; then
    DSC_SHA256=${RDMA_CORE_DSC_SHA256-868af219f88416adb23f570c50e18030e073237e7a0017cae3bd15f51a2fe307}
    ORIG_SHA256=${RDMA_CORE_ORIG_SHA256-f6ba3d8b2c4aa334c5c883c1ad0772de339011123cff4fb1db32ae7a443fb7ca}
else
    DSC_SHA256=${RDMA_CORE_DSC_SHA256:-}
    ORIG_SHA256=${RDMA_CORE_ORIG_SHA256:-}
fi
CACHE=${RDMA_CORE_CACHE:-/var/tmp/pykv-rdma-core}
JOBS=${JOBS:-2}
DEST=${1:-$PROJ/build/rdma-core}
UPSTREAM=${VERSION%-*}                 # 65.0-1.1 -> 65.0
OUT=$CACHE/$VERSION                    # the source tree; the in-place build is $OUT/build
BUILD=$OUT/build
PYTHON=/usr/bin/python3                # what the project's venv is made from (3.11)

say() { printf '[build-rdma-core] %s\n' "$*" >&2; }
die() { local rc=$1; shift; say "ERROR: $*"; exit "$rc"; }
# shellcheck source=debsrc.sh
. "$HERE/debsrc.sh"
MIRROR=${DEBIAN_MIRROR:-$(debsrc_mirror || true)}

# the new pyverbs, its libraries and its providers, not Debian's
run_env() {
    env LD_LIBRARY_PATH="$1/lib" PYTHONPATH="$1/python" RDMAV_DRIVERS="$1/lib/librxe" \
        "${@:2}"
}
check_import() {  # check_import DIR: pyverbs from DIR, with the >= 50 module layout
    run_env "$1" "$PYTHON" -c '
import sys, pyverbs, pyverbs.libibverbs_enums, pyverbs.librdmacm_enums, pyverbs.cmid
assert pyverbs.__file__.startswith(sys.argv[1]), pyverbs.__file__
' "$1/python/"
}
built_ok() { [ -f "$OUT/.built" ] && check_import "$BUILD" 2>/dev/null; }

install_dest() {
    rm -rf "$DEST/lib" "$DEST/python" "$DEST/etc"     # a previous copy, nothing else of DEST
    mkdir -p "$DEST"
    cp -a "$BUILD/lib" "$DEST/lib"
    rm -rf "$DEST/lib/statics" "$DEST/lib/pkgconfig"
    cp -rL "$BUILD/python" "$DEST/python"        # the .py files are links into the source
    cp -a "$BUILD/etc" "$DEST/etc"
    echo "$BUILD" >"$DEST/BUILD_DIR"
    cp "$OUT/VERSION" "$DEST/VERSION"
    printf 'LD_LIBRARY_PATH=%s/lib\nPYTHONPATH=%s/python\nRDMAV_DRIVERS=%s/lib/librxe\n' \
        "$DEST" "$DEST" "$DEST" >"$DEST/env"
    check_import "$DEST" || die 5 "the copy in $DEST does not import"
    say "rdma-core $VERSION (in place) in $DEST"
    echo "$DEST"
}

debsrc_reuse_or_lock "$CACHE" built_ok install_dest
DSC=rdma-core_$VERSION.dsc
ORIG=rdma-core_$UPSTREAM.orig.tar.gz
debsrc_get "$CACHE/dl" "$MIRROR/pool/main/r/rdma-core" "$DSC" "$DSC_SHA256" "$ORIG" "$ORIG_SHA256"

# build dependencies, from Debian 12's own packages when missing
py_has_cython() { "$PYTHON" -c 'import Cython' 2>/dev/null; }
need_deps() {
    command -v cmake >/dev/null && command -v gcc >/dev/null && command -v pkg-config >/dev/null \
        && command -v ninja >/dev/null \
        && pkg-config --exists libnl-3.0 libnl-route-3.0 libudev \
        && [ -f "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]
}
if ! need_deps || { ! py_has_cython && ! "$PROJ/.venv/bin/python" -c 'import Cython' 2>/dev/null; }; then
    pkgs=(build-essential cmake ninja-build pkgconf libnl-3-dev libnl-route-3-dev libudev-dev python3-dev)
    py_has_cython || "$PROJ/.venv/bin/python" -c 'import Cython' 2>/dev/null || pkgs+=(cython3)
    debsrc_apt_install "${pkgs[@]}"
    need_deps || die 4 "build deps still missing after apt-get install"
fi
# pyverbs must be built for /usr/bin/python3 (3.11); rdma-core finds Cython through the
# interpreter it is given, so use the project's venv (made from /usr/bin/python3, with the
# test extra's Cython) when the system Python has none
CMAKE_PY=$PYTHON
if ! py_has_cython; then
    CMAKE_PY=$PROJ/.venv/bin/python
    "$CMAKE_PY" -c 'import sys; assert sys.base_prefix == "/usr" and sys.version_info[:2] == (3, 11)' \
        || die 4 "$CMAKE_PY is not a venv of /usr/bin/python3 3.11, and python3 has no Cython"
fi

rm -rf "$OUT"
mkdir -p "$OUT"
tar -xzf "$CACHE/dl/$ORIG" -C "$OUT" --strip-components=1
[ -f "$OUT/CMakeLists.txt" ] && [ -d "$OUT/pyverbs" ] || die 5 "unexpected layout of $ORIG"
say "cmake -GNinja -DIN_PLACE=1 -DNO_MAN_PAGES=1 (python: $CMAKE_PY), then ninja -j$JOBS"
t0=$(date +%s)
mkdir -p "$BUILD"
log=$CACHE/build-$VERSION.log
# only what the tests load: libibverbs, librdmacm, the rxe provider and pyverbs' own modules
# (not the other providers, their pyverbs modules, the daemons and tools): ~3 min, not ~6.5
wanted='^(python/pyverbs/[^/]*\.so|lib/lib(ibverbs|rdmacm)\.so\.1|lib/librxe-rdmav[0-9]*\.so):'
(cd "$BUILD" && cmake -GNinja -DIN_PLACE=1 -DNO_MAN_PAGES=1 -DENABLE_STATIC=0 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYTHON_EXECUTABLE="$CMAKE_PY" \
    -DPython_EXECUTABLE="$CMAKE_PY" ..) >"$log" 2>&1 \
    || { tail -30 "$log" >&2; die 5 "cmake failed (log: $log)"; }
targets=$(cd "$BUILD" && ninja -t targets all | grep -oE "$wanted" | tr -d : | tr '\n' ' ')
[ -n "$targets" ] || die 5 "cmake made no libibverbs/librdmacm/rxe/pyverbs targets (log: $log)"
# shellcheck disable=SC2086  # one word per target
(cd "$BUILD" && ninja -j"$JOBS" $targets) >>"$log" 2>&1 \
    || { tail -30 "$log" >&2; die 5 "build failed (log: $log)"; }
ls "$BUILD"/python/pyverbs/libibverbs_enums*.so >/dev/null 2>&1 \
    || die 5 "pyverbs was not built (no Cython or Python headers?): see $log"
ls "$BUILD"/lib/librxe-rdmav*.so >/dev/null 2>&1 && [ -f "$BUILD/etc/libibverbs.d/rxe.driver" ] \
    || die 5 "no rxe provider in $BUILD/lib"
{
    echo "rdma-core $VERSION (Debian source package, upstream $UPSTREAM), built in place"
    echo "cmake -GNinja -DIN_PLACE=1 -DNO_MAN_PAGES=1 -DPYTHON_EXECUTABLE=$CMAKE_PY; ninja" $targets
} >"$OUT/VERSION"
check_import "$BUILD" || die 5 "the built pyverbs does not import (log: $log)"
touch "$OUT/.built"
say "built in $(( $(date +%s) - t0 )) s"
install_dest
