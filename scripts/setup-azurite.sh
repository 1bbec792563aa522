#!/usr/bin/env bash
# Installs Azurite (Microsoft's Azure Storage emulator, from the npm registry) into .azurite/ for the
# Azure tests; idempotent, pinned. The tests start and stop the server themselves (127.0.0.1, a free
# port, a temporary data directory).
set -euo pipefail
cd "$(dirname "$0")/.."
version=3.37.0
stamp=".azurite/.installed-$version"
if [ -f "$stamp" ] && [ -x .azurite/node_modules/.bin/azurite-blob ]; then exit 0; fi
command -v npm > /dev/null || { echo "error: npm is needed to install Azurite (the Azure tests' server)" >&2; exit 1; }
rm -rf .azurite
mkdir -p .azurite
(cd .azurite && npm install --silent --no-audit --no-fund --no-save "azurite@$version" > /dev/null)
touch "$stamp"
echo "azurite $version ready"
