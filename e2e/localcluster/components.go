package localcluster

import (
	"fmt"
	"strings"
)

func (c *Cluster) pki(name string) string { return c.cfg.path("pki", name) }

func (c *Cluster) etcdDaemon() daemon {
	return daemon{name: "etcd", args: []string{c.cfg.etcdBin(),
		"--name=control-plane",
		"--data-dir=" + c.cfg.path("etcd"),
		fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", c.cfg.EtcdClientPort),
		fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", c.cfg.EtcdClientPort),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", c.cfg.EtcdPeerPort),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", c.cfg.EtcdPeerPort),
		fmt.Sprintf("--initial-cluster=control-plane=http://127.0.0.1:%d", c.cfg.EtcdPeerPort),
		"--listen-metrics-urls=",
		"--quota-backend-bytes=4294967296",
		"--unsafe-no-fsync=true", // a throwaway test cluster: trade durability for speed
		"--log-level=warn",
	}}
}

func (c *Cluster) apiServerDaemon() daemon {
	return daemon{name: "kube-apiserver", args: append([]string{c.cfg.k8sBin("kube-apiserver"),
		"--advertise-address=" + c.cfg.NodeIP,
		"--bind-address=" + c.cfg.NodeIP,
		fmt.Sprintf("--secure-port=%d", c.cfg.APIServerPort),
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", c.cfg.EtcdClientPort),
		"--service-cluster-ip-range=" + c.cfg.ServiceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.pki("sa.pub"),
		"--service-account-signing-key-file=" + c.pki("sa.key"),
		"--client-ca-file=" + c.pki("ca.crt"),
		"--tls-cert-file=" + c.pki("apiserver.crt"),
		"--tls-private-key-file=" + c.pki("apiserver.key"),
		"--kubelet-client-certificate=" + c.pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + c.pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + c.pki("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		// The aggregation layer, for aggregated API servers such as OLM's packageserver.
		"--requestheader-client-ca-file=" + c.pki("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file=" + c.pki("front-proxy-client.crt"),
		"--proxy-client-key-file=" + c.pki("front-proxy-client.key"),
		"--enable-aggregator-routing=true",
		"--profiling=false",
		"--v=1",
	}, c.cfg.profileAPIServerArgs()...)}
}

func (c *Cluster) controllerManagerDaemon() daemon {
	kc := c.cfg.path("controller-manager.kubeconfig")
	return daemon{name: "kube-controller-manager", args: []string{c.cfg.k8sBin("kube-controller-manager"),
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--cluster-name=" + c.cfg.Name,
		"--cluster-signing-cert-file=" + c.pki("ca.crt"),
		"--cluster-signing-key-file=" + c.pki("ca.key"),
		"--root-ca-file=" + c.pki("ca.crt"),
		"--requestheader-client-ca-file=" + c.pki("front-proxy-ca.crt"),
		"--service-account-private-key-file=" + c.pki("sa.key"),
		"--use-service-account-credentials=true",
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + c.cfg.PodCIDR,
		"--node-cidr-mask-size=24",
		"--service-cluster-ip-range=" + c.cfg.ServiceCIDR,
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--leader-elect=false",
		"--profiling=false",
		"--v=1",
	}}
}

func (c *Cluster) schedulerDaemon() daemon {
	kc := c.cfg.path("scheduler.kubeconfig")
	return daemon{name: "kube-scheduler", args: []string{c.cfg.k8sBin("kube-scheduler"),
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
		"--profiling=false",
		"--v=1",
	}}
}

func (c *Cluster) containerdDaemon(n nodeSpec) daemon {
	return daemon{name: n.daemon("containerd"), args: []string{c.cfg.containerdBin("containerd"), "--config", n.path("containerd", "config.toml")}}
}

func (c *Cluster) kubeletConfig(n nodeSpec) string {
	cgroupRoot := ""
	if n.cgroupRoot != "" {
		cgroupRoot = "cgroupRoot: " + n.cgroupRoot + "\n"
	}
	if n.index > 1 {
		// A directory of its own (podLogsDir): a kubelet removes the log directories of pods
		// it does not know, and in a shared one those of every other node's pods.
		cgroupRoot += fmt.Sprintf("podLogsDir: %q\n", n.podLogsDir())
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[2]q}
authorization:
  mode: Webhook
tlsCertFile: %[3]q
tlsPrivateKeyFile: %[4]q
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%[5]s
clusterDNS: [%[6]q]
clusterDomain: cluster.local
resolvConf: ""
serializeImagePulls: false
# Pods sync every 15 s, not every minute: an updated Secret reaches the pods that mount it
# within about that (the cert-rotation scenario measures it), so that a CA rotation's phases
# need not wait a minute and more each.
syncFrequency: 15s
maxPods: 250
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
%[7]s`, n.ip, c.pki("ca.crt"), c.pki(n.certName("kubelet")+".crt"), c.pki(n.certName("kubelet")+".key"), n.socket(), c.cfg.DNSIP, cgroupRoot)
}

func (c *Cluster) kubeletDaemon(n nodeSpec) daemon {
	d := daemon{name: n.daemon("kubelet"), args: n.inNetns(c.cfg.k8sBin("kubelet"),
		"--config="+n.path("kubelet-config.yaml"),
		"--kubeconfig="+n.path(n.certName("kubelet-client")+".kubeconfig"),
		"--root-dir="+n.path("kubelet"),
		"--cert-dir="+n.path("kubelet", "pki"),
		"--hostname-override="+n.name,
		"--node-ip="+n.ip,
		"--node-labels="+PoolLabel+"="+n.pool(),
		"--v=1",
	)}
	if t := c.cfg.taints(n); len(t) > 0 {
		d.args = append(d.args, "--register-with-taints="+strings.Join(t, ","))
	}
	return d
}

func (c *Cluster) kubeProxyConfig(n nodeSpec) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %q
mode: iptables
clusterCIDR: %q
hostnameOverride: %q
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, c.cfg.path("kube-proxy.kubeconfig"), c.cfg.PodCIDR, n.name, n.ip)
}

func (c *Cluster) kubeProxyDaemon(n nodeSpec) daemon {
	return daemon{name: n.daemon("kube-proxy"), args: n.inNetns(c.cfg.k8sBin("kube-proxy"), "--config="+n.path("kube-proxy-config.yaml"), "--v=1")}
}

// writeConfigs writes every configuration file node 1's daemons read.
func (c *Cluster) writeConfigs() error { return c.writeNodeConfigs(c.cfg.node(1)) }
