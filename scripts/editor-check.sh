#!/usr/bin/env bash
# Starts the bundled standalone app (dummy audio backend) under a virtual X display,
# checks that its editor window opens and renders (not a blank image), and saves a
# screenshot to $1 (default: editor.png). Needs xvfb, xdotool and imagemagick.
set -euo pipefail
out="${1:-editor.png}"
bundle="${FERROFX_BUNDLE_DIR:-${CARGO_TARGET_DIR:-target}/bundled}"
app="$bundle/FerroFX"
[ -x "$app" ] || { echo "error: $app not found; run cargo xtask bundle ferrofx" >&2; exit 1; }
export XDG_RUNTIME_DIR="$(mktemp -d)"
chmod 700 "$XDG_RUNTIME_DIR"
# A display number no other X server holds.
n=90
while [ -e "/tmp/.X$n-lock" ] || [ -e "/tmp/.X11-unix/X$n" ]; do n=$((n + 1)); done
display=":$n"
Xvfb "$display" -screen 0 1280x800x24 >/dev/null 2>&1 &
xvfb=$!
cleanup() { kill "$app_pid" 2>/dev/null || true; kill "$xvfb" 2>/dev/null || true; rm -rf "$XDG_RUNTIME_DIR"; }
app_pid=
trap cleanup EXIT
sleep 2
DISPLAY="$display" NICE_LOG="$XDG_RUNTIME_DIR/standalone.log" "$app" --backend dummy >/dev/null 2>&1 &
app_pid=$!
window=
# Up to a minute: on a loaded 2-core machine the first frame can take a while.
for _ in $(seq 1 120); do
    window="$(DISPLAY="$display" xdotool search --name '^FerroFX$' 2>/dev/null | head -1 || true)"
    [ -n "$window" ] && break
    kill -0 "$app_pid" 2>/dev/null || { echo "error: the standalone app exited" >&2; cat "$XDG_RUNTIME_DIR/standalone.log" >&2 || true; exit 1; }
    sleep 0.5
done
[ -n "$window" ] || { echo "error: no FerroFX window appeared within a minute" >&2; cat "$XDG_RUNTIME_DIR/standalone.log" >&2 || true; exit 1; }
sleep 3
DISPLAY="$display" import -window root "$out"
# A rendered editor has many colours; a blank or black window has one or two.
colours="$(convert "$out" -format '%k' info:)"
echo "editor window $window rendered with $colours colours; screenshot: $out"
[ "$colours" -gt 50 ] || { echo "error: the editor looks blank ($colours colours)" >&2; exit 1; }
