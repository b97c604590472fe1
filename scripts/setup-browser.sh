#!/usr/bin/env bash
# setup-browser.sh installs Debian's Chromium, which the console's browser
# tests drive headless (through chromedp, over the DevTools protocol), when
# /usr/bin/chromium is not there yet. It needs root (or sudo) for apt-get;
# it prints one line when it installs and nothing when Chromium is there.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null; then
		echo "setup-browser: Chromium is missing and installing it needs root: run apt-get install chromium as root" >&2
		exit 1
	fi
	sudo="sudo"
fi
echo "installing Debian's chromium (for the console's browser tests)"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -q chromium >/tmp/setup-browser.log 2>&1; then
	# A fresh machine may have no package lists yet.
	$sudo apt-get update -q >>/tmp/setup-browser.log 2>&1 || true
	if ! $sudo apt-get install -y -q chromium >>/tmp/setup-browser.log 2>&1; then
		echo "setup-browser: apt-get install chromium failed; its output is in /tmp/setup-browser.log" >&2
		tail -20 /tmp/setup-browser.log >&2
		exit 1
	fi
fi
/usr/bin/chromium --version
