// Package localcluster runs a real Kubernetes cluster on this machine from upstream binaries
// built from source: etcd, kube-apiserver, kube-controller-manager and kube-scheduler as host
// processes, a node made of containerd + runc + kubelet + kube-proxy with bridge CNI, CoreDNS,
// a dynamic volume provisioner, and a local image registry. It needs no Docker engine and
// pulls nothing from the internet; all traffic stays on the machine.
//
// The node network is a host bridge (quorate0, 10.87.0.1/24) carrying the node's IP; pods
// live on the CNI bridge (qcni0, 10.244.0.0/24) in network namespaces; Services use
// 10.96.0.0/16. An iptables rule rejects pod traffic that would leave the machine. Further
// nodes can later be attached to quorate0 from their own network namespaces.
//
// Cluster implements Up and Down; Provider adapts it to e2e-framework's cluster provider
// interface (with image loading), so suites call envfuncs.CreateCluster with it as with kind.
package localcluster
