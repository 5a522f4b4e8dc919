#!/usr/bin/env bash
# Install what the browser test needs: Debian's Chromium (never Playwright's own download).
# Needs root (or sudo) and Debian's package registry; does nothing when chromium is present.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: no apt-get here; install Chromium yourself to run the browser test" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "install_browser: not root and no sudo; the browser test will be skipped" >&2
    exit 0
  fi
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
echo "install_browser: chromium installed at $(command -v chromium)"
