// Package archtest holds the test that keeps backflow's dependency arrows
// pointing inward, as the package map in the project's design draws them:
// the core (the observation model, the policy, the receipt, the values
// editor, the repository config, the planner, the lifecycle and the leaf
// yamlnode) links no client of any kind, the bot reaches GitHub only
// through the forge port, the local hub stays independent of the product
// it simulates GitHub for, and so on. It also holds that an object key is
// read and printed only by observe.ObjectKey, never split, joined or
// concatenated at "|" by hand (testdata/handsplit is what that rule must
// find), and that the planner and the lifecycle name no concrete desired
// store, only a unit's store reference and what its reader says of it
// (testdata/storenames). It has no code outside its tests.
//
// It must not be imported by anything.
package archtest
