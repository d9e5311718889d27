package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate named cn and its key into dir.
func selfSigned(t *testing.T, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestAdmissionTLSRefuses(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir, "a")
	cases := []struct {
		why  string
		cfg  AdmissionTLS
		want string
	}{
		{"no certificate: the webhook is TLS only", AdmissionTLS{}, "certFile and keyFile are required"},
		{"a missing key file is named", AdmissionTLS{CertFile: cert, KeyFile: filepath.Join(dir, "nope")}, "nope"},
		{"a client CA file without a certificate", AdmissionTLS{CertFile: cert, KeyFile: key, ClientCAFile: key}, "no PEM certificate"},
	}
	for _, c := range cases {
		if _, err := c.cfg.Config(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.why, err, c.want)
		}
	}
}

func TestAdmissionTLSReloadsRenewedCertificate(t *testing.T) {
	// why: cert-manager renews the Secret in place; the listener serves the
	// new certificate without a restart.
	dir := t.TempDir()
	cert, key := selfSigned(t, dir, "first")
	now := time.Unix(1000, 0)
	cfg, err := AdmissionTLS{CertFile: cert, KeyFile: key, Now: func() time.Time { return now }}.Config()
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		c, err := cfg.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(c.Certificate[0])
		return leaf.Subject.CommonName
	}
	selfSigned(t, dir, "renewed")
	later := time.Now().Add(time.Minute)
	_ = os.Chtimes(cert, later, later)
	if got := served(); got != "first" {
		t.Errorf("before the check interval: %s", got)
	}
	now = now.Add(certReloadEvery)
	if got := served(); got != "renewed" {
		t.Errorf("after the check interval: %s, want renewed", got)
	}
}
