#!/bin/sh
# Rebuild the committed widget bundles from src/ (run from anywhere; needs `npm ci` once).
# esbuild and every bundled package are pinned in package-lock.json, so a rebuild is
# byte-identical (check: `sh widgets/build.sh && git diff --exit-code widgets/`).
set -eu
cd "$(dirname "$0")"
[ -x node_modules/.bin/esbuild ] || npm ci --no-audit --no-fund
BANNER='/*! relviz widget bundle. Bundled: cytoscape 3.34.4, cytoscape-dagre 4.0.1 (with @dagrejs/dagre 3.0.0), cytoscape-edgehandles 4.0.1, lodash.memoize 4.1.2, lodash.throttle 4.1.1; all MIT licensed; see widgets/VENDOR.md. */'
for name in schema_editor; do
  node_modules/.bin/esbuild "src/$name.js" --bundle --format=esm --minify \
    --legal-comments=inline --target=es2020 --log-level=warning \
    "--banner:js=$BANNER" --outfile="$name.js"
done
