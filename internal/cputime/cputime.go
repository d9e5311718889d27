// Package cputime lets a benchmark report the CPU time of an operation
// beside its wall time. On a shared machine the wall time says as much
// about the neighbours as about the code; the process's CPU time (every
// goroutine and the collector included) does not.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Now is the process's user and system CPU time so far.
func Now(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Report adds the CPU time per operation since start (a Now taken before
// the benchmark's loop) to b's results as cpu-ns/op.
func Report(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((Now(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
