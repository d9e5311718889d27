package server

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

var testSecret = NewSecret([]byte("webhook-secret-canary-7f3a"))

// badSignatures are the signature headers a sender without the secret (or a
// lenient one) might present over body; each must be refused.
func badSignatures(body []byte) []struct {
	name, header string
	want         error
} {
	good := Sign(testSecret, body)
	digest := good[len("sha256="):]
	mac1 := hmac.New(sha1.New, testSecret.Reveal())
	mac1.Write(body)
	mac512 := hmac.New(sha512.New, testSecret.Reveal())
	mac512.Write(body)
	other := Sign(NewSecret([]byte("another secret")), body)
	flipped := []byte(digest)
	if flipped[0] == '0' {
		flipped[0] = '1'
	} else {
		flipped[0] = '0'
	}
	plain := sha256.Sum256(body)
	return []struct {
		name, header string
		want         error
	}{
		{"missing", "", ErrNoSignature}, // no header at all
		{"sha1 prefix with a valid sha1 HMAC", "sha1=" + hex.EncodeToString(mac1.Sum(nil)), ErrSignatureScheme},         // SHA-1 is never accepted
		{"sha512 prefix with a valid sha512 HMAC", "sha512=" + hex.EncodeToString(mac512.Sum(nil)), ErrSignatureScheme}, // the prefix does not choose the hash
		{"sha1 prefix carrying the right sha256 digest", "sha1=" + digest, ErrSignatureScheme},                          // only sha256= is read
		{"upper-case prefix", "SHA256=" + digest, ErrSignatureScheme},                                                   // the prefix is exact
		{"digest without prefix", digest, ErrSignatureScheme},                                                           // bare hex is not the format
		{"prefix only", "sha256=", ErrSignatureEncoding},                                                                // empty digest
		{"truncated", "sha256=" + digest[:63], ErrSignatureEncoding},                                                    // 63 characters
		{"truncated to half", "sha256=" + digest[:32], ErrSignatureEncoding},                                            // a prefix of the digest is not the digest
		{"one character too many", good + "0", ErrSignatureEncoding},                                                    // 65 characters
		{"non-hex", "sha256=" + strings.Repeat("zz", 32), ErrSignatureEncoding},                                         // 64 characters but not hex
		{"trailing space", good + " ", ErrSignatureEncoding},                                                            // no trimming
		{"leading space", " " + good, ErrSignatureScheme},                                                               // no trimming
		{"wrong secret", other, ErrSignatureMismatch},                                                                   // a well-formed HMAC under another key
		{"one digit flipped", "sha256=" + string(flipped), ErrSignatureMismatch},                                        // constant-time compare still refuses
		{"plain sha256 of the body", "sha256=" + hex.EncodeToString(plain[:]), ErrSignatureMismatch},                    // a hash is not an HMAC
		{"zeros", "sha256=" + strings.Repeat("0", 64), ErrSignatureMismatch},                                            // all-zero digest
	}
}

func TestVerifySignature(t *testing.T) {
	body := []byte(`{"zen":"Keep it logically awesome."}`)
	if err := VerifySignature(testSecret, body, Sign(testSecret, body)); err != nil {
		t.Fatalf("good signature refused: %v", err)
	}
	// GitHub sends lower-case hex; upper-case digits decode to the same bytes.
	upper := "sha256=" + strings.ToUpper(Sign(testSecret, body)[len("sha256="):])
	if err := VerifySignature(testSecret, body, upper); err != nil {
		t.Errorf("upper-case hex digest refused: %v", err)
	}
	for _, tc := range badSignatures(body) {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifySignature(testSecret, body, tc.header)
			if !errors.Is(err, tc.want) {
				t.Fatalf("VerifySignature(%q) = %v, want %v", tc.header, err, tc.want)
			}
		})
	}
}

func TestVerifySignatureWithoutSecretRefusesEverything(t *testing.T) {
	// go-github's ValidatePayload accepts an unsigned body when the secret
	// is empty too; here an empty secret refuses even a "matching" header.
	body := []byte(`{}`)
	empty := NewSecret(nil)
	for _, header := range []string{"", Sign(empty, body), Sign(testSecret, body)} {
		if err := VerifySignature(empty, body, header); !errors.Is(err, ErrNoSecret) {
			t.Errorf("empty secret, header %q: got %v, want ErrNoSecret", header, err)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := NewSecret([]byte("canary-value"))
	text, _ := s.MarshalText()
	for _, got := range []string{s.String(), s.GoString(), string(text), s.LogValue().String()} {
		if strings.Contains(got, "canary") {
			t.Errorf("secret revealed: %q", got)
		}
	}
}

func TestTokenEqual(t *testing.T) {
	want := NewSecret([]byte("token-1"))
	for _, tc := range []struct {
		name string
		got  string
		ok   bool
	}{
		{"same", "token-1", true},       // the configured token
		{"different", "token-2", false}, // same length, one byte off
		{"prefix", "token-", false},     // a prefix is not the token
		{"longer", "token-12", false},   // an extension is not the token
		{"empty", "", false},            // nothing presented
	} {
		if got := tokenEqual(want, tc.got); got != tc.ok {
			t.Errorf("%s: tokenEqual = %v, want %v", tc.name, got, tc.ok)
		}
	}
	if tokenEqual(NewSecret(nil), "") {
		t.Error("an empty configured token matched an empty one")
	}
}
