#!/usr/bin/env bash
# Build the Fluent Bit that bench/agent_bench.py compares the agent with (--fluent-bit PATH).
#
#   bash bench/build_fluent_bit.sh [WORK]     # prints the binary's path (WORK: /tmp/fluent-bit-build)
#
# This machine reaches package registries only. The one Fluent Bit source among them is the npm
# package `fluent-bit` 0.0.3, which carries Fluent Bit 1.8.15's tree without its bundled Onigmo
# (the regex engine): Debian's Oniguruma, of which Onigmo is a fork with the same C API for
# what Fluent Bit calls, stands in. Built with -O2 (RelWithDebInfo), only the tail input and the
# null and stdout outputs; TLS stays on (1.8.15 does not build without it).
set -euo pipefail

work=${1:-/tmp/fluent-bit-build}
need=()
for package in cmake flex bison libonig-dev; do
    dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done
if ((${#need[@]})); then
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

mkdir -p "$work" && cd "$work"
[ -f fluent-bit-0.0.3.tgz ] || npm pack --silent fluent-bit@0.0.3 >/dev/null
rm -rf package && tar xzf fluent-bit-0.0.3.tgz
source=$work/package/src/fluent-bit

mkdir -p "$work/onig/include"
echo '#include <oniguruma.h>' > "$work/onig/include/onigmo.h"
library=$(find /usr/lib -name 'libonig.so' | head -n 1)
cat > "$source/cmake/onigmo.cmake" <<EOF
add_library(libonigmo SHARED IMPORTED GLOBAL)
set_target_properties(libonigmo PROPERTIES IMPORTED_LOCATION $library)
include_directories("$work/onig/include/")
EOF

plugins=()
while read -r option; do
    case $option in
        FLB_IN_TAIL | FLB_IN_EMITTER | FLB_IN_STORAGE_BACKLOG | FLB_OUT_NULL | FLB_OUT_STDOUT)
            plugins+=("-D$option=On") ;;
        *) plugins+=("-D$option=Off") ;;
    esac
done < <(grep -o '^option(FLB_\(OUT\|IN\|FILTER\)_[A-Z0-9_]*' "$source/CMakeLists.txt" | cut -c8-)

mkdir -p "$source/build" && cd "$source/build"
cmake .. -DFLB_DEBUG=Off -DFLB_RELEASE=On -DFLB_TLS=On -DFLB_LUAJIT=Off \
    -DFLB_STREAM_PROCESSOR=Off -DFLB_EXAMPLES=Off -DFLB_SHARED_LIB=Off -DFLB_BACKTRACE=Off \
    -DFLB_HTTP_SERVER=Off -DFLB_SIGNV4=Off -DFLB_AWS=Off -DFLB_KAFKA=Off "${plugins[@]}" \
    >"$work/cmake.log"
make -j"$(nproc)" fluent-bit-bin >"$work/make.log"
echo "$source/build/bin/fluent-bit"
