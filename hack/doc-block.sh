#!/usr/bin/env bash
# Prints the shell block of a document that follows the marker <!-- ci: NAME -->, so that CI
# runs a procedure exactly as the documentation shows it to users.
# Usage: hack/doc-block.sh docs/conformance.md conformance-job | bash -euo pipefail
set -euo pipefail
doc=${1:?usage: doc-block.sh DOC NAME} name=${2:?usage: doc-block.sh DOC NAME}
awk -v marker="<!-- ci: $name -->" '
  $0 == marker { found = 1; next }
  found && /^```sh$/ { inblock = 1; next }
  inblock && /^```$/ { exit }
  inblock { print }
' "$doc" | grep . || { echo "doc-block: no block <!-- ci: $name --> in $doc" >&2; exit 1; }
