// Package yamlnode reads hand-written YAML: the one document splitter every
// reader shares (so that the editor, the planner and the observation parser
// count the same documents), the one value-path syntax (Helm's --set
// spelling, for values paths and Kubernetes field paths alike, with kyaml's
// `[key=value]` list selector where the values editor reads it) and the one
// walk of a path through a decoded tree, strict node-level reading of one
// document whose root is a mapping, a walk bounded against alias bombs,
// and a reflective decoder that names every wrong place by its dotted path.
//
// It is the leaf of the project: it imports no other backflow package and
// must not know any of their types. What a key means, which keys are
// required and which values are valid stay with each reader.
package yamlnode
