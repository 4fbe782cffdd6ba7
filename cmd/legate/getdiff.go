package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/preview"
	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources/git"
)

func newGetCommand() *cobra.Command {
	var cf clientFlags
	var output string
	cmd := &cobra.Command{
		Use:   "get NODE [REVISION]",
		Short: "Print the configuration a node is served, as YAML or JSON",
		Long: `get prints the resources of the revision a running legate serve serves to
NODE (or of REVISION, a hash or unique prefix from legate status NODE), each as
Envoy's JSON with its type, name and the file it came from. The key material
of secrets is never shown.`,
		Example: `  legate get edge
  legate get edge -o json | jq '.resources[] | select(.type == "Cluster") | .name'
  # a revision from the history
  legate get edge 3c959b7021e1`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output, []string{"yaml", "json"}); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			rev := "served"
			if len(args) == 2 {
				rev = args[1]
			}
			v, err := c.revision(cmd.Context(), args[0], rev)
			if err != nil {
				return err
			}
			return printJSONOrYAML(cmd.OutOrStdout(), output, v)
		},
	}
	cf.bind(cmd.Flags(), false)
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func newDiffCommand() *cobra.Command {
	var cf clientFlags
	var rf refDiffFlags
	cmd := &cobra.Command{
		Use:   "diff NODE REV1 [REV2] | diff --base REF [--head REF] [PATH]",
		Short: "Show how two revisions of a node, or two commits of a repository, differ",
		Long: `diff has two modes.

legate diff NODE REV1 [REV2] asks a running legate serve for two revisions of
NODE and prints a unified diff between them, resource by resource, as YAML.
REV1 and REV2 are revision hashes or unique prefixes (legate status NODE lists
them); "served" names the revision served, and REV2 defaults to it.

legate diff --base REF --head REF [PATH] needs no server: it renders the Git
repository holding PATH (default: the current directory) at both refs, with
the options legate validate uses, reading each commit from the repository
without touching the work tree, and reports per node what the head changes:
nodes added, removed and changed, per resource type the names, and a bounded
diff of each resource with Envoy's field names (secrets by name only). PATH
may be a directory inside the repository, as a source's path is. --head
defaults to HEAD. It exits 0 when nothing changes, 1 when something does
and 2 when the head is invalid (its problems are listed as file:line) or the
diff cannot be made, so that a CI job can gate or comment on a pull request.`,
		Example: `  # what the rejected revision changed against what is served
  legate diff edge 9df5d6dfec05 served
  legate diff edge 3705fb024c2f 9df5d6dfec05
  # in CI: what a pull request changes, as a comment body
  legate diff --base origin/main --head HEAD -o markdown ./envoy`,
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rf.base != "" || cmd.Flags().Changed("head") {
				if rf.base == "" {
					return &exitError{code: diffInvalid, err: errors.New("--head needs --base: the commit to compare it with")}
				}
				if len(args) > 1 {
					return &exitError{code: diffInvalid, err: fmt.Errorf("with --base, diff takes at most one PATH, not %d arguments", len(args))}
				}
				dir := "."
				if len(args) == 1 {
					dir = args[0]
				}
				return runRefDiff(cmd, rf, dir)
			}
			if cmd.Flags().Changed("output") || cmd.Flags().Changed("node") {
				return errors.New("--output and --node go with --base and --head")
			}
			if err := cobra.RangeArgs(2, 3)(cmd, args); err != nil {
				return fmt.Errorf("%w (or give --base REF to compare two commits)", err)
			}
			return revisionDiff(cmd, cf, args)
		},
	}
	cf.bind(cmd.Flags(), false)
	cmd.Flags().StringVar(&rf.base, "base", "", "compare commits: the ref the head is compared with (branch, tag, commit, HEAD~1)")
	cmd.Flags().StringVar(&rf.head, "head", "HEAD", "with --base: the ref whose changes are shown")
	cmd.Flags().StringVarP(&rf.output, "output", "o", "text", "with --base: output format: text, markdown or json")
	cmd.Flags().StringVar(&rf.node, "node", "", "with --base: node ID for files that name no node, as legate validate --node")
	return cmd
}

// revisionDiff is `legate diff NODE REV1 [REV2]` against a server.
func revisionDiff(cmd *cobra.Command, cf clientFlags, args []string) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	to := "served"
	if len(args) == 3 {
		to = args[2]
	}
	a, err := c.revision(cmd.Context(), args[0], args[1])
	if err != nil {
		return err
	}
	b, err := c.revision(cmd.Context(), args[0], to)
	if err != nil {
		return err
	}
	return writeDiff(cmd.OutOrStdout(), a, b)
}

