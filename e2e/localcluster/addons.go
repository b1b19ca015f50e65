package localcluster

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/template"
	"time"
)

//go:embed addons/*.yaml profiles/*.yaml
var addonFS embed.FS

// applyAddons installs CoreDNS and the volume provisioner with the cluster's kubectl, on node 1
// (the system pool): a scenario that drains, powers off or cuts off another node does not
// take the cluster's name service or volume provisioner with it.
func (c *Cluster) applyAddons(ctx context.Context) error {
	data := map[string]string{
		"CoreDNSImage": c.cfg.Image(CoreDNSImage), "LocalPathImage": LocalPathImage, "HelperImage": HelperImage,
		"SystemPool": fmt.Sprintf("{%s: %s}", PoolLabel, PoolSystem),
		"DNSIP":      c.cfg.DNSIP, "VolumeDir": c.cfg.path("volumes"), "VolumeDirB": c.cfg.path("volumes-b"),
	}
	files, rollouts := []string{"addons/coredns.yaml", "addons/local-path.yaml"}, [][2]string{{"kube-system", "coredns"}, {"local-path-storage", "local-path-provisioner"}}
	if c.cfg.Profile == ProfileForeign {
		files, rollouts = files[:1], rollouts[:1]
	}
	for _, f := range files {
		t, err := template.ParseFS(addonFS, f)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return err
		}
		if err := c.kubectl(ctx, buf.String(), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
			return fmt.Errorf("applying %s: %w", f, err)
		}
	}
	for _, d := range rollouts {
		if err := c.kubectl(ctx, "", "-n", d[0], "rollout", "status", "deployment/"+d[1], "--timeout=180s"); err != nil {
			return fmt.Errorf("waiting for %s/%s: %w (pod events: kubectl -n %s describe pods)", d[0], d[1], err, d[0])
		}
	}
	if c.cfg.Profile == ProfileForeign {
		return c.applyForeignAddons(ctx)
	}
	return nil
}

// applyForeignAddons installs the foreign profile's storage, the CSI stack of hack/csi.sh alone
// (its StorageClass ForeignStorageClass the default), and NetworkPolicy enforcement
// (kube-network-policies, hack/netpol.sh), their images named by ForeignRegistry.
func (c *Cluster) applyForeignAddons(ctx context.Context) error {
	// The scripts' own settings come from here alone, not from the caller's environment (a
	// stray CSI_PRINT=1 would install nothing).
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CSI_") && !strings.HasPrefix(e, "NETPOL_") && !strings.HasPrefix(e, "REGISTRY=") {
			env = append(env, e)
		}
	}
	env = append(env, "KUBECONFIG="+c.cfg.path("admin.kubeconfig"), "KUBECTL="+c.cfg.Kubectl())
	for _, s := range []struct{ script, what, env string }{
		{"csi.sh", "CSI storage", "CSI_CLASS=" + ForeignStorageClass + " CSI_DEFAULT_CLASS=1 CSI_IMAGE_REGISTRY=" + ForeignRegistry},
		// Fail open: while an agent restarts, its node's new connections pass rather than drop
		// (nothing would answer its queue), so a restart cannot read as the operator's write gap.
		{"netpol.sh", "NetworkPolicy enforcement", "NETPOL_FAIL_OPEN=1 NETPOL_IMAGE_REGISTRY=" + ForeignRegistry},
	} {
		if _, err := c.scriptIn(ctx, append(slices.Clone(env), strings.Fields(s.env)...), s.script); err != nil {
			return fmt.Errorf("installing the foreign profile's %s: %w", s.what, err)
		}
	}
	return nil
}

// kubectl runs the cluster's kubectl as admin, with stdin.
func (c *Cluster) kubectl(ctx context.Context, stdin string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.cfg.Kubectl(), append([]string{"--kubeconfig", c.cfg.path("admin.kubeconfig")}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
