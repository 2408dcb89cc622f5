#!/usr/bin/env bash
# Install the JVM and Maven from Debian's packages when the machine lacks them.
set -euo pipefail
if command -v java >/dev/null && command -v mvn >/dev/null; then exit 0; fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -q
$SUDO apt-get install -y -q openjdk-17-jre-headless maven
