package bot

import (
	"context"

	"github.com/backflow-dev/backflow/internal/witness"
)

// ChartFiles reads a repository's files at the commit a cycle plans, for
// rendering the charts of units that name a chart path.
type ChartFiles interface {
	// ReadFile returns a regular file's bytes.
	ReadFile(path string) ([]byte, error)
	// ListFiles returns the regular files under dir, recursively, as
	// slash-separated paths from the repository root.
	ListFiles(dir string) ([]string, error)
}

// RendererFunc builds the render witness's renderer for one repository
// cycle, reading the charts through files.
type RendererFunc func(ctx context.Context, files ChartFiles) witness.Renderer

// chartSource reads a repository's chart files at the cycle's head commit,
// through the bot's per-commit file cache.
type chartSource struct{ rc *repoCycle }

var _ ChartFiles = chartSource{}

// ReadFile reads a file at the head commit.
func (s chartSource) ReadFile(p string) ([]byte, error) {
	return s.rc.b.readFile(s.rc.ctx, s.rc.repo, s.rc.head, p)
}

// ListFiles lists the files under dir at the head commit.
func (s chartSource) ListFiles(dir string) ([]string, error) {
	return s.rc.b.opts.Forge.ListFiles(s.rc.ctx, s.rc.repo, s.rc.head, dir)
}
