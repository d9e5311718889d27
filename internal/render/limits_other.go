//go:build !linux

package render

import (
	"os"
	"runtime/debug"
	"syscall"
	"time"
)

// limitProcess sets the collector's soft limit at the budget: without
// Linux's RLIMIT_AS there is no hard limit, so a rendering that allocates
// past it crashes the child (or is killed at its deadline), never the
// parent.
func limitProcess(budget int64) error {
	debug.SetMemoryLimit(budget)
	return nil
}

// limitCPU does nothing: the parent's deadline bounds a rendering.
func limitCPU(time.Duration) {}

// childAttr is the default: the child is killed by its parent.
func childAttr() *syscall.SysProcAttr { return nil }

// killChild kills the child.
func killChild(p *os.Process) error { return p.Kill() }
