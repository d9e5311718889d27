package render

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
)

// The render child: the binary itself, started again with childEnv set,
// renders the charts its parent sends it, one request at a time, in a
// process whose memory and CPU are limited and which its parent kills at
// each rendering's deadline. Requests and replies are JSON, one per line,
// each carrying the protocol version; the child's first line says it is
// ready.
const (
	// childEnv selects the child mode; its value is the memory budget in bytes.
	childEnv = "BACKFLOW_RENDER_CHILD"
	// protocolVersion is the version of the requests and replies.
	protocolVersion = 1
	// maxRequestBytes bounds one request line: a chart's files (base64) and
	// the values.
	maxRequestBytes = 2*MaxChartBytes + 16<<20
	// keptCharts bounds the charts a child keeps between requests.
	keptCharts = 8
	// exitCPU is the child's exit code when it passes its CPU limit.
	exitCPU = 3
	// exitProtocol is the child's exit code on a request it cannot read.
	exitProtocol = 4
)

// replyLimit bounds one reply line: the rendered objects as JSON, for an
// output bound of output bytes.
func replyLimit(output int64) int64 { return 2*output + 1<<20 }

// request asks a child for one rendering.
type request struct {
	V     int       `json:"v"`
	Chart wireChart `json:"chart"`
	// Release, Namespace and KubeVersion are the Options'.
	Release     string `json:"release"`
	Namespace   string `json:"namespace"`
	KubeVersion string `json:"kubeVersion"`
	// Values are the user's values, merged and typed as Helm reads them.
	Values json.RawMessage `json:"values"`
	// TimeoutMillis sets the CPU limit of this rendering; MaxOutputBytes
	// and MaxObjects bound its output.
	TimeoutMillis  int64 `json:"timeoutMillis"`
	MaxOutputBytes int64 `json:"maxOutputBytes"`
	MaxObjects     int   `json:"maxObjects"`
}

// wireChart names a chart by key (the digest of its files and identity)
// and carries its files when the child may not have them.
type wireChart struct {
	Key     string     `json:"key"`
	Name    string     `json:"name"`
	Version string     `json:"version"`
	Digest  string     `json:"digest"`
	Files   []wireFile `json:"files,omitempty"`
}

type wireFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// reply is a child's answer to a request, or its ready line.
type reply struct {
	V     int  `json:"v"`
	Ready bool `json:"ready,omitempty"`
	// NeedChart asks for the request again with the chart's files.
	NeedChart bool                      `json:"needChart,omitempty"`
	Objects   map[string]map[string]any `json:"objects,omitempty"`
	Error     *wireError                `json:"error,omitempty"`
}

// wireError is a failed rendering: Kind "render" (the chart or its values),
// "bound" (an output bound) or "nondeterministic" (with the fields).
type wireError struct {
	Kind    string   `json:"kind"`
	Message string   `json:"message"`
	Fields  []string `json:"fields,omitempty"`
}

// ChildMain serves renderings and exits when this process was started as a
// render child; otherwise it returns at once. Every binary that renders
// charts calls it first in main, and every test package that renders in
// its TestMain, before anything else runs: a render child is the binary
// itself, started again.
func ChildMain() {
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	budget, err := strconv.ParseInt(v, 10, 64)
	if err != nil || budget <= 0 {
		fmt.Fprintf(os.Stderr, "render child: %s=%q is not a memory budget in bytes\n", childEnv, v)
		os.Exit(exitProtocol)
	}
	os.Exit(serveChild(os.Stdin, os.Stdout, budget))
}

// serveChild answers the requests read from in on out until in ends, in a
// process limited to budget bytes; it returns the exit code.
func serveChild(in io.Reader, out io.Writer, budget int64) int {
	if err := limitProcess(budget); err != nil {
		fmt.Fprintf(os.Stderr, "render child: limits: %v\n", err)
		return exitProtocol
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(reply{V: protocolVersion, Ready: true}); err != nil {
		return 0
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxRequestBytes)
	kept := map[string]*Chart{}
	var order []string
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.V != protocolVersion {
			fmt.Fprintf(os.Stderr, "render child: a request it cannot read (protocol v%d): %v\n", protocolVersion, err)
			return exitProtocol
		}
		c, ok := kept[req.Chart.Key]
		if !ok && req.Chart.Files == nil {
			if err := enc.Encode(reply{V: protocolVersion, NeedChart: true}); err != nil {
				return 0
			}
			continue
		}
		if !ok {
			c = req.Chart.chart()
			if len(order) == keptCharts {
				delete(kept, order[0])
				order = order[1:]
			}
			kept[req.Chart.Key] = c
			order = append(order, req.Chart.Key)
		}
		limitCPU(time.Duration(req.TimeoutMillis) * time.Millisecond)
		line, err := json.Marshal(answer(c, req))
		if err == nil && int64(len(line)) > replyLimit(req.MaxOutputBytes) {
			// YAML aliases can make the decoded objects larger than the
			// bytes the templates rendered.
			line, err = json.Marshal(reply{V: protocolVersion, Error: &wireError{Kind: "bound",
				Message: fmt.Sprintf("%v: the rendered objects take more than %s as JSON (output bound)",
					ErrBound, mib(replyLimit(req.MaxOutputBytes)))}})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "render child: encoding a reply: %v\n", err)
			return exitProtocol
		}
		if _, err := out.Write(append(line, '\n')); err != nil {
			return 0
		}
	}
	if sc.Err() != nil {
		fmt.Fprintf(os.Stderr, "render child: reading requests: %v\n", sc.Err())
		return exitProtocol
	}
	return 0
}

// chart is the chart the request carries.
func (w wireChart) chart() *Chart {
	c := &Chart{Name: w.Name, Version: w.Version, Digest: w.Digest}
	for _, f := range w.Files {
		c.files = append(c.files, &archive.BufferedFile{Name: f.Name, Data: f.Data})
	}
	return c
}

// answer renders one request, its output bounded as the request says.
func answer(c *Chart, req request) reply {
	opts := Options{Release: req.Release, Namespace: req.Namespace, KubeVersion: req.KubeVersion,
		Bounds: Bounds{MaxOutputBytes: req.MaxOutputBytes, MaxObjects: req.MaxObjects}.orDefaults()}
	objects, err := c.renderHere(context.Background(), opts, req.Values)
	var nd *nondeterministic
	switch {
	case err == nil:
		return reply{V: protocolVersion, Objects: objects}
	case errors.As(err, &nd):
		return reply{V: protocolVersion, Error: &wireError{Kind: "nondeterministic", Message: err.Error(), Fields: nd.fields}}
	case errors.Is(err, ErrBound):
		return reply{V: protocolVersion, Error: &wireError{Kind: "bound", Message: err.Error()}}
	}
	return reply{V: protocolVersion, Error: &wireError{Kind: "render", Message: err.Error()}}
}

// err is the error a reply's wireError stands for.
func (e *wireError) err() error {
	switch e.Kind {
	case "nondeterministic":
		return &nondeterministic{fields: e.Fields}
	case "bound":
		return &boundError{msg: e.Message}
	}
	return errors.New(e.Message)
}

// boundError is an ErrBound reported by a child, its message kept.
type boundError struct{ msg string }

func (e *boundError) Error() string { return e.msg }
func (e *boundError) Unwrap() error { return ErrBound }
