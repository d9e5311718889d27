package repoconfig

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestREADMEDocumentsEveryKey keeps the key table of config/README.md in
// step with the types: every key of the schema must have a row whose first cell is its
// path (`units[].name`, `environments.<name>.clusters`).
func TestREADMEDocumentsEveryKey(t *testing.T) {
	readme, err := os.ReadFile("../../config/README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	cell := regexp.MustCompile("^\\| `([^`]+)`")
	for _, line := range strings.Split(string(readme), "\n") {
		if m := cell.FindStringSubmatch(line); m != nil {
			rows[regexp.MustCompile(`<[a-z]+>`).ReplaceAllString(m[1], "<*>")] = true
		}
	}
	raw, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	var leaves []string
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		items, _ := s["items"].(map[string]any)
		extra, _ := s["additionalProperties"].(map[string]any)
		switch {
		case props != nil:
			for name, p := range props {
				walk(strings.TrimPrefix(path+"."+name, "."), p.(map[string]any))
			}
		case items != nil && items["properties"] != nil:
			walk(path+"[]", items)
		case extra != nil && (extra["properties"] != nil || extra["type"] == "string"):
			walk(path+".<*>", extra)
		default:
			leaves = append(leaves, path)
		}
	}
	walk("", root)
	sort.Strings(leaves)
	for _, l := range leaves {
		if !rows[l] {
			t.Errorf("why: every key is documented in config/README.md: no row for `%s`", l)
		}
	}
	if len(leaves) < 30 {
		t.Errorf("only %d keys found; the walk is broken: %v", len(leaves), leaves)
	}
}
