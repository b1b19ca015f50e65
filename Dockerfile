# The operator image: the manager, the member launcher and the backup tool (backup Jobs,
# restores, restore drills), all static. `make image` builds the binaries first (this machine
# has no Go builder image to pull).
FROM scratch
COPY bin/linux_amd64/quorate-operator /quorate-operator
COPY bin/linux_amd64/quorate-launcher /quorate-launcher
COPY bin/linux_amd64/quorate-backup /quorate-backup
# Where certification checks (and users) look for the license of what an image ships.
COPY LICENSE /licenses/LICENSE
# The labels a certification run requires of every image it checks (docs/olm.md).
ARG VERSION=dev
LABEL name="quorate-dev/quorate-operator" vendor="Quorate maintainers" version="$VERSION" release="$VERSION" \
      summary="Quorate, an operator for etcd clusters" \
      description="Quorate, an operator for etcd clusters; see https://github.com/quorate-dev/quorate"
# A numeric user, so runAsNonRoot holds where nobody assigns one; OpenShift replaces it with
# one of the namespace's range (group 0 stays, and the image's files are readable by all).
USER 65532:65532
ENTRYPOINT ["/quorate-operator"]
