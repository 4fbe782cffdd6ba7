package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
)

// errInvalid makes `legate validate` exit 1 after printing diagnostics.
var errInvalid = errors.New("configuration is invalid")

type validateFlags struct {
	node        string
	output      string
	maxFileSize int64
}

func newValidateCommand() *cobra.Command {
	var f validateFlags
	cmd := &cobra.Command{
		Use: "validate [PATH...]",
		Example: `  # the verdict legate serve would give, before pushing
  legate validate ./envoy
  legate validate --node edge static/envoy.yaml`,
		Short: "Render and validate a configuration repository offline",
		Long: `validate renders the Envoy configuration in the given files and directories
(default: the current directory) exactly as the server would, and reports
every problem compiler-style with file, line and column. It exits 1 when the
configuration is invalid, so it can gate a pull request (--output github
prints workflow annotations).`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"."}
			}
			switch f.output {
			case render.FormatText, render.FormatJSON, render.FormatGitHub:
			default:
				return fmt.Errorf("--output %q: want text, json or github", f.output)
			}
			opts := newRenderOptions()()
			opts.DefaultNode, opts.MaxFileSize = f.node, f.maxFileSize
			docs, diags, err := loadPaths(args, opts)
			if err != nil {
				return err
			}
			res := render.RenderDocuments(docs, opts)
			res.Diagnostics = render.SortDiagnostics(append(diags, res.Diagnostics...))
			if len(res.Diagnostics) > 0 {
				res.Nodes = nil
			}
			if err := report(cmd.OutOrStdout(), f.output, res); err != nil {
				return err
			}
			if !res.OK() {
				// Warnings alone do not fail validation.
				cmd.SilenceErrors = true
				return fmt.Errorf("%w: %d problem(s)", errInvalid, len(res.Diagnostics))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.node, "node", "", "node ID for files that name no node (not under nodes/<id>/, no legate.yaml)")
	cmd.Flags().StringVarP(&f.output, "output", "o", render.FormatText, "output format: text, json or github")
	cmd.Flags().Int64Var(&f.maxFileSize, "max-file-size", render.DefaultMaxFileSize, "largest file read, in bytes")
	return cmd
}

// loadPaths reads directories with render.Load and the Generators of opts
// (CUE policies and packages), and single files as they are, naming every
// document by the path the user gave.
func loadPaths(paths []string, opts render.Options) ([]render.Document, []render.Diagnostic, error) {
	var docs []render.Document
	var diags []render.Diagnostic
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, fmt.Errorf("validate %s: %w", p, err)
		}
		if !info.IsDir() {
			data, err := readFileArg(p, opts.MaxFileSize)
			if err != nil {
				return nil, nil, fmt.Errorf("validate %s: %w", p, err)
			}
			nodes, err := fileNodes(p)
			if err != nil {
				return nil, nil, fmt.Errorf("validate %s: %w", p, err)
			}
			docs = append(docs, render.Document{Path: filepath.ToSlash(filepath.Clean(p)), Data: data, Nodes: nodes})
			continue
		}
		// A pull request's checkout is its author's: its links are
		// followed only inside the directory, and only regular files read.
		fsys := sources.DirFS(p)
		ds, dg := render.Load(fsys, opts)
		for _, g := range opts.Generators {
			more, md := g.Generate(fsys)
			ds, dg = append(ds, more...), append(dg, md...)
		}
		for i := range ds {
			ds[i].Path = prefix(p, ds[i].Path)
		}
		for i := range dg {
			dg[i].Pos.File = prefix(p, dg[i].Pos.File)
		}
		docs = append(docs, ds...)
		diags = append(diags, dg...)
	}
	return uniqueDocuments(docs), diags, nil
}

