# The operator image: the manager, the member launcher and the backup tool (backup Jobs,
# restores, restore drills), all static. `make image` builds the binaries first (this machine
# has no Go builder image to pull).
FROM scratch
COPY bin/linux_amd64/quorate-operator /quorate-operator
COPY bin/linux_amd64/quorate-launcher /quorate-launcher
COPY bin/linux_amd64/quorate-backup /quorate-backup
# Where certification checks (and users) look for the license of what an image ships.
COPY LICENSE /licenses/LICENSE
USER 65532:65532
ENTRYPOINT ["/quorate-operator"]
