#!/usr/bin/env bash
# firebase-tools, pinned, fetched into npm's npx cache the first time it is needed.
# It is not a devDependency: its tree (about 350 packages, re2 among them, a native
# build) made every `npm ci` minutes longer for the two commands that use it,
# `npm run test:emulators` and deploying the rules. See docs/dependencies.md.
set -euo pipefail
FIREBASE_TOOLS_VERSION=15.34.2
# --ignore-scripts: re2, an optional dependency of superstatic (the Hosting emulator, which this
# project does not use; superstatic falls back to RegExp without it), would otherwise try to
# download a prebuilt binary and then compile itself from source.
exec npx --yes --ignore-scripts "firebase-tools@${FIREBASE_TOOLS_VERSION}" "$@"
