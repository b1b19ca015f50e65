// Package conformance is Quorate's conformance suite, built on sigs.k8s.io/e2e-framework. Each
// scenario runs an EtcdCluster under the workload and judges the recorded history with every
// checker; `make conformance` builds it into the quorate-conformance binary (go test -c).
//
// Run it against any cluster where Quorate is installed:
//
//	quorate-conformance --kubeconfig ~/.kube/config --report-dir report --labels suite=core
//
// or let it start the local cluster and install Quorate first (this repository's CI):
//
//	go test -tags e2e ./e2e/conformance -args --provider=local --install-operator
package conformance
