package observe

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// cub-scout writes field paths as dotted keys with [N] indexes and escapes
// nothing, so a key with dots in it (every app.kubernetes.io/... label) is
// spelt like several keys. backflow spells every field path one way, Helm's
// --set syntax with `\` escapes (metadata.labels.app\.kubernetes\.io/name);
// canonicalFieldPath converts.
//
// The rule: the key that follows a Kubernetes map of strings is one key,
// whatever it contains. Those maps hold only scalars, so once the path
// reaches one, the rest of it is the key. They are metadata.labels and
// metadata.annotations (at any depth: a pod template's too),
// matchLabels and nodeSelector (at any depth), resources.limits and
// resources.requests (nvidia.com/gpu), a Service's spec.selector, a
// ConfigMap's or Secret's data, binaryData and stringData, and a
// StorageClass's parameters. Anywhere else a dot separates keys.

// canonicalFieldPath converts a cub-scout field path of an object of kind
// into backflow's spelling.
func canonicalFieldPath(kind, raw string) (string, error) {
	p, _, err := cubFieldPath(kind, raw)
	return p, err
}

// scalarMap is the kind of Kubernetes map of scalars a field is a key of.
type scalarMap int

const (
	// notInScalarMap: the field is not a key of such a map.
	notInScalarMap scalarMap = iota
	// inStringMap: a key of a map of strings (labels, annotations, a
	// ConfigMap's data...): its value is a string, whatever its text.
	inStringMap
	// inQuantityMap: a key of resources.limits or resources.requests,
	// whose values are quantities, written as a string or a number.
	inQuantityMap
)

// cubFieldPath is canonicalFieldPath, also saying which map of scalars, if
// any, the field is a key of: the kind's schema fixes its value's type.
func cubFieldPath(kind, raw string) (string, scalarMap, error) {
	if raw == "$" {
		// The whole object: cub-scout's path for a root-level mismatch.
		return raw, notInScalarMap, nil
	}
	if strings.TrimSpace(raw) != raw || raw == "" {
		return "", notInScalarMap, fmt.Errorf("field path %q: empty or padded with spaces", raw)
	}
	var segs []yamlnode.Segment
	under := notInScalarMap
	i := 0
	for i < len(raw) {
		if under = scalarMapAt(kind, segs); under != notInScalarMap {
			// The rest is the key of a map of scalars.
			segs = append(segs, yamlnode.Segment{Key: raw[i:]})
			break
		}
		switch raw[i] {
		case '[':
			end := strings.IndexByte(raw[i:], ']')
			if end < 0 {
				return "", notInScalarMap, fmt.Errorf("field path %q: unclosed [", raw)
			}
			n, err := strconv.Atoi(raw[i+1 : i+end])
			if err != nil || n < 0 || strings.ContainsAny(raw[i+1:i+end], "+-") {
				return "", notInScalarMap, fmt.Errorf("field path %q: list index must be digits", raw)
			}
			segs = append(segs, yamlnode.Segment{Index: n, IsIndex: true})
			i += end + 1
			if i < len(raw) && raw[i] == '.' {
				i++
				if i == len(raw) {
					return "", notInScalarMap, fmt.Errorf("field path %q: empty last segment", raw)
				}
			}
			continue
		}
		end := strings.IndexAny(raw[i:], ".[")
		key := raw[i:]
		if end >= 0 {
			key = raw[i : i+end]
		}
		if key == "" {
			return "", notInScalarMap, fmt.Errorf("field path %q: empty segment", raw)
		}
		segs = append(segs, yamlnode.Segment{Key: key})
		i += len(key)
		if i < len(raw) && raw[i] == '.' {
			i++
			if i == len(raw) {
				return "", notInScalarMap, fmt.Errorf("field path %q: empty last segment", raw)
			}
		}
	}
	return yamlnode.FormatPath(segs), under, nil
}

