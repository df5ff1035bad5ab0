#!/usr/bin/env bash
# Installs Chromium from the Debian packages when no Chromium is found, for the
# browser tests of the web UI (e2e/ui_*_test.go). Needs root (CI runs as root);
# prints the browser's path on success.
set -euo pipefail

find_chromium() {
	for c in "${WEFT_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

if find_chromium; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-chromium: no Chromium found and not root; install it with: apt-get install -y --no-install-recommends chromium" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
find_chromium
