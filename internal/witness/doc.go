// Package witness is the render witness's pure half: what a chart rendering
// is (the rendered objects and how they were made), the field-by-field diff
// of two renderings, and the check that a write-back's rendering changes
// exactly the accepted fields to exactly the observed values.
//
// It must not know Helm, read files, or touch the network: rendering is the
// render package's, reached through the Renderer interface, so the planner
// can ask for a witness and stay pure.
package witness
