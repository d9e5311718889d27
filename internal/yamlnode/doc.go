// Package yamlnode reads hand-written YAML strictly at the node level: one
// document whose root is a mapping, a walk bounded against alias bombs, and
// a reflective decoder that names every wrong place by its dotted path.
//
// It is shared by the readers of backflow's own files (policy, receipt,
// repository and bot config, observations) so that they refuse the same
// inputs with the same words. It must not know any of their types: what a
// key means, which keys are required and which values are valid stay with
// each reader.
package yamlnode
