package render

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backflow-dev/backflow/internal/helmvalues"
)

// The parent's side of the render children (see child.go). A child is
// started on first need and kept, idle, for the next rendering with the
// same memory and output bounds, so that a batch of renderings (a cycle's
// witnesses, a map search) pays for one start; one that stays idle for
// idleTimeout is told to exit. A child that is killed (its deadline, the
// caller's context) or dies (its memory or CPU limit) is replaced by the
// next rendering's.
const (
	// idleTimeout is how long an idle child is kept.
	idleTimeout = 30 * time.Second
	// waitDelay bounds the wait for a killed or closed child's exit.
	waitDelay = 2 * time.Second
	// stderrTail is how much of a child's standard error is kept to tell
	// why it died.
	stderrTail = 8 << 10
)

// children are this process's render children.
var children = &pool{idle: map[childKey][]*child{}, slots: make(chan struct{}, max(2, runtime.NumCPU()))}

// pool keeps idle children by the bounds they were started with; slots
// bounds the children rendering at once (each may take its memory budget).
type pool struct {
	mu    sync.Mutex
	idle  map[childKey][]*child
	slots chan struct{}
	// started counts the children started.
	started atomic.Int64
}

type childKey struct{ memory, output int64 }

// render renders c with vals (the user's values, typed as Helm reads them)
// in a child bounded by opts.Bounds.
func (p *pool) render(ctx context.Context, c *Chart, opts Options, vals map[string]any) (
	map[string]map[string]any, error) {
	if _, ok := os.LookupEnv(childEnv); ok {
		// A render child that does not serve would start children of its
		// own, each running the whole binary again.
		return nil, fmt.Errorf("this process was started as a render child (%s) but does not serve renderings: "+
			"its main must call render.ChildMain first", childEnv)
	}
	values, err := json.Marshal(vals)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.slots }()
	key := childKey{opts.MaxMemory, opts.MaxOutputBytes}
	ch := p.take(key)
	if ch == nil {
		if ch, err = startChild(ctx, key, opts.Timeout); err != nil {
			return nil, err
		}
	}
	req := request{
		V: protocolVersion, Chart: wireChart{Key: chartKey(c), Name: c.Name, Version: c.Version, Digest: c.Digest},
		Release: opts.Release, Namespace: opts.Namespace, KubeVersion: opts.KubeVersion, Values: values,
		TimeoutMillis: opts.Timeout.Milliseconds(), MaxOutputBytes: opts.MaxOutputBytes, MaxObjects: opts.MaxObjects,
	}
	rep, err := ch.do(ctx, c, req, opts.Bounds)
	if err != nil {
		return nil, err
	}
	p.put(key, ch)
	if rep.Error != nil {
		return nil, rep.Error.err()
	}
	if rep.Objects == nil {
		rep.Objects = map[string]map[string]any{}
	}
	return rep.Objects, nil
}

// take returns an idle child started with key's bounds, or nil; one that
// ended while idle (killed by the system) is dropped.
func (p *pool) take(key childKey) *child {
	p.mu.Lock()
	defer p.mu.Unlock()
	for list := p.idle[key]; len(list) > 0; list = p.idle[key] {
		ch := list[len(list)-1]
		p.idle[key] = list[:len(list)-1]
		ch.idle.Stop()
		select {
		case <-ch.exited:
			ch.stdin.Close()
		default:
			return ch
		}
	}
	return nil
}

// put keeps ch idle until it is taken or idleTimeout passes.
func (p *pool) put(key childKey, ch *child) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle[key] = append(p.idle[key], ch)
	ch.idle = time.AfterFunc(idleTimeout, func() {
		p.mu.Lock()
		list := p.idle[key]
		i := slices.Index(list, ch)
		if i >= 0 {
			p.idle[key] = append(list[:i:i], list[i+1:]...)
		}
		p.mu.Unlock()
		if i >= 0 {
			ch.close()
		}
	})
}

// drain closes every idle child and waits for it to exit, so that its
// resource usage is counted as the process's children's.
func (p *pool) drain() {
	p.mu.Lock()
	var all []*child
	for key, list := range p.idle {
		all = append(all, list...)
		delete(p.idle, key)
	}
	p.mu.Unlock()
	for _, ch := range all {
		ch.idle.Stop()
		ch.close()
		<-ch.exited
	}
}

