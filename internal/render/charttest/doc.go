// Package charttest packs chart archives for tests, as helm package lays
// them out: a gzipped tar with every file under the chart's folder. Tests
// of the chart loader, the fetcher and the reliability suite share it.
//
// It must not know the render package or any product package.
package charttest