// uniqueDocuments drops documents read twice because the same file was
// named twice (`legate validate a a`, or a directory and a file in it):
// one file is one set of resources, never its own duplicate.
func uniqueDocuments(docs []render.Document) []render.Document {
	seen := make(map[string]bool, len(docs))
	out := docs[:0]
	for _, d := range docs {
		if seen[d.Path] {
			continue
		}
		seen[d.Path] = true
		out = append(out, d)
	}
	return out
}

// fileNodes applies the node targeting of a directory render to a single
// file argument inside the working directory: the nearest legate.yaml or
// nodes/<nodeID>/ directory between the file and the working directory.
// Nil leaves it to the document itself and --node.
func fileNodes(path string) ([]string, error) {
	rel := filepath.ToSlash(filepath.Clean(path))
	if filepath.IsAbs(path) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, nil
	}
	return render.NodesOf(sources.DirFS("."), rel)
}

// readFileArg reads a file named on the command line: through the working
// directory's links only while they stay inside it (a file of the
// checkout may be a link its author made), never a device or a pipe, and
// at most limit bytes.
func readFileArg(p string, limit int64) ([]byte, error) {
	var f fs.File
	var err error
	rel := filepath.ToSlash(filepath.Clean(p))
	if filepath.IsAbs(p) || rel == ".." || strings.HasPrefix(rel, "../") {
		f, err = os.Open(p)
	} else {
		f, err = sources.DirFS(".").Open(rel)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, sources.ErrNotRegular
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("file is over the limit of %d bytes per file (--max-file-size)", limit)
	}
	return data, nil
}

func prefix(dir, file string) string {
	if dir == "." {
		return file
	}
	return filepath.ToSlash(filepath.Join(dir, file))
}

// summary is what validate says it rendered for one node.
type summary struct {
	Hash            string         `json:"hash"`
	Resources       map[string]int `json:"resources"`
	ExternalSecrets int            `json:"externalSecrets,omitempty"`
}

func summarize(res *render.Result) map[string]summary {
	out := map[string]summary{}
	for id, nc := range res.Nodes {
		s := summary{Hash: nc.Hash, Resources: map[string]int{}, ExternalSecrets: len(nc.ExternalSecrets)}
		for url, ts := range nc.Types {
			s.Resources[url[strings.LastIndex(url, ".")+1:]] = len(ts.Resources)
		}
		out[id] = s
	}
	return out
}

func report(w io.Writer, format string, res *render.Result) error {
	sums := summarize(res)
	if format == render.FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		diags, warnings := res.Diagnostics, res.Warnings
		if diags == nil {
			diags = []render.Diagnostic{}
		}
		if warnings == nil {
			warnings = []render.Diagnostic{}
		}
		return enc.Encode(struct {
			Valid       bool                `json:"valid"`
			Nodes       map[string]summary  `json:"nodes"`
			Diagnostics []render.Diagnostic `json:"diagnostics"`
			Warnings    []render.Diagnostic `json:"warnings"`
		}{res.OK(), sums, diags, warnings})
	}
	if err := render.WriteDiagnostics(w, format, res.Diagnostics); err != nil {
		return err
	}
	if err := render.WriteDiagnostics(w, format, res.Warnings); err != nil {
		return err
	}
	if !res.OK() {
		_, err := fmt.Fprintf(w, "invalid: %d problem(s)\n", len(res.Diagnostics))
		return err
	}
	ids := make([]string, 0, len(sums))
	for id := range sums {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		s := sums[id]
		kinds := make([]string, 0, len(s.Resources))
		for k := range s.Resources {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		parts := make([]string, 0, len(kinds)+1)
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%d %s", s.Resources[k], k))
		}
		if s.ExternalSecrets > 0 {
			parts = append(parts, fmt.Sprintf("%d external secret(s)", s.ExternalSecrets))
		}
		if _, err := fmt.Fprintf(w, "node %s: %s (hash %s)\n", id, strings.Join(parts, ", "), s.Hash[:12]); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		_, err := fmt.Fprintln(w, "valid: no resources rendered")
		return err
	}
	return nil
}
