//go:build linux

package render

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
)

// addressHeadroom is the address space a child may map beyond its memory
// budget: goroutine and thread stacks, the collector's metadata, the
// rounding of the heap's arenas.
const addressHeadroom = 256 << 20

// limitProcess limits the child: the collector's soft limit at the budget,
// a hard limit on its address space (RLIMIT_AS) at what it has mapped now
// plus the budget and the headroom, so that an allocation past it fails
// and the child dies with "out of memory" rather than the machine's memory
// running out, and the kernel's out-of-memory killer told to pick it first.
// Passing its CPU limit (set per rendering, limitCPU) ends it.
func limitProcess(budget int64) error {
	debug.SetMemoryLimit(budget)
	mapped, err := addressSpace()
	if err != nil {
		return err
	}
	limit := uint64(mapped) + uint64(budget) + addressHeadroom
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return fmt.Errorf("RLIMIT_AS: %w", err)
	}
	// Best effort: without it the cgroup's killer may pick the parent.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGXCPU)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "render child: CPU limit exceeded")
		os.Exit(exitCPU)
	}()
	return nil
}

// addressSpace is the bytes of address space the process has mapped.
func addressSpace() (int64, error) {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	pages, err := strconv.ParseInt(string(bytes.Fields(statm)[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// limitCPU sets the soft CPU limit (RLIMIT_CPU) to the CPU time used so far
// plus twice the rendering's timeout on each processor the child may run
// on, and a second: a rendering that spins past it gets SIGXCPU and the
// child exits, even when its parent has stopped waiting. The limit is a
// backstop for a child nobody waits for, so the parent's wall-clock
// deadline must come first: a process's Go code runs on at most its
// processors per second of wall time (the collector's workers beside the
// template), but the kernel also counts the time its threads spend outside
// them (page faults, returning memory under the memory limit), hence the
// factor of two.
func limitCPU(timeout time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CPU, &lim) != nil {
		return
	}
	budget := 2 * timeout * time.Duration(runtime.GOMAXPROCS(0))
	lim.Cur = min(uint64(math.Ceil((used+budget).Seconds()))+1, lim.Max)
	_ = syscall.Setrlimit(syscall.RLIMIT_CPU, &lim)
}

// childAttr starts a child in its own process group, killed when its
// parent dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killChild kills the child's whole process group.
func killChild(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
