#!/usr/bin/env bash
# Tracktion's pluginval at strictness 10 on the VST3 bundle, under a virtual display
# (its editor tests open the plugin's window). Not in CI: pluginval and JUCE are on no
# package registry (and are GPLv3-or-commercial, so not vendored). Give a pluginval
# source tree with JUCE in modules/juce (github.com/Tracktion/pluginval and its JUCE
# submodule; run on 2026-11-29 with pluginval at 6b028fd, JUCE 8.0.3) and have CMake on
# PATH (`pip install cmake` will do):
#   bash scripts/pluginval.sh PLUGINVAL_DIR [BUNDLE] [pluginval options]
# BUNDLE defaults to $CARGO_TARGET_DIR/bundled/FerroFX.vst3. LADSPA hosting is switched
# off in the build (it wants ladspa.h, and FerroFX has no LADSPA build): this edits the
# given tree's CMakeLists.txt in place. Exits with pluginval's status.
set -euo pipefail
src="$(cd "${1:?usage: pluginval.sh PLUGINVAL_DIR [BUNDLE] [options]}" && pwd)"
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
bundle="${2:-$CARGO_TARGET_DIR/bundled/FerroFX.vst3}"
shift $(( $# >= 2 ? 2 : $# ))
build="$CARGO_TARGET_DIR/pluginval-build"
sed -i 's/JUCE_PLUGINHOST_LADSPA=1/JUCE_PLUGINHOST_LADSPA=0/' "$src/CMakeLists.txt"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$build.configure.log"
cmake --build "$build" -j "$(nproc)" > "$build.build.log"
xvfb-run -a "$build/pluginval_artefacts/Release/pluginval" --strictness-level 10 --timeout-ms 120000 "$@" --validate "$bundle"
