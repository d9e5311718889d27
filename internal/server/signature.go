package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strings"
)

// signaturePrefix is the only scheme accepted: GitHub's X-Hub-Signature-256.
const signaturePrefix = "sha256="

// Reasons a signature is refused. They name the problem, never the secret or
// the expected value.
var (
	ErrNoSignature       = errors.New("signature missing")
	ErrSignatureScheme   = errors.New("signature scheme is not sha256=")
	ErrSignatureEncoding = errors.New("signature is not 64 hexadecimal characters")
	ErrSignatureMismatch = errors.New("signature does not match the body")
	ErrNoSecret          = errors.New("no secret configured")
)

// VerifySignature checks an X-Hub-Signature-256 value over body with secret:
// "sha256=" followed by exactly 64 hexadecimal characters, compared in
// constant time with HMAC-SHA256(secret, body).
//
// It is stricter than go-github's ValidatePayload on purpose: that function
// falls back to SHA-1, takes the hash from the signature's own prefix, and
// accepts anything when secret and signature are both empty. Here an empty
// secret refuses everything, and no other prefix is read.
func VerifySignature(secret Secret, body []byte, header string) error {
	if secret.Empty() {
		return ErrNoSecret
	}
	if header == "" {
		return ErrNoSignature
	}
	if !strings.HasPrefix(header, signaturePrefix) {
		return ErrSignatureScheme
	}
	digest := header[len(signaturePrefix):]
	if len(digest) != 2*sha256.Size {
		return ErrSignatureEncoding
	}
	got, err := hex.DecodeString(digest)
	if err != nil {
		return ErrSignatureEncoding
	}
	mac := hmac.New(sha256.New, secret.Reveal())
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return ErrSignatureMismatch
	}
	return nil
}

// Sign returns the X-Hub-Signature-256 value of body under secret, for
// senders and tests.
func Sign(secret Secret, body []byte) string {
	mac := hmac.New(sha256.New, secret.Reveal())
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// tokenEqual compares a presented bearer token with the configured one in
// time that depends neither on where they differ nor on their lengths (both
// are hashed first). An empty configured token matches nothing.
func tokenEqual(want Secret, got string) bool {
	if want.Empty() || got == "" {
		return false
	}
	a, b := sha256.Sum256(want.Reveal()), sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
