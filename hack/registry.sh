#!/usr/bin/env bash
# The local image registry (Debian's docker-registry) on 127.0.0.1:5000. Its storage lives in
# $QUORATE_CACHE/registry so images built once survive clusters and fresh clones.
# Usage: hack/registry.sh start|stop|status
#        hack/registry.sh pods ADDR   also serve the same storage, read-only, on ADDR (the node's
#                                     bridge address), for programs that pull images from inside
#                                     pods (OLM v1's catalogd and operator-controller)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
dir=$QUORATE_CACHE/registry
pidfile=$QUORATE_CACHE/registry.pid
addr=127.0.0.1:5000

up() { curl -fsS "http://${1:-$addr}/v2/" >/dev/null 2>&1; }

# serve NAME ADDR STORAGE_OPTION...: writes $QUORATE_CACHE/NAME.yml for a registry on ADDR over
# the shared storage (the options are YAML lines under storage:), starts it, waits until it answers.
serve() {
  local name=$1 a=$2; shift 2
  {
    printf 'version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n' "$dir"
    printf '%s\n' "$@"
    printf 'http:\n  addr: %s\n' "$a"
  } >"$QUORATE_CACHE/$name.yml"
  setsid docker-registry serve "$QUORATE_CACHE/$name.yml" >"$QUORATE_CACHE/$name.log" 2>&1 </dev/null &
  echo $! >"$QUORATE_CACHE/$name.pid"
  for _ in $(seq 1 50); do up "$a" && return 0; sleep 0.1; done
  die "the registry $name did not start on $a; see $QUORATE_CACHE/$name.log"
}

case ${1:-} in
start)
  if up; then exit 0; fi
  "$here/install-deps.sh"
  mkdir -p "$dir"
  if ss -ltn 2>/dev/null | grep -q ':5000 '; then
    die "port 5000 is taken by something that is not a registry: stop it (ss -ltnp | grep :5000)"
  fi
  serve registry "$addr" '  delete:' '    enabled: true'
  ;;
pods)
  paddr=${2:?usage: registry.sh pods ADDR}
  "$0" start
  up "$paddr" && exit 0
  # Not `ip | grep -q`: grep leaves at the first match, ip then dies of SIGPIPE, and pipefail
  # makes the pipeline fail on a machine with many interfaces.
  addrs=$(ip -o addr show)
  grep -q " inet ${paddr%:*}/" <<<"$addrs" || die "no interface has ${paddr%:*}: start the local cluster first"
  serve registry-pods "$paddr" '  maintenance:' '    readonly:' '      enabled: true'
  ;;
stop)
  for f in "$pidfile" "$QUORATE_CACHE/registry-pods.pid"; do
    if [ -f "$f" ]; then
      kill "$(cat "$f")" 2>/dev/null || true
      rm -f "$f"
    fi
  done
  ;;
status)
  up && echo "registry up on $addr" || { echo "registry down"; exit 1; }
  ;;
*)
  die "usage: registry.sh start|stop|status"
  ;;
esac
