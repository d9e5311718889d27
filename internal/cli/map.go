package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/checkout"
	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// mapFlags are map's flags: the chart and where it comes from, the values
// files, the object and field to map, the release it is rendered as, and
// the render budget.
type mapFlags struct {
	chartDir, object, field string
	chartVersion, repoURL   string
	valuesFiles, allowHosts []string
	opts                    render.Options
	maxRenders              int
}

func newMapCmd() *cobra.Command {
	var m mapFlags
	cmd := &cobra.Command{
		Use:   "map --chart DIR|oci://REF|NAME [--version V] [--repo URL] [--values FILE]... --object KEY --field PATH",
		Short: "Find the value paths that drive a rendered field of a chart",
		Long: `map asks the chart which value paths drive one field of one rendered object,
to write a policy's mayAccept entries from the chart rather than from memory.

It renders the chart in DIR (its dependencies under charts/, or fetched as its
Chart.lock pins them, from the hosts --allow-host lists), or the chart fetched from an OCI registry
(--chart oci://host/path/chart --version V) or a chart repository
(--repo URL --chart NAME --version V), as the render witness fetches it, with
the values files, in Helm's override order, then changes each scalar leaf of the merged
values (the chart's defaults under the files' values; a number +1, a boolean
flipped, a string with an x appended; leaves inside lists are left alone),
renders again and keeps the value paths that move the field. Leaves are tried
in groups that are split while they move the field or fail to render, so the
cost grows with the paths found rather than with the leaves; --max-renders
bounds it. This assumes changes in one group do not cancel each other out.

KEY is the object key apiVersion|Kind|namespace|name; PATH the Kubernetes field
path (spec.replicas, spec.template.spec.containers[0].image).

The output ranks the paths: those whose new value the field renders as is
(direct) first, then those that move fewer other fields; each row lists the
other fields it also moves. The last line reports the cost: leaves, renders,
leaves that could not be rendered, and the time taken.

Exit 0: at least one value path drives the field. 1: none does (or the render
budget ran out first). 2: the chart or a values file cannot be read, the
chart does not render the object, or a flag is wrong.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return m.run(cmd) },
	}
	m.register(cmd)
	return cmd
}

// register declares map's flags on cmd.
func (m *mapFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(
		&m.chartDir,
		"chart",
		"",
		"the chart's folder, its oci:// reference, or its name in the --repo chart repository",
	)
	f.StringVar(&m.chartVersion, "version", "", "the exact version of a chart fetched from --repo or an OCI registry")
	f.StringVar(&m.repoURL, "repo", "", "the chart repository (the URL of its index.yaml's folder) that serves --chart")
	f.StringArrayVar(&m.valuesFiles, "values", nil, "a values file, in Helm's override order (repeatable)")
	f.StringArrayVar(
		&m.allowHosts,
		"allow-host",
		nil,
		"a host (host or host:port) the chart's Chart.lock may fetch dependencies from and a fetch may be redirected to, "+
			"as the bot config's charts.allowedHosts (repeatable)",
	)
	f.StringVar(&m.object, "object", "", "the rendered object, apiVersion|Kind|namespace|name")
	f.StringVar(&m.field, "field", "", "the Kubernetes field path")
	f.StringVar(&m.opts.Release, "release", "", "release name (default: the chart's name)")
	f.StringVar(&m.opts.Namespace, "namespace", "", "release namespace (default: the object's namespace)")
	f.StringVar(&m.opts.KubeVersion, "kube-version", render.DefaultKubeVersion, "Kubernetes version rendered for")
	f.IntVar(&m.maxRenders, "max-renders", render.DefaultMaxRenders, "the most renderings to make")
}

// run maps the field: it loads the chart and the values files, renders as
// the release the flags name (the chart's name and the object's namespace
// by default), writes the ranked value paths and the cost, and exits 1
// when none drives the field or the render budget ran out first.
func (m *mapFlags) run(cmd *cobra.Command) error {
	if m.chartDir == "" || m.object == "" || m.field == "" {
		return cliroot.UsageError("--chart, --object and --field are required")
	}
	c, err := m.loadChart(cmd.Context())
	if err != nil {
		return err
	}
	trees, err := checkout.ReadValuesFiles(m.valuesFiles)
	if re := (*checkout.ReadFileError)(nil); errors.As(err, &re) {
		return cliroot.UsageError("--values %s: %v", re.Path, re.Err)
	} else if err != nil {
		return cliroot.UsageError("%v", err)
	}
	if m.opts.Release == "" {
		m.opts.Release = c.Name
	}
	if m.opts.Namespace == "" {
		if k, err := observe.ParseObjectPattern(m.object); err == nil {
			m.opts.Namespace = k.Namespace
		}
	}
	start := time.Now()
	res, err := c.Map(cmd.Context(), m.opts, trees, m.object, m.field, m.maxRenders)
	if err != nil {
		return cliroot.UsageError("%v", err)
	}
	writeMap(cmd.OutOrStdout(), c, m.object, m.field, res, time.Since(start))
	switch {
	case res.Truncated:
		return cliroot.Negative("the render budget (--max-renders %d) ran out before every leaf was tried", res.Renders)
	case len(res.Drivers) == 0:
		return cliroot.Negative("no value path drives %s %s", m.object, m.field)
	}
	return nil
}

// loadChart loads the chart --chart names: from an OCI registry, from the
// --repo chart repository, or from a folder (its dependencies under charts/
// or fetched from the --allow-host hosts), as the render witness fetches it.
// --version goes with a remote chart and only with one.
func (m *mapFlags) loadChart(ctx context.Context) (*render.Chart, error) {
	spec := &repoconfig.Chart{Name: m.chartDir, Version: m.chartVersion}
	var src render.Source
	switch {
	case strings.HasPrefix(m.chartDir, "oci://"):
		spec.OCI = m.chartDir
	case m.repoURL != "":
		spec.Repository = m.repoURL
	default:
		abs, err := filepath.Abs(m.chartDir)
		if err != nil {
			return nil, cliroot.UsageError("--chart %s: %v", m.chartDir, err)
		}
		src, spec.Path = render.DirSource{Root: filepath.Dir(abs)}, filepath.Base(abs)
	}
	if spec.Remote() && m.chartVersion == "" {
		return nil, cliroot.UsageError("--version is required with --repo or an oci:// chart")
	}
	if !spec.Remote() && m.chartVersion != "" {
		return nil, cliroot.UsageError("--version goes with --repo or an oci:// chart, not a chart folder")
	}
	c, err := render.Load(ctx, src, render.NewFetcher(render.FetchOptions{AllowedHosts: m.allowHosts}), spec)
	if err != nil {
		return nil, cliroot.UsageError("map: --chart %s: %v", m.chartDir, err)
	}
	return c, nil
}

// writeMap writes what map found for object's field in chart c: the ranked
// value paths, each with the field's rendered value before and after and the
// other fields it also moves (the first three), then the cost: leaves,
// renders, leaves that could not be rendered, and took, the time it took.
func writeMap(out io.Writer, c *render.Chart, object, field string, res *render.MapResult, took time.Duration) {
	fmt.Fprintf(out, "chart %s %s (%s): value paths that drive %s %s\n", c.Name, c.Version, c.Digest, object, field)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tVALUE PATH\tFIELD\tALSO MOVES")
	for i, d := range res.Drivers {
		effect := fmt.Sprintf("%s -> %s", renderedText(d.Before, d.HasBefore), renderedText(d.After, d.HasAfter))
		if d.Direct {
			effect += " (direct)"
		}
		also := "nothing else"
		if n := len(d.Also); n > 0 {
			shown := d.Also[:min(n, 3)]
			also = fmt.Sprintf("%d: %s", n, strings.Join(shown, ", "))
			if n > 3 {
				also += ", ..."
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", i+1, d.ValuePath, effect, also)
	}
	tw.Flush()
	fmt.Fprintf(out, "cost: %d scalar leaves, %d renders, %d leaves could not be rendered, %s\n",
		res.Leaves, res.Renders, res.Failed, took.Round(time.Millisecond))
}

// renderedText writes a rendered value, or "absent".
func renderedText(v any, has bool) string {
	if !has {
		return "absent"
	}
	return values.Format(v)
}
