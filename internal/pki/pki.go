// Package pki generates the certificate authority and certificates of an etcd cluster: a
// server certificate for the client listener, a peer certificate for member-to-member traffic
// (both with a wildcard for the members' DNS names), and a client certificate for the operator
// and for the members' own health checks.
package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Validity of generated certificates. Leaf certificates are renewed by the operator with a
// third of their lifetime left; CAs are not rotated yet.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 90 * 24 * time.Hour
)

// Secret data keys, the kubernetes.io/tls layout plus ca.crt.
const (
	KeyCert   = "tls.crt"
	KeyKey    = "tls.key"
	KeyCACert = "ca.crt"
	KeyCAKey  = "ca.key"
)

// CA is a certificate authority in memory.
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// Pair is a certificate and key, PEM encoded.
type Pair struct{ CertPEM, KeyPEM []byte }

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
}

func encodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// NewCA creates a self-signed CA named after the cluster.
func NewCA(commonName string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"quorate"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// LoadCA parses a CA from PEM.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !cert.IsCA {
		return nil, errors.New("the CA secret does not hold an ECDSA certificate authority")
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// NotAfter is when the first certificate in certPEM expires.
func NotAfter(certPEM []byte) (time.Time, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	return cert.NotAfter, nil
}

// ParseCert parses the first certificate in certPEM.
func ParseCert(certPEM []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

// Usage says what a certificate is for.
type Usage int

const (
	// ServerAndClient certificates serve and also authenticate as clients (members use their
	// peer certificate both ways, and the server certificate for local health checks).
	ServerAndClient Usage = iota
	// ClientOnly certificates only authenticate clients.
	ClientOnly
)

// Request describes a certificate to sign.
type Request struct {
	CommonName   string
	Organization []string // defaults to "quorate"; Kubernetes reads groups from it
	DNSNames     []string
	IPs          []net.IP
	Usage        Usage
	// Validity of the certificate from now (LeafValidity when zero).
	Validity time.Duration
}

// Issue signs a certificate for commonName with the given DNS names and IPs.
func (ca *CA) Issue(commonName string, dnsNames []string, ips []net.IP, usage Usage, now time.Time) (Pair, error) {
	return ca.Sign(Request{CommonName: commonName, DNSNames: dnsNames, IPs: ips, Usage: usage}, now)
}

// Sign signs a certificate as the request describes.
func (ca *CA) Sign(req Request, now time.Time) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	sn, err := serial()
	if err != nil {
		return Pair{}, err
	}
	ext := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if req.Usage == ClientOnly {
		ext = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	validity := req.Validity
	if validity == 0 {
		validity = LeafValidity
	}
	// A certificate never outlives the CA that signs it: past the CA's end it would not verify
	// anyway, and its expiry would hide the CA's.
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	org := req.Organization
	if org == nil {
		org = []string{"quorate"}
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: org},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  ext,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Pair{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// NewKeyPEM returns a fresh ECDSA private key and its public key, PEM encoded (for
// service-account token signing).
func NewKeyPEM() (private, public []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if private, err = encodeKey(key); err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return private, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ClientTLS builds a client tls.Config from a client certificate pair and the CA that signed
// the server, verifying the server certificate for serverName whatever address was dialled.
//
// Clients reach members by pod IP, which no certificate can name in advance, and gRPC
// replaces tls.Config.ServerName with the dialled address; so the standard verification is
// replaced by one that checks the chain against the CA and the certificate against serverName.
func ClientTLS(certPEM, keyPEM, caPEM []byte, serverName string) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("ca.crt holds no certificate")
	}
	return &tls.Config{
		Certificates:       []tls.Certificate{pair},
		RootCAs:            pool,
		ServerName:         serverName,
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection below does the verification.
		VerifyConnection: func(cs tls.ConnectionState) error {
			return VerifyServer(cs, pool, serverName)
		},
	}, nil
}

// VerifyServer checks that the server's certificate chains to roots and names serverName.
func VerifyServer(cs tls.ConnectionState, roots *x509.CertPool, serverName string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the server presented no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: serverName, Intermediates: x509.NewCertPool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("server certificate is not valid for %s: %w", serverName, err)
	}
	return nil
}

// Check is what a certificate supplied by a user must satisfy.
type Check struct {
	// Usage the certificate must allow (server and client, or client only).
	Usage Usage
	// Hosts the certificate must cover (none for client certificates).
	Hosts []string
	// Now is the time at which it must be valid.
	Now time.Time
}

// CheckLeaf checks a user-supplied certificate (certPEM may hold intermediates after the
// leaf) against its key and CA: both parse, the key is the certificate's, the certificate
// chains to the CA, is valid now, allows the usage and covers the hosts. The error says which
// check failed and what the certificate holds.
func CheckLeaf(certPEM, keyPEM, caPEM []byte, chk Check) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("tls.crt and tls.key are not a certificate and its key: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("tls.crt does not parse: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return errors.New("ca.crt holds no PEM certificate")
	}
	inter := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	if chk.Now.Before(leaf.NotBefore) || chk.Now.After(leaf.NotAfter) {
		return fmt.Errorf("the certificate %q is valid from %s to %s, not now (%s)", leaf.Subject.CommonName,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), chk.Now.UTC().Format(time.RFC3339))
	}
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if chk.Usage == ServerAndClient {
		usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	for _, u := range usages {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: chk.Now, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			return fmt.Errorf("the certificate %q does not chain to ca.crt for %s: %w", leaf.Subject.CommonName, usageName(u), err)
		}
	}
	for _, h := range chk.Hosts {
		if err := leaf.VerifyHostname(h); err != nil {
			return fmt.Errorf("the certificate %q does not cover %s (its DNS names: %v)", leaf.Subject.CommonName, h, leaf.DNSNames)
		}
	}
	return nil
}

