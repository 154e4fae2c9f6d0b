#!/bin/sh
# Browser check (suite 'browser'): draws a flame graph with hostile names
# and has headless Chromium (Debian's chromium, driven by playwright-core
# that tests/prepare.d/browser.sh installs into the build directory)
# confirm that it renders, that clicking a frame zooms and that search
# highlights; then the same for a differential graph, whose hover text
# holds both values and the change.  Skips, saying why, only where
# Chromium cannot run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${EVALPROF:?}" "${FLAME_NODE_DIR:?}"
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
    echo "SKIP: no Chromium at $chromium (tools/bootstrap.sh browser installs Debian's chromium)"
    exit 77
fi
node=$(command -v node || command -v nodejs || true)
if [ -z "$node" ]; then
    echo "SKIP: Node.js is not installed (needed to drive Chromium)"
    exit 77
fi
if [ ! -d "$FLAME_NODE_DIR/node_modules/playwright-core" ]; then
    echo "SKIP: playwright-core is not installed in $FLAME_NODE_DIR (tests/prepare.d/browser.sh could not run npm)"
    exit 77
fi
out="$FLAME_NODE_DIR/out"
mkdir -p "$out"
"$EVALPROF" flamegraph --title 'hostile <script>alert(1)</script> & "q"' \
    -o "$out/sample.svg" "$here/data/sample.folded" 2>/dev/null || exit 1
"$EVALPROF" flamegraph --diff -o "$out/diff.svg" "$here/golden/svg-diff/base.folded" \
    "$here/golden/svg-diff/new.folded" || exit 1
cp "$here/browser/harness.mjs" "$here/browser/check.mjs" "$here/browser/check-diff.mjs" \
    "$FLAME_NODE_DIR/"
cd "$FLAME_NODE_DIR" || exit 1
CHROMIUM="$chromium" "$node" check.mjs "$out/sample.svg" "$out/sample.png" || exit $?
CHROMIUM="$chromium" "$node" check-diff.mjs "$out/diff.svg"
