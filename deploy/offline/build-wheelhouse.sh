#!/usr/bin/env bash
# Build a wheelhouse for hosts with no package index: npuwatch and every package it needs, for
# one Python version and one machine, installed there with `pip install --no-index
# --find-links`. deploy/offline/README.md says how to choose the target and how to install.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: deploy/offline/build-wheelhouse.sh [--python PYTHON] [--platform ARCH] [--glibc X.Y]
                                          [--dist DIR] [--out DIR]

  --python PYTHON  a Python of the version the hosts will run (default: python3): its version
                   chooses the wheels, and it evaluates the dependencies' markers
  --platform ARCH  the hosts' machine, aarch64 (Kunpeng) or x86_64 (default: this machine's)
  --glibc X.Y      the oldest glibc among the hosts, as `ldd --version` prints it (default:
                   this machine's for its own platform, else 2.17, manylinux2014)
  --dist DIR       npuwatch's sdist (and wheels) already built, as scripts/build-wheels or
                   `python -m build` leaves them (default: scripts/build-wheels, where python3
                   is 3.11 or later, else `python -m build`, which needs `pip install build`)
  --out DIR        the wheelhouse, a new or empty folder (default: ./npuwatch-wheelhouse)

exit status: 0 built, 2 bad usage or a failed step (one line on stderr says which).
USAGE
}

fail() {
    echo "build-wheelhouse: $*" >&2
    exit 2
}

python=python3
platform=
glibc=
dist=
out=npuwatch-wheelhouse
while (($#)); do
    case $1 in
        --python | --platform | --glibc | --dist | --out)
            (($# >= 2)) || fail "$1 needs a value (see --help)"
            case $1 in
                --python) python=$2 ;;
                --platform) platform=$2 ;;
                --glibc) glibc=$2 ;;
                --dist) dist=$2 ;;
                --out) out=$2 ;;
            esac
            shift 2
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *) fail "unknown argument $1 (see --help)" ;;
    esac
done

checkout=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
command -v "$python" >/dev/null || fail "no Python '$python': give one of the hosts' version with --python"
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) ||
    fail "cannot run '$python': give a working Python of the hosts' version with --python"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    fail "$python is Python $version; npuwatch needs 3.10 or newer (see deploy/offline/README.md for older hosts)"
here_machine=$(uname -m)
here_glibc=$("$python" -c 'import platform; print(platform.libc_ver()[1] or "0.0")')
platform=${platform:-$here_machine}
case $platform in
    aarch64 | x86_64) ;;
    arm64) platform=aarch64 ;;
    amd64) platform=x86_64 ;;
    *) fail "--platform $platform: give aarch64 or x86_64" ;;
esac
if [[ -z $glibc ]]; then
    if [[ $platform == "$here_machine" ]]; then glibc=$here_glibc; else glibc=2.17; fi
fi
[[ $glibc =~ ^2\.([0-9]+)$ ]] || fail "--glibc $glibc: give the version as 2.N, such as 2.28"
glibc_minor=${BASH_REMATCH[1]}
((glibc_minor >= 17)) || fail "--glibc $glibc: manylinux wheels need glibc 2.17 or newer"

mkdir -p "$out"
[[ -z $(ls -A "$out") ]] || fail "$out is not empty: give a new or empty folder with --out"
out=$(cd "$out" && pwd)

# npuwatch itself: the sdist always (any host builds it, or runs in pure Python without a
# compiler), and the wheel when it can run on the hosts.
if [[ -z $dist ]]; then
    dist=$out/.build
    if python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        # the sdist and the manylinux2014 wheels of both machines
        "$checkout/scripts/build-wheels" "$dist" >"$out/.build.log" 2>&1 ||
            fail "building npuwatch failed: see $out/.build.log"
    else
        "$python" -m build --version >/dev/null 2>&1 ||
            fail "$python has no 'build' module: pip install build, or give --dist with a built sdist"
        "$python" -m build --outdir "$dist" "$checkout" >"$out/.build.log" 2>&1 ||
            fail "building npuwatch failed: see $out/.build.log"
    fi
