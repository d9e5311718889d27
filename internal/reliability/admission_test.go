package reliability

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// pki is a CA and the certificates it signed, for one test.
type pki struct {
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	caPEM []byte
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &pki{ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf certificate valid from notBefore to notAfter.
func (p *pki) issue(t *testing.T, usage x509.ExtKeyUsage, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: notBefore, NotAfter: notAfter, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// leaf is issue as a key pair.
func (p *pki) leaf(t *testing.T, usage x509.ExtKeyUsage, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(p.issue(t, usage, notBefore, notAfter))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// admissionBody is a well-formed review of a scale by alice.
func admissionBody(uid string) []byte {
	scale := func(n int) string {
		return fmt.Sprintf(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"redis-replicas","namespace":"redis","uid":"sts-uid","resourceVersion":"204"},"spec":{"replicas":%d}}`, n)
	}
	return []byte(fmt.Sprintf(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":%q,`+
		`"resource":{"group":"apps","version":"v1","resource":"statefulsets"},"subResource":"scale","name":"redis-replicas","namespace":"redis",`+
		`"operation":"UPDATE","userInfo":{"username":"alice","groups":["sre"]},"object":%s,"oldObject":%s,"dryRun":false}}`, uid, scale(4), scale(3)))
}

// hostileReview is one way a request to the webhook can be bad.
type hostileReview struct {
	name string
	// client is the TLS client material; nil sends no certificate.
	client func() []tls.Certificate
	// plain sends HTTP without TLS to the TLS port.
	plain bool
	body  func(i int) []byte
	// reaches says the request gets through TLS to the handler.
	reaches bool
	// uid is the uid the answer must echo, when the body carries one.
	uid func(i int) string
}

// Case 19: 1,000 requests to POST /admission with bad or missing TLS client
// material, oversized bodies or malformed JSON change nothing (no record is
// kept) and never block the API server: every answer that reaches the
// handler is HTTP 200 with allowed: true (the request uid echoed where the
// body has one), and the others never reach it (the TLS handshake fails).
// A well-formed review over good client material is the control: it is
// kept.
func TestCase19AdmissionHostileInput(t *testing.T) {
	stranger := newPKI(t, "another CA")
	now := time.Now()
	const maxBytes = 64 << 10
	log := &observe.AdmissionLog{}
	l := startAdmissionListener(t, &source.AdmissionHandler{Log: log, MaxBytes: maxBytes}, true)
	serving, clients, url := l.serving, l.clients, l.url

	good := clients.leaf(t, x509.ExtKeyUsageClientAuth, now.Add(-time.Hour), now.Add(time.Hour))
	expired := clients.leaf(t, x509.ExtKeyUsageClientAuth, now.Add(-2*time.Hour), now.Add(-time.Hour))
	foreign := stranger.leaf(t, x509.ExtKeyUsageClientAuth, now.Add(-time.Hour), now.Add(time.Hour))
	serverOnly := clients.leaf(t, x509.ExtKeyUsageServerAuth, now.Add(-time.Hour), now.Add(time.Hour))
	valid := admissionBody
	certs := func(c tls.Certificate) func() []tls.Certificate {
		return func() []tls.Certificate { return []tls.Certificate{c} }
	}
	uidOf := func(i int) string { return fmt.Sprintf("uid-%d", i) }
	cases := []hostileReview{
		{name: "no client certificate", body: func(i int) []byte { return valid(uidOf(i)) }},
		{name: "expired client certificate", client: certs(expired), body: func(i int) []byte { return valid(uidOf(i)) }},
		{name: "client certificate of another CA", client: certs(foreign), body: func(i int) []byte { return valid(uidOf(i)) }},
		{name: "server certificate as a client's", client: certs(serverOnly), body: func(i int) []byte { return valid(uidOf(i)) }},
		{name: "plain HTTP to the TLS port", plain: true, body: func(i int) []byte { return valid(uidOf(i)) }},
		{name: "oversized body", client: certs(good), reaches: true, body: func(i int) []byte {
			return append(valid(uidOf(i))[:0:0], bytes.Repeat([]byte(" "), maxBytes+1)...)
		}},
		{name: "oversized review", client: certs(good), reaches: true, body: func(i int) []byte {
			b := valid(uidOf(i))
			return append(b[:len(b)-2], []byte(`,"pad":"`+strings.Repeat("x", maxBytes)+`"}}`)...)
		}},
		{name: "truncated JSON", client: certs(good), reaches: true, body: func(i int) []byte { b := valid(uidOf(i)); return b[:len(b)/2] }},
		{name: "not JSON", client: certs(good), reaches: true, body: func(int) []byte { return []byte("apiVersion: admission.k8s.io/v1\n") }},
		{name: "empty body", client: certs(good), reaches: true, body: func(int) []byte { return nil }},
		{name: "deeply nested", client: certs(good), reaches: true, body: func(int) []byte {
			return []byte(strings.Repeat("[", 20000) + strings.Repeat("]", 20000))
		}},
		{name: "another kind", client: certs(good), reaches: true, uid: uidOf, body: func(i int) []byte {
			return bytes.Replace(valid(uidOf(i)), []byte(`"kind":"AdmissionReview"`), []byte(`"kind":"EventList"`), 1)
		}},
		{name: "object not a mapping", client: certs(good), reaches: true, uid: uidOf, body: func(i int) []byte {
			return bytes.Replace(valid(uidOf(i)), []byte(`"object":{`), []byte(`"object":7,"x":{`), 1)
		}},
		{name: "objects of different uids", client: certs(good), reaches: true, uid: uidOf, body: func(i int) []byte {
			return bytes.Replace(valid(uidOf(i)), []byte(`"uid":"sts-uid"`), []byte(`"uid":"other"`), 1)
		}},
		{name: "invalid UTF-8", client: certs(good), reaches: true, body: func(i int) []byte {
			return append([]byte{0xff, 0xfe}, valid(uidOf(i))...)
		}},
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serving.caPEM)
	clientsFor := map[string]*http.Client{}
	client := func(c hostileReview) *http.Client {
		if cl, ok := clientsFor[c.name]; ok {
			return cl
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}
		if c.client != nil {
			tr.TLSClientConfig.Certificates = c.client()
		}
		cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		clientsFor[c.name] = cl
		return cl
	}
	n := 1000
	reached, refused := 0, 0
	var slowest time.Duration
	for i := range n {
		c := cases[i%len(cases)]
		target := url
		if c.plain {
			target = "http://" + l.addr + "/admission"
		}
		start := time.Now()
		resp, err := client(c).Post(target, "application/json", bytes.NewReader(c.body(i)))
		took := time.Since(start)
		if !c.reaches {
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"allowed"`)) {
					t.Fatalf("%s: reached the handler: %s", c.name, body)
				}
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		reached++
		slowest = max(slowest, took)
		var answer struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Response   struct {
				UID     string `json:"uid"`
				Allowed bool   `json:"allowed"`
			} `json:"response"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !answer.Response.Allowed || answer.Kind != "AdmissionReview" {
			t.Fatalf("%s: status %d, answer %+v (%v): want 200 and allowed: true", c.name, resp.StatusCode, answer, err)
		}
		if c.uid != nil && answer.Response.UID != c.uid(i) {
			t.Errorf("%s: answer uid %q, want %q", c.name, answer.Response.UID, c.uid(i))
		}
	}
	if st := log.Stats(); st.Pending != 0 || st.Confirmed != 0 {
		t.Errorf("hostile requests left records: %+v", st)
	}
	// The control: a well-formed review over good client material is kept.
	resp, err := client(hostileReview{name: "control", client: certs(good)}).Post(url, "application/json", bytes.NewReader(valid("control")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := log.Stats(); st.Pending != 1 {
		t.Errorf("the control review was not kept: %+v", st)
	}
	report(t, "19", "admission-hostile-input", "requests", n, "refused_in_tls", refused, "answered_allowed", reached,
		"records_kept", 0, "slowest_answer_ms", float64(slowest.Microseconds())/1000)
}