// chartKey identifies a chart's files and identity, which a child keeps.
func chartKey(c *Chart) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.Name, c.Version, c.Digest)
	for _, f := range c.files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// child is one render child.
type child struct {
	cmd   *exec.Cmd
	stdin *os.File
	// lines are the child's reply lines; closed when its output ends.
	lines  chan []byte
	exited chan struct{}
	stderr *tail
	// charts are the keys of the charts sent to it.
	charts map[string]bool
	idle   *time.Timer
	// tooLong is set before the child is killed for a reply line longer
	// than its bound.
	tooLong atomic.Bool
}

// startChild starts a child with key's bounds and waits, at most timeout,
// for it to say it is ready.
func startChild(ctx context.Context, key childKey, timeout time.Duration) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting the render process: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting the render process: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("starting the render process: %w", err)
	}
	children.started.Add(1)
	ch := &child{stdin: inW, lines: make(chan []byte), exited: make(chan struct{}), stderr: &tail{},
		charts: map[string]bool{}}
	ch.cmd = exec.Command(exe)
	ch.cmd.Env = append(os.Environ(), childEnv+"="+strconv.FormatInt(key.memory, 10))
	ch.cmd.Stdin, ch.cmd.Stdout, ch.cmd.Stderr = inR, outW, ch.stderr
	ch.cmd.SysProcAttr = childAttr()
	ch.cmd.WaitDelay = waitDelay
	err = ch.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting the render process %s: %w", exe, err)
	}
	go func() {
		_ = ch.cmd.Wait()
		close(ch.exited)
	}()
	go ch.read(outR, replyLimit(key.output)+64<<10)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case line, ok := <-ch.lines:
		var r reply
		if ok && json.Unmarshal(line, &r) == nil && r.Ready && r.V == protocolVersion {
			return ch, nil
		}
		ch.kill()
		return nil, fmt.Errorf("the render process %s did not start (protocol v%d): %s",
			exe, protocolVersion, ch.stderr.first())
	case <-timer.C:
		ch.kill()
		return nil, fmt.Errorf("%w: the render process did not start within %s", ErrBound, timeout)
	case <-ctx.Done():
		ch.kill()
		return nil, ctx.Err()
	}
}

// read passes the child's reply lines on, each at most limit bytes; a
// longer one ends the child.
func (ch *child) read(out *os.File, limit int64) {
	defer close(ch.lines)
	defer out.Close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), int(limit))
	for sc.Scan() {
		select {
		case ch.lines <- append([]byte(nil), sc.Bytes()...):
		case <-ch.exited:
			return
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		ch.tooLong.Store(true)
		ch.kill()
	}
}

// do sends req and returns the child's reply, sending the chart's files
// when the child asks for them; past the deadline, or when ctx ends, the
// child is killed. An error means the child is gone.
func (ch *child) do(ctx context.Context, c *Chart, req request, b Bounds) (reply, error) {
	timer := time.NewTimer(b.Timeout)
	defer timer.Stop()
	sent := ch.charts[req.Chart.Key]
	if !sent {
		req.Chart.Files = wireFiles(c)
	}
	written := ch.send(req)
	for {
		select {
		case err := <-written:
			written = nil
			if err != nil {
				ch.kill()
				return reply{}, ch.death(b, err)
			}
		case line, ok := <-ch.lines:
			if !ok {
				return reply{}, ch.death(b, nil)
			}
			r, err := readReply(line)
			if err != nil || r.V != protocolVersion {
				ch.kill()
				return reply{}, fmt.Errorf("the render process answered outside its protocol (v%d): %v", protocolVersion, err)
			}
			if r.NeedChart && req.Chart.Files == nil {
				req.Chart.Files = wireFiles(c)
				written = ch.send(req)
				continue
			}
			ch.charts[req.Chart.Key] = true
			return r, nil
		case <-timer.C:
			ch.kill()
			return reply{}, deadlineBound(b)
		case <-ctx.Done():
			ch.kill()
			return reply{}, ctx.Err()
		}
	}
}

