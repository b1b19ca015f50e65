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

up() { curl -fsS "http://$addr/v2/" >/dev/null 2>&1; }

case ${1:-} in
start)
  if up; then exit 0; fi
  "$here/install-deps.sh"
  mkdir -p "$dir"
  cat >"$QUORATE_CACHE/registry.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir
  delete:
    enabled: true
http:
  addr: $addr
CONF
  if ss -ltn 2>/dev/null | grep -q ':5000 '; then
    die "port 5000 is taken by something that is not a registry: stop it (ss -ltnp | grep :5000)"
  fi
  setsid docker-registry serve "$QUORATE_CACHE/registry.yml" >"$QUORATE_CACHE/registry.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 50); do up && exit 0; sleep 0.1; done
  die "the registry did not start; see $QUORATE_CACHE/registry.log"
  ;;
pods)
  paddr=${2:?usage: registry.sh pods ADDR}
  "$0" start
  curl -fsS "http://$paddr/v2/" >/dev/null 2>&1 && exit 0
  ip -o addr show | grep -q " inet ${paddr%:*}/" || die "no interface has ${paddr%:*}: start the local cluster first"
  cat >"$QUORATE_CACHE/registry-pods.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir
  maintenance:
    readonly:
      enabled: true
http:
  addr: $paddr
CONF
  setsid docker-registry serve "$QUORATE_CACHE/registry-pods.yml" >"$QUORATE_CACHE/registry-pods.log" 2>&1 </dev/null &
  echo $! >"$QUORATE_CACHE/registry-pods.pid"
  for _ in $(seq 1 50); do curl -fsS "http://$paddr/v2/" >/dev/null 2>&1 && exit 0; sleep 0.1; done
  die "the read-only registry did not start on $paddr; see $QUORATE_CACHE/registry-pods.log"
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
