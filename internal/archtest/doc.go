// Package archtest holds the test that keeps backflow's dependency arrows
// pointing inward, as the package map in the project's design draws them:
// the core (the observation model, the policy, the receipt, the values
// editor, the repository config, the planner, the lifecycle and the leaf
// yamlnode) links no client of any kind, the bot reaches GitHub only
// through the forge port, the local hub stays independent of the product
// it simulates GitHub for, and so on. It has no code outside its test.
//
// It must not be imported by anything.
package archtest
