package bot

import "github.com/backflow-dev/backflow/internal/render"

// chartSource reads a repository's chart files at the cycle's head commit,
// through the bot's per-commit file cache.
type chartSource struct{ rc *repoCycle }

var _ render.Source = chartSource{}

// ReadFile reads a file at the head commit.
func (s chartSource) ReadFile(p string) ([]byte, error) {
	return s.rc.b.readFile(s.rc.ctx, s.rc.repo, s.rc.head, p)
}

// ListFiles lists the files under dir at the head commit.
func (s chartSource) ListFiles(dir string) ([]string, error) {
	return s.rc.b.opts.Forge.ListFiles(s.rc.ctx, s.rc.repo, s.rc.head, dir)
}