fi
shopt -s nullglob
sdists=("$dist"/npuwatch-*.tar.gz)
((${#sdists[@]} == 1)) || fail "$dist should hold one npuwatch sdist (npuwatch-*.tar.gz), holds ${#sdists[@]}"
sdist=${sdists[0]}
cp "$sdist" "$out/"

# The manylinux2014 wheel of scripts/build-wheels (glibc 2.17, CPython 3.11 and later, either
# machine) goes to every such host: it carries the C extensions, so a host with no compiler
# runs the C path. Otherwise a wheel built here goes only to hosts of the same machine whose
# glibc is no older, and the others build the sdist.
abi=cp${version/./}
manylinux=("$dist"/npuwatch-*-cp311-abi3-manylinux2014_"$platform".*.whl)
if ((${#manylinux[@]})) && "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    cp "${manylinux[0]}" "$out/"
    wheel_note="the npuwatch manylinux2014 wheel for $platform (CPython 3.11 and later, with its C extensions)"
elif [[ $platform == "$here_machine" ]]; then
    wheel_note="no npuwatch wheel: one built here needs glibc $here_glibc, the hosts may have $glibc; they build the sdist"
else
    wheel_note="no npuwatch wheel: this machine is $here_machine, the hosts $platform; they build the sdist"
fi
if ((${#manylinux[@]} == 0)) && [[ $platform == "$here_machine" ]] && "$python" -c 'import sys
def v(s): return tuple(int(p) for p in s.split("."))
sys.exit(not v(sys.argv[1]) <= v(sys.argv[2]))' "$here_glibc" "$glibc"; then
    wheels=("$dist"/npuwatch-*-"$abi"-"$abi"-linux_"$platform".whl "$dist"/npuwatch-*-cp311-abi3-linux_"$platform".whl)
    if ((${#wheels[@]})); then
        cp "${wheels[0]}" "$out/"
    else
        "$python" -m pip wheel --quiet --no-deps --wheel-dir "$out" "$sdist" >"$out/.wheel.log" 2>&1 ||
            fail "building the npuwatch wheel failed: see $out/.wheel.log"
    fi
    wheel_note="the npuwatch wheel for CPython $version on $platform"
fi
rm -rf "$out/.build" "$out/.build.log" "$out/.wheel.log"

# What npuwatch requires (the sdist's PKG-INFO, without the extras) and what building its
# sdist requires ([build-system] in pyproject.toml): a host with no index needs both.
listed=$("$python" - "$sdist" <<'PY'
import sys
import tarfile
from email.parser import Parser

try:
    import tomllib
except ImportError:  # Python 3.10: pip carries a TOML reader
    from pip._vendor import tomli as tomllib

with tarfile.open(sys.argv[1]) as archive:
    top = archive.getmembers()[0].name.split("/")[0]
    read = lambda name: archive.extractfile(f"{top}/{name}").read().decode()
    metadata = Parser().parsestr(read("PKG-INFO"))
    pyproject = tomllib.loads(read("pyproject.toml"))
if "Requires-Dist" in (metadata.get_all("Dynamic") or []):
    sys.exit("the sdist's dependencies are dynamic: this script reads them from PKG-INFO")
for requirement in metadata.get_all("Requires-Dist") or []:
    if "extra ==" not in requirement:
        print(requirement)
print("\n".join(pyproject["build-system"]["requires"]))
PY
) || fail "cannot read the requirements from $sdist"
mapfile -t requirements <<<"$listed"

# Every manylinux tag a host of this machine and glibc accepts. pip takes the legacy names
# (manylinux2014 = glibc 2.17) only as written, so both spellings are listed.
platforms=()
first_minor=17
[[ $platform == x86_64 ]] && first_minor=5
for ((minor = glibc_minor; minor >= first_minor; minor--)); do
    platforms+=(--platform "manylinux_2_${minor}_${platform}")
done
platforms+=(--platform "manylinux2014_${platform}")
if [[ $platform == x86_64 ]]; then
    platforms+=(--platform manylinux2010_x86_64 --platform manylinux1_x86_64)
fi

# Wheels only: a host without an index should compile nothing but npuwatch's own extension.
# Markers such as python_version are evaluated by $python, the dependencies' own as well,
# which is why it must be of the hosts' version.
"$python" -m pip download --quiet --only-binary=:all: "${platforms[@]}" \
    --dest "$out" "${requirements[@]}" >"$out/.download.log" 2>&1 ||
    fail "downloading the dependencies failed: see $out/.download.log"
rm -f "$out/.download.log"
# The unit goes with the bundle, for the hosts.
cp "$checkout/deploy/systemd/npuwatch.service" "$out/"

count=$(find "$out" -maxdepth 1 -name '*.whl' | wc -l)
echo "$out: $count wheels and the npuwatch sdist for CPython $version on $platform (glibc >= $glibc): $wheel_note"
echo "on each host: python$version -m venv /opt/npuwatch && /opt/npuwatch/bin/pip install --no-index --find-links $(basename "$out") npuwatch"
