module github.com/quorate-dev/quorate/hack/netpol/nodenetns

go 1.26.0

require golang.org/x/sys v0.47.0
