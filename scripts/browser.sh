#!/usr/bin/env bash
# The browser of the end-to-end UI test (test/e2e/temporal-ui.e2e-spec.ts): Debian's `chromium`
# at /usr/bin/chromium, driven by playwright-core (which downloads no browser of its own).
# Idempotent: nothing happens when it is there. As root with apt-get it is installed; otherwise
# this says how to install it and leaves it (the UI test then fails, naming the package).
set -euo pipefail
CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[browser] installing Debian's chromium for the Temporal UI test"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  [ -x "$CHROMIUM" ] || { echo "[browser] apt-get installed chromium but $CHROMIUM is missing" >&2; exit 1; }
else
  echo "[browser] $CHROMIUM is missing and this is not root with apt-get: skipping its installation;" \
    "install Debian's 'chromium' package (sudo apt-get install chromium), or the Temporal UI test fails" >&2
fi
