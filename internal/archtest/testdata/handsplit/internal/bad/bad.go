// Package bad splits and joins object keys by hand, for the rule's test:
// each line the rule must find says so, and why, in its comment.
package bad

import "strings"

func parts(key string) []string {
	return strings.Split(key, "|") // found: a key read by splitting it
}

func kind(key string) string {
	_, rest, _ := strings.Cut(key, "|") // found: a segment cut off a key
	return rest
}

func key(apiVersion, kind, namespace, name string) string {
	return strings.Join([]string{apiVersion, kind, namespace, name}, "|") // found: a key printed by joining
}

func indexKey(env, kind, namespace string) string {
	return env + "|" + kind + "|" + namespace // found: an index key concatenated
}

func prefix(group string) string {
	return `|` + group // found: a raw literal concatenated first
}

func suffix(name string) string {
	return name + "|" // found: a literal concatenated last
}

func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`) // a Markdown cell escaped: no key
}

func row(a, b string) string {
	return "| " + a + " | " + b + " |" // a Markdown table row: no key
}

func fields(key string) []string {
	return strings.Split(key, "/") // another separator
}
