package observe

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// cub-scout has JSON outputs that are not observations: inventories,
// ownership and import proposals. Fed to backflow by mistake (the released
// v0.4.0 has none of the outputs backflow reads), each is named as what it
// is, not reported as a malformed observation. The shapes are cub-scout
// v0.4.0's (cmd/cub-scout/snapshot.go, map.go, import.go, tree.go, trace.go).

// cubReads names the cub-scout outputs backflow reads, for messages.
const cubReads = "backflow reads cub-scout's trace --diff --format json, watch events (--output-file or --webhook) " +
	"and in-toto receipts"

// cubOtherOutput names the cub-scout command whose output m looks like,
// or "" when it looks like none of them.
func cubOtherOutput(m *mapping) string {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if !m.has(k) {
				return false
			}
		}
		return true
	}
	switch {
	case has("entries", "summary") && (m.has("generatedAt") || strings.HasPrefix(scalarOf(m, "version"), "gsf/")):
		return "cub-scout snapshot (its GitOps State Format inventory)"
	case has("id", "clusterName", "kind", "name", "owner", "status") && !m.has("spec"):
		return "cub-scout map list --json (an entry of its resource inventory)"
	case has("workloads") && (m.has("namespaces") || m.has("proposal")):
		return "cub-scout import --json (an import proposal)"
	case has("object", "chain") && (m.has("tracedAt") || m.has("fullyManaged")):
		return "cub-scout trace --json (an ownership chain, not a diff: backflow reads trace --diff --format json)"
	case has("gitRepositories", "argoApplications"):
		return "cub-scout tree git --json"
	case has("AppSpace", "Units"):
		return "cub-scout tree suggest --json"
	case has("name", "kind", "owner", "status") && !m.has("apiVersion") && !m.has("spec"):
		return "cub-scout tree --json (an entry of its runtime tree)"
	case len(m.keys) > 0 && allTreeLists(m):
		return "cub-scout tree ownership --json"
	}
	return ""
}

// allTreeLists reports whether every value of m is a list of tree entries
// ({name, kind, owner, ...}): tree ownership's map of owner to entries.
func allTreeLists(m *mapping) bool {
	for _, k := range m.keys {
		v := m.vals[k]
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return false
		}
		item, err := asMapping(v.Content[0], k)
		if err != nil || !item.has("name") || !item.has("kind") || !item.has("owner") {
			return false
		}
	}
	return true
}

// scalarOf is m's scalar value at key, "" when there is none.
func scalarOf(m *mapping, key string) string {
	if v, ok := m.vals[key]; ok && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// otherOutputError is a document of another cub-scout command's output.
// An inventory is a list of many such documents: the first is reported,
// with how many more of it the input held.
type otherOutputError struct {
	command string
	more    int
}

func (e *otherOutputError) Error() string {
	more := ""
	if e.more > 0 {
		more = fmt.Sprintf(" (and %d more documents like it in this input)", e.more)
	}
	return fmt.Sprintf("not an observation: this is the output of %s%s; %s", e.command, more, cubReads)
}
