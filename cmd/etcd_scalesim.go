//go:build scalesim

package main

import (
	"os"

	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/etcd/etcdsim"
)

// etcdFactory, in the scale test's build (hack/scale), answers for the members from memory:
// 3-member clusters of SCALESIM_ETCD_VERSION.
func etcdFactory() etcd.Factory {
	return etcdsim.New(3, os.Getenv("SCALESIM_ETCD_VERSION")).Factory()
}
