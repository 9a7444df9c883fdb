#!/usr/bin/env bash
# The VST3 SDK's validator on a VST3 bundle, built with g++ alone (no CMake), for a
# machine that has the SDK's sources but no network: CI does not run it (the SDK is not on
# a package registry, and its `pluginterfaces` is licensed VST3-or-GPLv3, so it is not
# vendored here). Give the folder that holds the SDK's `base`, `pluginterfaces` and
# `public.sdk` (github.com/steinbergmedia/vst3_base, vst3_pluginterfaces,
# vst3_public_sdk; run on 2026-11-29 with 3.7.13 / 3.7.14 / 3.7.14):
#   bash scripts/vst3-validator.sh SDK_DIR [BUNDLE] [validator options, e.g. -e]
# BUNDLE defaults to $CARGO_TARGET_DIR/bundled/FerroFX.vst3. Exits with the validator's
# status (non-zero when a test fails).
set -euo pipefail
sdk="$(cd "${1:?usage: vst3-validator.sh SDK_DIR [BUNDLE] [options]}" && pwd)"
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
bundle="${2:-$CARGO_TARGET_DIR/bundled/FerroFX.vst3}"
shift $(( $# >= 2 ? 2 : $# ))
out="$CARGO_TARGET_DIR/vst3-validator"
mkdir -p "$out/obj"
cmake_list="$sdk/public.sdk/samples/vst-hosting/validator/CMakeLists.txt"
(
    # The validator's own list (its Linux module loader), then what its `sdk_hosting`
    # library brings: the hosting classes, the common parts, base and pluginterfaces.
    grep -oE '\$\{SDK_ROOT\}/[^ ]*\.cpp|source/[a-z]+\.cpp' "$cmake_list" \
        | sed "s#\${SDK_ROOT}/##; s#^source/#public.sdk/samples/vst-hosting/validator/source/#" \
        | grep -v '_win32\|_mac'
    echo public.sdk/source/vst/hosting/module_linux.cpp
    cd "$sdk"
    for f in public.sdk/source/vst/hosting/{connectionproxy,eventlist,hostclasses,module,parameterchanges,pluginterfacesupport,processdata}.cpp \
        public.sdk/source/common/{commoniids,readfile,commonstringconvert,threadchecker_linux}.cpp \
        public.sdk/source/vst/{vstinitiids,vstpresetfile}.cpp public.sdk/source/vst/utility/stringconvert.cpp \
        base/source/{baseiids,fbuffer,fdebug,fdynlib,fobject,fstreamer,fstring,timer,updatehandler}.cpp \
        base/thread/source/*.cpp pluginterfaces/base/*.cpp; do
        if [ -f "$f" ]; then echo "$f"; fi
    done
) | sort -u > "$out/sources.txt"
export sdk out
compile() {
    local o="$out/obj/$(echo "$1" | tr / _).o"
    [ -f "$o" ] || g++ -std=c++17 -O1 -w -DRELEASE=1 -I"$sdk" -c "$sdk/$1" -o "$o"
}
export -f compile
xargs -P "$(nproc)" -I{} bash -c 'compile {}' < "$out/sources.txt"
g++ -o "$out/validator" "$out"/obj/*.o -ldl -lpthread
# The module loader wants the bundle's folder name to match its library's name.
"$out/validator" "$@" "$bundle"
