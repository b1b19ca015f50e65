package main

import (
	"os/exec"
	"strings"
	"testing"
)

// storageSDKs are the module path prefixes of the object-storage SDKs that backups use
// (internal/backup/blobstore). They are most of a binary's code and allocate at init; the
// operator only reads the backup Job's results and never talks to a bucket.
var storageSDKs = []string{"gocloud.dev/", "github.com/aws/", "github.com/Azure/", "cloud.google.com/", "google.golang.org/api/"}

// The operator's binary links none of the storage SDKs: it reaches internal/backup for the
// backup Job's result and retention, never internal/backup/blobstore.
func TestOperatorLinksNoStorageSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var linked []string
	for _, p := range strings.Fields(string(out)) {
		for _, sdk := range storageSDKs {
			if strings.HasPrefix(p, sdk) {
				linked = append(linked, p)
			}
		}
	}
	if len(linked) > 0 {
		t.Fatalf("the operator links %d packages of storage SDKs, first %s: import internal/backup/blobstore only from the backup Job", len(linked), linked[0])
	}
}
