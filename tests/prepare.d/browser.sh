#!/bin/sh
# Test set-up for the 'browser' suite: Debian's chromium (through
# tools/bootstrap.sh) and playwright-core from npm, installed into
# BUILD/flame-browser (never a downloaded browser: playwright-core only
# drives /usr/bin/chromium).  Prints a notice and leaves the suite to skip
# when either cannot be installed here.
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
sh "$top/tools/bootstrap.sh" browser ||
    echo "notice: Chromium could not be installed; the browser check will skip"
dir="$top/$BUILD/flame-browser"
case "$BUILD" in /*) dir="$BUILD/flame-browser" ;; esac
mkdir -p "$dir"
if [ -d "$dir/node_modules/playwright-core" ] &&
   cmp -s "$top/tests/flame/browser/package.json" "$dir/package.json"; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "notice: npm not found; the browser check will skip"
    exit 0
fi
cp "$top/tests/flame/browser/package.json" "$top/tests/flame/browser/package-lock.json" "$dir/"
if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
    echo "notice: npm could not install playwright-core (see $dir/npm.log); the browser check will skip"
fi
exit 0
