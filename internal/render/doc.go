// Package render renders Helm charts with the Helm SDK: it loads a chart
// from its files (a folder of the repository, with its dependencies under
// charts/ or fetched as its Chart.lock pins them) or fetches it from a chart
// repository or an OCI registry (bounded in bytes and time, cached on disk
// by digest), renders it with a unit's values files as a GitOps controller
// would, and returns the rendered objects for the witness to compare. Each
// rendering runs in a child process, the binary itself started again (see
// ChildMain), bounded in time, memory and output, and renders its values
// twice, so that a chart whose rendering depends on chance is refused.
//
// It must not decide anything: whether a rendering witnesses a write-back is
// the witness package's and the planner's. The planner does not import this
// package; it reaches it through witness.Renderer.
package render