// readReply reads a reply line, its objects' numbers as decodeObject
// types them.
func readReply(line []byte) (reply, error) {
	var r reply
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return r, err
	}
	for k, obj := range r.Objects {
		r.Objects[k] = helmvalues.Plain(obj).(map[string]any)
	}
	return r, nil
}

// send writes req to the child; the channel receives the write's error.
func (ch *child) send(req request) chan error {
	done := make(chan error, 1)
	data, err := json.Marshal(req)
	if err != nil {
		done <- err
		return done
	}
	go func() {
		_, err := ch.stdin.Write(append(data, '\n'))
		done <- err
	}()
	return done
}

func wireFiles(c *Chart) []wireFile {
	out := make([]wireFile, len(c.files))
	for i, f := range c.files {
		out[i] = wireFile{Name: f.Name, Data: f.Data}
	}
	return out
}

// allocationFailures are how a Go process (with or without the race
// detector) says that its address space limit refused an allocation.
var allocationFailures = []string{
	"out of memory", "cannot allocate memory", "failed to allocate", "address space collisions",
}

// threadFailures are how a Go process says it could not start a thread:
// under the child's address space limit a thread's stack is one more
// mapping refused (EAGAIN), with cgo (the race detector's builds) and
// without.
var threadFailures = []string{
	"pthread_create failed", "failed to create new OS thread",
}

// memoryDeath is the memory bound a child's dying words (stderr) show it
// passed, nil when they show none.
func memoryDeath(b Bounds, text string) error {
	has := func(m string) bool { return strings.Contains(text, m) }
	switch {
	case slices.ContainsFunc(allocationFailures, has):
		return memoryBound(b, "an allocation failed")
	case slices.ContainsFunc(threadFailures, has):
		return memoryBound(b, "no thread could be started within its address space")
	case has("stack exceeds") || has("stack overflow"):
		return memoryBound(b, "the template recursion overflowed its stack")
	}
	return nil
}

// death says why the child ended mid-request: its memory budget, its CPU
// limit, or how it exited.
func (ch *child) death(b Bounds, cause error) error {
	select {
	case <-ch.exited:
	case <-time.After(waitDelay):
		ch.kill()
		<-ch.exited
	}
	text := ch.stderr.String()
	state := ch.cmd.ProcessState
	if ch.tooLong.Load() {
		return fmt.Errorf("%w: the render process answered more than %s (output bound)",
			ErrBound, mib(replyLimit(b.MaxOutputBytes)))
	}
	if err := memoryDeath(b, text); err != nil {
		return err
	}
	switch {
	case state != nil && state.ExitCode() == exitCPU:
		return fmt.Errorf("%w: it passed its CPU limit of %s on each processor (render timeout)", ErrBound, b.Timeout)
	case state != nil && strings.Contains(state.String(), "killed"):
		return memoryBound(b, "killed by the system, most likely for memory")
	}
	why := "its output ended"
	if cause != nil {
		why = cause.Error()
	}
	return fmt.Errorf("the render process ended (%s, %v): %s", why, state, ch.stderr.first())
}

// kill kills the child; its exit is awaited by the goroutine that waits.
func (ch *child) kill() {
	if p := ch.cmd.Process; p != nil {
		_ = killChild(p)
	}
	ch.stdin.Close()
}

// close tells an idle child to exit (its input ends), and kills it if it
// does not.
func (ch *child) close() {
	ch.stdin.Close()
	go func() {
		select {
		case <-ch.exited:
		case <-time.After(waitDelay):
			ch.kill()
		}
	}()
}

// tail keeps the first and the last stderrTail bytes written to it: a Go
// crash says why first, then prints every goroutine's stack.
type tail struct {
	mu        sync.Mutex
	head, buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	written := len(p)
	if n := min(stderrTail-len(t.head), len(p)); n > 0 {
		t.head = append(t.head, p[:n]...)
		p = p[n:]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTail {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-stderrTail:]...)
	}
	return written, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + string(t.buf)
}

// first is the first line written, for an error: the child's own message,
// or the first line of a crash.
func (t *tail) first() string {
	first, _, _ := strings.Cut(strings.TrimSpace(t.String()), "\n")
	return strings.TrimSpace(first)
}
