#!/usr/bin/env bash
# Prints the version a build of this checkout carries when none is given
# (make VERSION=vX.Y.Z overrides it): the release tag when HEAD is a tagged
# release, else v0.0.0-dev.g<commit>, with .dirty when the tree has
# uncommitted changes. Every piece is a SemVer 2 identifier, so the same
# string tags the images and versions the Helm chart (without its "v").
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo v0.0.0-dev
  exit 0
fi
if tag=$(git describe --tags --exact-match --match 'v[0-9]*' HEAD 2>/dev/null); then
  v=$tag
else
  v=v0.0.0-dev.g$(git rev-parse --short=12 HEAD)
fi
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  case "$v" in *-*) v=$v.dirty ;; *) v=$v-dirty ;; esac
fi
echo "$v"
