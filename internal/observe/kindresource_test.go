package observe

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestKindResourceGuessesAsKubernetes holds kindResource to the guess
// apimachinery makes, which the API server's audit log agrees with for
// the built-in kinds.
func TestKindResourceGuessesAsKubernetes(t *testing.T) {
	for _, kind := range []string{
		"", "StatefulSet", "Deployment", "Endpoints", "EndpointSlice", "Ingress", "NetworkPolicy",
		"PodSecurityPolicy", "Status", "Gateway", "HelmRelease", "Application", "ConfigMap", "Kustomization",
		"IngressClass", "Proxy", "Bus", "CustomEndpoints", "Y", "S",
	} {
		want, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: kind})
		if got := kindResource(kind); got != want.Resource {
			t.Errorf("kindResource(%q) = %q, apimachinery guesses %q", kind, got, want.Resource)
		}
	}
}
