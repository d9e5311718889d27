package bot

import (
	"context"
	"fmt"
	"net/url"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// Source yields the observations of one cluster. Read never fails as a
// whole: what cannot be read is in the result's Errors and the rest is used.
type Source interface {
	// Name names the source in reports (a path or a URL without secrets).
	Name() string
	// Read returns what the source holds now.
	Read(ctx context.Context) observe.Result
}

// PathSource reads a file or a folder of observation documents each cycle.
type PathSource struct {
	// Cluster is the cluster the source observes: documents that name no
	// cluster are taken to be of it, and documents naming another are refused.
	Cluster string
	// Path is the file or folder.
	Path string
	// Ceiling is the source's trust ceiling.
	Ceiling observe.Attribution
	// MaxBytes caps each file; zero means observe's default.
	MaxBytes int64
}

// Name implements Source.
func (s *PathSource) Name() string { return s.Path }

// Read implements Source.
func (s *PathSource) Read(ctx context.Context) observe.Result {
	res := source.LoadPath(s.Path, observe.Options{Ceiling: s.Ceiling, MaxBytes: s.MaxBytes})
	return keyByCluster(res, s.Cluster, s.Path)
}

// HTTPSource polls a URL each cycle (a 304 answer reuses the last result).
type HTTPSource struct {
	// Cluster is as for PathSource.
	Cluster string
	// Poller is the observe package's HTTP source, holding the ETag.
	Poller *source.HTTPSource
}

// Name implements Source: the URL without any password in it.
func (s *HTTPSource) Name() string {
	if u, err := url.Parse(s.Poller.URL); err == nil {
		return u.Redacted()
	}
	return "observation URL"
}

// Read implements Source.
func (s *HTTPSource) Read(ctx context.Context) observe.Result {
	res, _, err := s.Poller.Poll(ctx)
	if err != nil {
		return observe.Result{Errors: []error{err}}
	}
	return keyByCluster(res, s.Cluster, s.Name())
}

// keyByCluster holds a source to the cluster it is configured for: a
// document without a cluster is of that cluster, and one naming another
// cluster is dropped, because a source trusted for one cluster must not
// speak for another.
func keyByCluster(res observe.Result, cluster, name string) observe.Result {
	if cluster == "" {
		return res
	}
	out := observe.Result{Errors: res.Errors, Ignored: res.Ignored}
	for _, o := range res.Observations {
		switch o.Cluster {
		case "":
			o.Cluster = cluster
		case cluster:
		default:
			out.Errors = append(out.Errors, fmt.Errorf("%s: %s: observation of cluster %q refused: the source is configured for cluster %q", name, o.Origin, o.Cluster, cluster))
			continue
		}
		out.Observations = append(out.Observations, o)
	}
	for _, t := range res.Triggers {
		if t.Cluster == "" {
			t.Cluster = cluster
		}
		if t.Cluster == cluster {
			out.Triggers = append(out.Triggers, t)
		}
	}
	return out
}

// StaticSource serves fixed observations; the demo and tests feed the
// cycle with it.
type StaticSource struct {
	// Label names the source in reports.
	Label string
	// Result is returned by every Read.
	Result observe.Result
}

// Name implements Source.
func (s *StaticSource) Name() string { return s.Label }

// Read implements Source.
func (s *StaticSource) Read(ctx context.Context) observe.Result { return s.Result }