func usageName(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageServerAuth {
		return "server authentication"
	}
	return "client authentication"
}

// Files are a certificate, its key and the CA bundle, as a mounted Secret lays them out in a
// directory (tls.crt, tls.key, ca.crt).
type Files struct{ Cert, Key, CA []byte }

// ReadDir reads the three files of dir.
func ReadDir(dir string) (Files, error) {
	var f Files
	var err error
	for _, r := range []struct {
		name string
		dst  *[]byte
	}{{KeyCert, &f.Cert}, {KeyKey, &f.Key}, {KeyCACert, &f.CA}} {
		if *r.dst, err = os.ReadFile(filepath.Join(dir, r.name)); err != nil { //nolint:gosec // a directory the caller names
			return f, err
		}
	}
	return f, nil
}

// DirClientTLS is ClientTLS of the files in dir (ReadDir), read once.
func DirClientTLS(dir, serverName string) (*tls.Config, error) {
	f, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return ClientTLS(f.Cert, f.Key, f.CA, serverName)
}

// FilesTLS builds a client tls.Config that reads the client certificate, its key and the CA
// bundle from dir (tls.crt, tls.key, ca.crt, as a mounted Secret lays them out) on every
// handshake, so that a renewed certificate or a rotated CA reaches new connections as soon as
// the kubelet updates the mount. changed, when not nil, is called with the files' contents
// whenever they differ from the last handshake's.
func FilesTLS(dir, serverName string, changed func(caPEM, certPEM []byte)) (*tls.Config, error) {
	var mu sync.Mutex
	var last Files
	read := func() (Files, *x509.CertPool, error) {
		f, err := ReadDir(dir)
		if err != nil {
			return f, nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(f.CA) {
			return f, nil, fmt.Errorf("%s holds no certificate", filepath.Join(dir, KeyCACert))
		}
		mu.Lock()
		if changed != nil && (!bytes.Equal(f.CA, last.CA) || !bytes.Equal(f.Cert, last.Cert)) && last.CA != nil {
			changed(f.CA, f.Cert)
		}
		last = f
		mu.Unlock()
		return f, pool, nil
	}
	if _, _, err := read(); err != nil {
		return nil, err
	}
	return &tls.Config{
		ServerName:         serverName,
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection below does the verification, with the CA read at the handshake.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			// The kubelet swaps the files of a mounted Secret at once (a symlink), but a read
			// may straddle the swap: a pair that does not match is read again.
			var err error
			for range 3 {
				var f Files
				if f, _, err = read(); err == nil {
					var pair tls.Certificate
					if pair, err = tls.X509KeyPair(f.Cert, f.Key); err == nil {
						return &pair, nil
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			return nil, err
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, pool, err := read()
			if err != nil {
				return err
			}
			return VerifyServer(cs, pool, serverName)
		},
	}, nil
}
