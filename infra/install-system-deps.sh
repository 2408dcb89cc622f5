#!/usr/bin/env bash
# Install the JVM and Maven from Debian's packages when the machine lacks them.
# `infra/install-system-deps.sh chromium` also installs headless Chromium (the Airflow UI
# screenshot, bin/airflow-screenshot).
set -euo pipefail
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
packages=()
command -v java >/dev/null || packages+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || packages+=(maven)
if [ "${1:-}" = "chromium" ] && ! command -v chromium >/dev/null; then packages+=(chromium); fi
[ "${#packages[@]}" -eq 0 ] && exit 0
$SUDO apt-get update -q
$SUDO apt-get install -y -q "${packages[@]}"
