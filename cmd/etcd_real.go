//go:build !scalesim

package main

import "github.com/quorate-dev/quorate/internal/etcd"

// etcdFactory connects to the members.
func etcdFactory() etcd.Factory { return etcd.NewClient }
