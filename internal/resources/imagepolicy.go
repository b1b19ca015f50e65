package resources

import (
	"fmt"
	"strings"
)

// ImagePolicy is the administrator's rule for the images the operator starts (the etcd image
// of each cluster, spec.image included, and the launcher): a namespace user who may create an
// EtcdCluster chooses spec.image, and the pods run it with the cluster's Secrets mounted.
type ImagePolicy struct {
	// AllowedRegistries are the prefixes an image must start with, each a registry host or a
	// repository path (registry.example.com, ghcr.io/quorate-dev/); short Docker Hub names
	// are read as docker.io/library/...; empty: any registry.
	AllowedRegistries []string
	// RequireDigests: only images named by digest (@sha256:...), as disconnected installs
	// mirror them, and as tags can be moved under a running cluster.
	RequireDigests bool
}

// Check says why the policy refuses image ("" reasons none: nil).
func (p ImagePolicy) Check(image string) error {
	if p.RequireDigests && !strings.Contains(image, "@sha256:") {
		return fmt.Errorf("image %s is not named by digest, and this operator runs images by digest only (--require-image-digests): name it as repository@sha256:<digest>", image)
	}
	if len(p.AllowedRegistries) == 0 {
		return nil
	}
	full := canonicalImage(image)
	for _, allowed := range p.AllowedRegistries {
		prefix := strings.TrimSuffix(allowed, "/")
		if full == prefix || strings.HasPrefix(full, prefix+"/") {
			return nil
		}
	}
	return fmt.Errorf("image %s is from none of the registries this operator may run images from (--allowed-image-registries: %s): use an image from one of them, or ask the operator's administrator", image, strings.Join(p.AllowedRegistries, ", "))
}

// canonicalImage spells a reference with its registry: etcd:3.6 is
// docker.io/library/etcd:3.6, and org/etcd is docker.io/org/etcd, as container runtimes read
// them. A first component with a dot or a port, or localhost, is a registry host.
func canonicalImage(ref string) string {
	first, rest, found := strings.Cut(ref, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return ref
	}
	if !found {
		return "docker.io/library/" + first
	}
	return "docker.io/" + first + "/" + rest
}
