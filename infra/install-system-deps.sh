#!/usr/bin/env bash
# Install the JVM, Maven and headless Chromium (the report and Airflow screenshots)
# from Debian's packages when the machine lacks them.
set -euo pipefail
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
packages=()
command -v java >/dev/null || packages+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || packages+=(maven)
command -v chromium >/dev/null || packages+=(chromium)
[ "${#packages[@]}" -eq 0 ] && exit 0
$SUDO apt-get update -q
$SUDO apt-get install -y -q "${packages[@]}"
