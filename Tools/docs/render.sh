#!/usr/bin/env bash
# `make docs`: renders every DocC catalog (LMDB, CanopyCore, Canopy, CanopyIndexes, CanopySearch, CanopySource, CanopyTerminal, and
# CanopyCLI's usage) to static HTML in .build/docs/site, as one combined archive so that pages link across modules.
# Fails when DocC warns (an unresolved symbol link, a parameter without documentation): the docs stay clean.
# swift-docc-plugin is a dependency only while CANOPY_DOCS is set (Package.swift), so builds and CI never fetch it.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.build/docs/site
log=.build/docs/render.log
mkdir -p .build/docs
rm -rf "$out"
targets=(LMDB CanopyCore Canopy CanopyIndexes CanopySearch CanopySource CanopyTerminal CanopyCLI)
args=()
for target in "${targets[@]}"; do args+=(--target "$target"); done
status=0
CANOPY_DOCS=1 "${SWIFT:-swift}" package --allow-writing-to-directory .build/docs generate-documentation "${args[@]}" \
    --enable-experimental-combined-documentation --transform-for-static-hosting --output-path "$out" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
    echo "error: DocC failed (exit $status); see $log" >&2
    exit "$status"
fi
warnings="$(grep -E '^warning: ' "$log" | grep -v -E '^warning: (you may be able to install|Building for)' || true)"
if [ -n "$warnings" ]; then
    echo "error: DocC printed $(printf '%s\n' "$warnings" | wc -l) warning(s); fix the links or comments (details in $log):" >&2
    printf '%s\n' "$warnings" >&2
    exit 1
fi
echo "docs: rendered ${targets[*]} into $out without warnings; serve it with: python3 -m http.server -d $out, then open /documentation/canopy"