// writeDiff writes the unified diff of two revisions' resources as YAML,
// or says they are equal.
func writeDiff(w io.Writer, a, b readapi.RevisionView) error {
	left, err := revisionText(a)
	if err != nil {
		return err
	}
	right, err := revisionText(b)
	if err != nil {
		return err
	}
	if left == right {
		fmt.Fprintf(w, "revisions %s and %s of node %s have the same resources\n", revisions.Short(a.Hash), revisions.Short(b.Hash), a.Node)
		return nil
	}
	text, _ := preview.UnifiedDiff(preview.Lines(left), preview.Lines(right), revisionLabel(a), revisionLabel(b), 0)
	_, err = io.WriteString(w, text)
	return err
}

func revisionLabel(v readapi.RevisionView) string {
	label := revisions.Short(v.Hash)
	if v.Origin.Commit != "" {
		label += " (commit " + revisions.Short(v.Origin.Commit) + ")"
	}
	if v.Served {
		label += " served"
	}
	return label
}

// revisionText is a revision's resources as YAML, one document per
// resource, in the order the API gives (type, then name).
func revisionText(v readapi.RevisionView) (string, error) {
	var b strings.Builder
	for _, r := range v.Resources {
		fmt.Fprintf(&b, "# %s %s\n", r.Type, r.Name)
		if r.Redacted {
			b.WriteString("(secret: key material not shown)\n")
			continue
		}
		var obj any
		if err := json.Unmarshal(r.Value, &obj); err != nil {
			return "", err
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return "", err
		}
		y, err := jsonToYAML(data)
		if err != nil {
			return "", err
		}
		b.Write(y)
		b.WriteString("---\n")
	}
	return b.String(), nil
}

// Exit codes of `legate diff --base --head`, those of diff(1): CI scripts
// tell "nothing changes" from "something changes" from "cannot say".
const (
	diffSame    = 0
	diffChanged = 1
	diffInvalid = 2
)

// exitError makes the process exit with code; an error with no message
// was already reported on the output.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode is the exit status for err returned by the command tree.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// refDiffFlags are the flags of `legate diff --base --head`.
type refDiffFlags struct {
	base, head string
	output     string
	node       string
}

// runRefDiff renders dir's repository at f.base and f.head as legate
// validate would, and writes how the head changes each node.
func runRefDiff(cmd *cobra.Command, f refDiffFlags, dir string) error {
	// Every failure of this mode exits 2 (cobra prints the message);
	// a change exits 1 with the report as its only output.
	fail := func(err error) error { return &exitError{code: diffInvalid, err: err} }
	if err := checkFormat(f.output, []string{"text", "markdown", "json"}); err != nil {
		return fail(err)
	}
	repo, err := git.OpenLocal(dir)
	if err != nil {
		return fail(err)
	}
	// The commits are read one after the other (a go-git repository is
	// not shared between goroutines), then rendered side by side, each
	// node whose files did not change only once (preview.RenderPair).
	baseSnap, err := repo.Read(f.base)
	if err != nil {
		return fail(fmt.Errorf("--base: %w", err))
	}
	headSnap, err := repo.Read(f.head)
	if err != nil {
		return fail(fmt.Errorf("--head: %w", err))
	}
	with := newRenderOptions()
	renderFiles := func(files fs.FS) *render.Result {
		opts := with()
		opts.DefaultNode = f.node
		opts.Context = cmd.Context()
		return render.Render(files, opts)
	}
	limits := with()
	limits.DefaultNode = f.node
	base, head, _ := preview.RenderPair(baseSnap.Files, headSnap.Files, limits, renderFiles)
	baseCommit, headCommit := baseSnap.Origin.Commit, headSnap.Origin.Commit
	r := preview.Compare(base, head, preview.Options{
		BaseLabel: refLabel(f.base, baseCommit),
		HeadLabel: refLabel(f.head, headCommit),
		Dir:       repo.Path,
	})
	if err := writeReport(cmd.OutOrStdout(), f.output, r); err != nil {
		return fail(err)
	}
	cmd.SilenceErrors = true
	switch {
	case r.Invalid:
		return &exitError{code: diffInvalid}
	case r.Changed():
		return &exitError{code: diffChanged}
	}
	return nil
}

// refLabel is how a side is named in the report: the ref as given and
// the commit it resolved to.
// A ref that is the commit (or a prefix of it) is shown once, short.
func refLabel(ref, commit string) string {
	short := commit[:min(12, len(commit))]
	if strings.HasPrefix(commit, ref) {
		return short
	}
	return ref + " (" + short + ")"
}

func writeReport(w io.Writer, format string, r *preview.Report) error {
	switch format {
	case "json":
		return r.JSON(w)
	case "markdown":
		_, err := io.WriteString(w, r.Markdown(0))
		return err
	default:
		return r.Text(w)
	}
}
