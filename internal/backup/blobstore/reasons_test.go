package blobstore

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
)

// fakeS3 answers the requests of a bucket "b" as an S3-compatible store would for one kind of
// failure: the SDK parses its answers into the errors it gives for a real store.
func fakeS3(failure string) http.HandlerFunc {
	xmlErr := func(w http.ResponseWriter, status int, code string) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, code)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case failure == "credentials":
			xmlErr(w, http.StatusForbidden, "InvalidAccessKeyId")
		case failure == "bucket":
			xmlErr(w, http.StatusNotFound, "NoSuchBucket")
		case r.Method == http.MethodGet && r.URL.Path == "/b": // the bucket is there: an empty listing
			w.Header().Set("Content-Type", "application/xml")
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><KeyCount>0</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`))
		case failure == "space" && r.Method == http.MethodPut:
			xmlErr(w, http.StatusInsufficientStorage, "InsufficientStorage")
		case failure == "object":
			w.WriteHeader(http.StatusNotFound) // a HEAD: no body
		case failure == "damaged": // an object whose bytes are not a snapshot's
			body := make([]byte, 4096)
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.Header().Set("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT")
			w.Header().Set("ETag", `"x"`)
			if r.Method == http.MethodGet {
				_, _ = w.Write(body)
			}
		default:
			http.NotFound(w, r)
		}
	}
}

// Each cause of a failure at a store has its reason (a condition reason of the EtcdBackup) and
// its message, told from the errors the SDK gives for real answers: a store whose certificate
// no trusted authority signs, wrong credentials, no such bucket, no such object, no space, a
// damaged object, an endpoint that does not answer.
func TestStoreFailureReasons(t *testing.T) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_CA_BUNDLE": "", "AWS_CONFIG_FILE": os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_MAX_ATTEMPTS": "1", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	snapshot := filepath.Join(t.TempDir(), "snap.db")
	if err := os.WriteFile(snapshot, []byte("a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + closed.Addr().String()
	_ = closed.Close()
	store := func(endpoint string) error {
		return Store(ctx, backup.Location{Bucket: "s3://b?endpoint=" + endpoint + "&region=us-east-1&use_path_style=true", Key: "ns/demo/b1.db"}, snapshot, backup.Info{})
	}
	fetch := func(endpoint string) error {
		_, err := Fetch(ctx, backup.Location{Bucket: "s3://b?endpoint=" + endpoint + "&region=us-east-1&use_path_style=true", Key: "ns/demo/b1.db"},
			filepath.Join(t.TempDir(), "restore.db"), "")
		return err
	}
	serve := func(failure string) string {
		srv := httptest.NewServer(fakeS3(failure))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tlsSrv := httptest.NewTLSServer(fakeS3(""))
	defer tlsSrv.Close()
	loc := backup.Location{Bucket: "s3://b", Key: "ns/demo/b1.db"}
	for _, tc := range []struct {
		name, reason string
		err          error
		want         *Error // the failure's Op and Loc (nil: not a store's answer)
	}{
		{"a private CA", v1alpha1.ReasonStoreCertificateUntrusted, store(tlsSrv.URL), &Error{Op: "reaching the bucket of", Loc: loc}},
		{"wrong credentials", v1alpha1.ReasonStoreCredentialsRefused, store(serve("credentials")), &Error{Op: "reaching the bucket of", Loc: loc}},
		{"no such bucket", v1alpha1.ReasonStoreBucketNotFound, store(serve("bucket")), &Error{Op: "reaching the bucket of", Loc: loc}},
		{"no such object", v1alpha1.ReasonStoreObjectNotFound, fetch(serve("object")), &Error{Op: "reading the attributes of", Loc: loc}},
		{"out of space", v1alpha1.ReasonStoreOutOfSpace, store(serve("space")), &Error{Op: "writing", Loc: loc}},
		{"a damaged object", v1alpha1.ReasonSnapshotDamaged, fetch(serve("damaged")), nil},
		{"no answer", v1alpha1.ReasonStoreUnreachable, store(unreachable), &Error{Op: "reaching the bucket of", Loc: loc}},
		{"another host's certificate", v1alpha1.ReasonStoreCertificateInvalid,
			describe("writing", loc, fmt.Errorf("tls: failed to verify certificate: %w", x509.HostnameError{Certificate: tlsSrv.Certificate(), Host: "s3.example.org"})),
			&Error{Op: "writing", Loc: loc}},
	} {
		if got := Reason(tc.err); got != tc.reason {
			t.Errorf("%s: reason %q, want %q (%v)", tc.name, got, tc.reason, tc.err)
		}
		var se *Error
		if tc.want == nil {
			if errors.As(tc.err, &se) {
				t.Errorf("%s: a store's failure %v, want none", tc.name, se)
			}
			continue
		}
		if !errors.As(tc.err, &se) {
			t.Errorf("%s: %v is not a store's failure", tc.name, tc.err)
			continue
		}
		type failure struct{ op, loc, reason string } // the location as status and messages show it
		got, want := failure{se.Op, se.Loc.String(), se.Reason}, failure{tc.want.Op, tc.want.Loc.String(), tc.reason}
		if got != want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, want)
		}
	}
	if got, want := hints[v1alpha1.ReasonStoreCertificateUntrusted], "the store's certificate is signed by an authority the pod does not trust: name its CA in storage.caBundle"; got != want {
		t.Errorf("the message of an untrusted certificate: %q, want %q", got, want)
	}
	for _, r := range v1alpha1.StoreReasons {
		if hints[r] == "" && r != v1alpha1.ReasonSnapshotDamaged {
			t.Errorf("reason %s has no message", r)
		}
	}
}
