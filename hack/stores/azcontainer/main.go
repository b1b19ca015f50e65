// Command azcontainer creates a container (a bucket) in an Azure Blob service if it is not
// there yet; hack/stores.sh runs it against Azurite, which does not create containers itself.
// The account and its key come from AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY.
// Usage: azcontainer SERVICE_URL CONTAINER...
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: azcontainer SERVICE_URL CONTAINER...")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "azcontainer:", err)
		os.Exit(1)
	}
}

func run(service string, containers []string) error {
	cred, err := azblob.NewSharedKeyCredential(os.Getenv("AZURE_STORAGE_ACCOUNT"), os.Getenv("AZURE_STORAGE_KEY"))
	if err != nil {
		return err
	}
	c, err := azblob.NewClientWithSharedKeyCredential(strings.TrimSuffix(service, "/")+"/", cred, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range containers {
		_, err := c.CreateContainer(ctx, name, nil)
		var re *azcore.ResponseError
		exists := errors.As(err, &re) && bloberror.HasCode(err, bloberror.ContainerAlreadyExists)
		if err != nil && !exists {
			return fmt.Errorf("creating container %s: %w", name, err)
		}
	}
	return nil
}