// scalarMapAt says whether the path so far (segs) names a Kubernetes map
// of scalars in an object of kind, so that what follows is one key, and
// which: a map of strings, or of quantities.
func scalarMapAt(kind string, segs []yamlnode.Segment) scalarMap {
	n := len(segs)
	if n == 0 || segs[n-1].IsIndex {
		return notInScalarMap
	}
	last := segs[n-1].Key
	parent := ""
	if n >= 2 && !segs[n-2].IsIndex {
		parent = segs[n-2].Key
	}
	is := func(yes bool, m scalarMap) scalarMap {
		if yes {
			return m
		}
		return notInScalarMap
	}
	switch last {
	case "labels", "annotations":
		return is(parent == "metadata", inStringMap)
	case "matchLabels", "nodeSelector":
		return inStringMap
	case "limits", "requests":
		return is(parent == "resources", inQuantityMap)
	case "selector":
		return is(n == 2 && parent == "spec" && (kind == "Service" || kind == "ReplicationController"), inStringMap)
	case "data", "binaryData", "stringData":
		return is(n == 1 && (kind == "ConfigMap" || kind == "Secret"), inStringMap)
	case "parameters":
		return is(n == 1 && kind == "StorageClass", inStringMap)
	}
	return notInScalarMap
}

// listFields are Kubernetes fields that hold lists. For a list whose length
// differs, cub-scout names the list and reports the two lengths as its
// values ("1" and "2"): on these fields two counts are structure.
var listFields = map[string]bool{
	"containers": true, "initContainers": true, "ephemeralContainers": true,
	"env": true, "envFrom": true, "ports": true, "volumeMounts": true,
	"volumeDevices": true, "volumes": true, "args": true, "command": true,
	"tolerations": true, "imagePullSecrets": true, "hostAliases": true,
	"topologySpreadConstraints": true, "volumeClaimTemplates": true,
	"readinessGates": true, "resourceClaims": true, "finalizers": true,
	"ownerReferences": true, "matchExpressions": true, "rules": true,
	"tls": true, "subjects": true, "paths": true, "hosts": true,
	"ingress": true, "egress": true, "accessModes": true, "items": true,
	"add": true, "drop": true, "nameservers": true, "searches": true,
	"options": true, "sources": true, "externalIPs": true, "clusterIPs": true,
	"ipFamilies": true, "loadBalancerSourceRanges": true, "webhooks": true,
	"verbs": true, "apiGroups": true, "resources": true, "resourceNames": true,
	"nonResourceURLs": true, "podCIDRs": true, "taints": true, "conditions": true,
}

// cubStructure says why a cub-scout difference is structure and not a
// value, or "" when it is a value: a map or list printed with Go's %v, the
// whole object ($), or two counts on a list field. A key of a map of
// scalars (under) holds a scalar whatever its text: `map[a:c]` in a
// ConfigMap's data is that string.
func cubStructure(path, desired, live string, under scalarMap) string {
	if path == "$" {
		return "the whole object differs (cub-scout's $: a type mismatch at the root)"
	}
	if under != notInScalarMap {
		return ""
	}
	for _, v := range []struct{ side, s string }{{"desired", desired}, {"live", live}} {
		if goRendering(v.s) {
			return fmt.Sprintf("%s is a map or list printed as text (%s), not a value", v.side, clip(v.s))
		}
	}
	if isCount(desired) && isCount(live) && listFields[lastKey(path)] {
		return fmt.Sprintf(
			"a list whose length differs: cub-scout reports the lengths, %s desired and %s live, not a value",
			desired,
			live,
		)
	}
	return ""
}

// goRendering reports Go's %v text of a map (map[k:v]) or a slice ([a b]).
func goRendering(s string) bool {
	return strings.HasPrefix(s, "map[") && strings.HasSuffix(s, "]") ||
		strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")
}

func isCount(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// lastKey is the last key of a dotted path, ignoring a trailing index.
func lastKey(path string) string {
	path = strings.TrimRight(path, "]0123456789[")
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
