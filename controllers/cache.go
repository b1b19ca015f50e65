package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/internal/resources"
)

// CacheOptions is what the operator's cache holds: the given namespaces (none: every
// namespace), no object's managedFields (the operator never reads them, and at thousands of
// clusters they are tens of MiB: make bench-scale), and of pods only what the operator reads
// (resources.PodForCache).
func CacheOptions(namespaces ...string) cache.Options {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: resources.PodForCache}},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, n := range namespaces {
			opts.DefaultNamespaces[n] = cache.Config{}
		}
	}
	return opts
}
