// Package repoconfig reads and checks a GitOps repository's
// `.github/backflow.yaml`: which policy governs the repository, which
// clusters make up each environment, which values files render each unit's
// objects, who holds which role, and how write-backs are proposed. It answers
// the questions the planner asks of that file (the environment of a cluster,
// the unit that renders an object, the roles of an actor) with the defaults
// applied.
//
// It must not know about GitHub or git, and it decides nothing about a
// change: that is the policy's and the planner's work.
package repoconfig
