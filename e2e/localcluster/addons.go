package localcluster

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"os/exec"
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
		"CoreDNSImage": CoreDNSImage, "LocalPathImage": LocalPathImage, "HelperImage": HelperImage,
		"SystemPool": fmt.Sprintf("{%s: %s}", PoolLabel, PoolSystem),
		"DNSIP":      c.cfg.DNSIP, "VolumeDir": c.cfg.path("volumes"), "VolumeDirB": c.cfg.path("volumes-b"),
	}
	for _, f := range []string{"addons/coredns.yaml", "addons/local-path.yaml"} {
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
	for _, d := range [][2]string{{"kube-system", "coredns"}, {"local-path-storage", "local-path-provisioner"}} {
		if err := c.kubectl(ctx, "", "-n", d[0], "rollout", "status", "deployment/"+d[1], "--timeout=180s"); err != nil {
			return fmt.Errorf("waiting for %s/%s: %w (pod events: kubectl -n %s describe pods)", d[0], d[1], err, d[0])
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
