package render

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process and its exited children used.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}

// reportCPU reports the CPU time per iteration since start, the render
// children's included (they are drained, so that their usage is counted).
func reportCPU(b *testing.B, start time.Duration) {
	children.drain()
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// CPUTime and ReportCPU are cpuTime and reportCPU for the external tests.
var (
	CPUTime   = cpuTime
	ReportCPU = reportCPU
)
