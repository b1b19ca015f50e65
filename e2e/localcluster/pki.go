package localcluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/quorate-dev/quorate/internal/pki"
)

// writePKI creates the cluster CA, the front-proxy CA of the aggregation layer, the
// service-account signing key, and a certificate for every component, plus kubeconfigs.
func (c *Cluster) writePKI() error {
	now := time.Now()
	dir := c.cfg.path("pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	write := func(name string, data []byte) error { return os.WriteFile(filepath.Join(dir, name), data, 0o600) }
	ca, err := pki.NewCA("quorate-local-ca", now)
	if err != nil {
		return err
	}
	fp, err := pki.NewCA("quorate-local-front-proxy-ca", now)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"ca.crt": ca.CertPEM, "ca.key": ca.KeyPEM, "front-proxy-ca.crt": fp.CertPEM, "front-proxy-ca.key": fp.KeyPEM} {
		if err := write(name, data); err != nil {
			return err
		}
	}
	saKey, saPub, err := pki.NewKeyPEM()
	if err != nil {
		return err
	}
	if err := write("sa.key", saKey); err != nil {
		return err
	}
	if err := write("sa.pub", saPub); err != nil {
		return err
	}

	nodeIP := net.ParseIP(c.cfg.NodeIP)
	certs := []struct {
		file string
		ca   *pki.CA
		req  pki.Request
	}{
		{"apiserver", ca, pki.Request{CommonName: "kube-apiserver", Usage: pki.ServerAndClient,
			DNSNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost", c.cfg.NodeName},
			IPs:      []net.IP{nodeIP, net.ParseIP(c.cfg.APIServerIP), net.IPv4(127, 0, 0, 1)}}},
		{"apiserver-kubelet-client", ca, pki.Request{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}, Usage: pki.ClientOnly}},
		{"front-proxy-client", fp, pki.Request{CommonName: "front-proxy-client", Usage: pki.ClientOnly}},
		{"admin", ca, pki.Request{CommonName: "quorate-admin", Organization: []string{"system:masters"}, Usage: pki.ClientOnly}},
		{"controller-manager", ca, pki.Request{CommonName: "system:kube-controller-manager", Organization: []string{}, Usage: pki.ClientOnly}},
		{"scheduler", ca, pki.Request{CommonName: "system:kube-scheduler", Organization: []string{}, Usage: pki.ClientOnly}},
		{"kube-proxy", ca, pki.Request{CommonName: "system:kube-proxy", Organization: []string{}, Usage: pki.ClientOnly}},
	}
	for _, ct := range certs {
		pair, err := ct.ca.Sign(ct.req, now)
		if err != nil {
			return fmt.Errorf("signing %s: %w", ct.file, err)
		}
		if err := write(ct.file+".crt", pair.CertPEM); err != nil {
			return err
		}
		if err := write(ct.file+".key", pair.KeyPEM); err != nil {
			return err
		}
	}
	for _, user := range []string{"admin", "controller-manager", "scheduler", "kube-proxy"} {
		if err := c.writeKubeconfig(c.cfg.path(user+".kubeconfig"), user); err != nil {
			return err
		}
	}
	return c.writeNodePKI(c.cfg.node(1))
}

// writeKubeconfig writes a kubeconfig that authenticates with the named client certificate,
// embedding the certificates so the file can be copied anywhere.
func (c *Cluster) writeKubeconfig(path, user string) error {
	read := func(name string) ([]byte, error) { return os.ReadFile(c.cfg.path("pki", name)) }
	caPEM, err := read("ca.crt")
	if err != nil {
		return err
	}
	cert, err := read(user + ".crt")
	if err != nil {
		return err
	}
	key, err := read(user + ".key")
	if err != nil {
		return err
	}
	ctxName := "quorate-" + c.cfg.Name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ctxName] = &clientcmdapi.Cluster{Server: c.cfg.apiServerURL(), CertificateAuthorityData: caPEM}
	cfg.AuthInfos[ctxName] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: ctxName, AuthInfo: ctxName, Namespace: "default"}
	cfg.CurrentContext = ctxName
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}
