# The operator image: the manager and the member launcher, both static. `make image` builds the
# binaries first (this machine has no Go builder image to pull).
FROM scratch
COPY bin/linux_amd64/quorate-operator /quorate-operator
COPY bin/linux_amd64/quorate-launcher /quorate-launcher
USER 65532:65532
ENTRYPOINT ["/quorate-operator"]
