#!/usr/bin/env bash
# Builds operator-sdk (for `operator-sdk scorecard`) and the scorecard-test program from the Go
# module proxy, statically, cached in $QUORATE_CACHE/operator-sdk/<version>/bin. Prints the
# cache directory.
#
# operator-sdk v1.42.3 requires ansible-operator-plugins v1.42.3, which the proxy refuses (403);
# v1.42.0 is served and builds with it, but is not in the checksum database, so that one module
# is fetched with GONOSUMDB (its hash is then pinned in the scratch module's go.sum).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
OSDK_VERSION=${OPERATOR_SDK_VERSION:-v1.42.3}
ANSIBLE_PLUGINS_VERSION=${ANSIBLE_PLUGINS_VERSION:-v1.42.0}
dir=$QUORATE_CACHE/operator-sdk/$OSDK_VERSION
m=github.com/operator-framework/operator-sdk
export GONOSUMDB=github.com/operator-framework/ansible-operator-plugins
done_() { [ -x "$dir/bin/operator-sdk" ] && [ -x "$dir/bin/scorecard-test" ]; }
if done_; then echo "$dir"; exit 0; fi

build() {
  done_ && return 0
  local start=$SECONDS src=$dir/src
  rm -rf "$src"; mkdir -p "$src" "$dir/bin"
  log "building operator-sdk $OSDK_VERSION and scorecard-test (cold: a few minutes)"
  (
    cd "$src"
    local p=github.com/operator-framework/ansible-operator-plugins
    scratch_module "$m" "$OSDK_VERSION" "replace $p => $p $ANSIBLE_PLUGINS_VERSION" \
      "$m/cmd/operator-sdk" "$m/images/scorecard-test"
    CGO_ENABLED=0 go build -trimpath -tags containers_image_openpgp -ldflags "-s -w" -o "$dir/bin/" "$m/cmd/operator-sdk" "$m/images/scorecard-test"
  )
  log "built operator-sdk $OSDK_VERSION in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$dir"
