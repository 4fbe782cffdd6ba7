package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// TargetFile is the name of the file that assigns node IDs to the raw
// Envoy files of its directory and the directories below it.
const TargetFile = "legate.yaml"

func errf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// Load reads the configuration files of fsys: every *.yaml, *.yml and
// *.json file outside hidden directories, within the limits of opts.
// Binary files are skipped; symbolic links are followed only when they stay
// inside fsys (and never into directories).
//
// Each document gets the node IDs of its place in the tree: the nearest
// ancestor directory that either holds a legate.yaml (`nodeIDs: [a, b]`)
// or sits in a directory named "nodes" (nodes/<nodeID>/…) decides. Files
// with neither get Options.DefaultNode. EnvoyConfig documents and
// bootstraps with node.id name their node themselves and override this.
func Load(fsys fs.FS, opts Options) ([]Document, []Diagnostic) {
	opts = opts.withDefaults()
	l := &loader{fsys: fsys, opts: opts, targets: map[string]*targetFile{}}
	err := fs.WalkDir(fsys, ".", l.visit)
	if err != nil && !errors.Is(err, errStop) {
		l.diags = append(l.diags, Diagnostic{Pos: Position{File: "."}, Rule: RuleLimit, Message: fmt.Sprintf("read tree: %v", err)})
	}
	return l.docs, l.diags
}

var errStop = errors.New("stop")

type loader struct {
	fsys    fs.FS
	opts    Options
	docs    []Document
	diags   []Diagnostic
	total   int64
	files   int
	targets map[string]*targetFile // dir → its legate.yaml (nil: none)
}

// targetFile is what a legate.yaml says.
type targetFile struct {
	nodes    []string
	settings *Settings
}

func (l *loader) limit(file, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{Pos: Position{File: file}, Rule: RuleLimit, Message: fmt.Sprintf(format, args...)})
}

func (l *loader) visit(p string, d fs.DirEntry, err error) error {
	if err != nil {
		l.limit(p, "cannot read: %v", err)
		if d != nil && d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	name := d.Name()
	if d.IsDir() {
		if p != "." && strings.HasPrefix(name, ".") {
			return fs.SkipDir
		}
		return nil
	}
	if !configFile(name) || name == TargetFile || strings.HasPrefix(strings.ToLower(name), "kustomization.") {
		return nil
	}
	if d.Type()&fs.ModeSymlink != 0 {
		ok, err := l.symlinkInside(p)
		if err != nil || !ok {
			l.limit(p, "symbolic link leaves the repository root: only links to files inside the tree are followed")
			return nil
		}
	}
	info, err := fs.Stat(l.fsys, p)
	if err != nil {
		l.limit(p, "cannot read: %v", err)
		return nil
	}
	if info.IsDir() {
		return nil
	}
	if info.Size() > l.opts.MaxFileSize {
		l.limit(p, "file is %d bytes, over the limit of %d bytes per file", info.Size(), l.opts.MaxFileSize)
		return nil
	}
	l.files++
	if l.files > l.opts.MaxFiles {
		l.limit(p, "more than %d configuration files: raise the file limit or split the repository", l.opts.MaxFiles)
		return errStop
	}
	if l.total+info.Size() > l.opts.MaxTotalSize {
		l.limit(p, "configuration files exceed %d bytes in total: raise the total size limit or split the repository", l.opts.MaxTotalSize)
		return errStop
	}
	data, err := fs.ReadFile(l.fsys, p)
	if err != nil {
		l.limit(p, "cannot read: %v", err)
		return nil
	}
	l.total += int64(len(data))
	if isBinary(data) {
		return nil
	}
	nodes, err := l.nodesFor(p)
	if err != nil {
		var ne *nodeError
		if errors.As(err, &ne) {
			l.diags = append(l.diags, Diagnostic{Pos: nodePos(path.Join(path.Dir(p), TargetFile), ne.node), Rule: RuleNode, Message: ne.msg})
		} else {
			l.diags = append(l.diags, Diagnostic{Pos: Position{File: path.Join(path.Dir(p), TargetFile)}, Rule: RuleNode, Message: err.Error()})
		}
		return nil
	}
	l.docs = append(l.docs, Document{Path: p, Data: data, Nodes: nodes, Settings: l.settingsFor(p)})
	return nil
}

// settingsFor returns the settings of the nearest legate.yaml above p that
// has any (nodesFor has read and checked every one of them already).
func (l *loader) settingsFor(p string) Settings {
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		if t := l.targets[dir]; t != nil && t.settings != nil {
			return *t.settings
		}
		if dir == "." || dir == "/" {
			return Settings{}
		}
	}
}

func configFile(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// isBinary reports whether data looks like a binary file (a NUL byte early).
func isBinary(data []byte) bool {
	if len(data) > 8000 {
		data = data[:8000]
	}
	return bytes.IndexByte(data, 0) >= 0
}

func (l *loader) symlinkInside(p string) (bool, error) {
	target, err := fs.ReadLink(l.fsys, p)
	if err != nil {
		return false, err
	}
	if path.IsAbs(target) || strings.HasPrefix(target, "/") {
		return false, nil
	}
	joined := path.Join(path.Dir(p), target)
	return joined != ".." && !strings.HasPrefix(joined, "../"), nil
}

// nodesFor returns the node IDs of the file at p, or an empty non-nil
// slice when no convention applies (so DefaultNode is used).
func (l *loader) nodesFor(p string) ([]string, error) {
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		nodes, err := l.target(dir)
		if err != nil || nodes != nil {
			return nodes, err
		}
		if path.Base(path.Dir(dir)) == "nodes" && dir != "." {
			return []string{path.Base(dir)}, nil
		}
		if dir == "." {
			return nil, nil
		}
	}
}

// target reads dir/legate.yaml once and returns the node IDs it names.
func (l *loader) target(dir string) ([]string, error) {
	if t, ok := l.targets[dir]; ok {
		if t == nil {
			return nil, nil
		}
		return t.nodes, nil
	}
	data, err := fs.ReadFile(l.fsys, path.Join(dir, TargetFile))
	if errors.Is(err, fs.ErrNotExist) {
		l.targets[dir] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", TargetFile, err)
	}
	t, err := parseTarget(data)
	if err != nil {
		return nil, err
	}
	l.targets[dir] = t
	return t.nodes, nil
}

// parseTarget reads a legate.yaml: `nodeIDs: [a, b]` (or `nodeID: a`)
// and the optional `strict:` settings.
func parseTarget(data []byte) (*targetFile, error) {
	docs, err := parseDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", TargetFile, err)
	}
	if len(docs) != 1 || docs[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s must be one mapping with nodeIDs: [...]", TargetFile)
	}
	var nodes []string
	var settings *Settings
	err = eachPair(docs[0], func(k, v *yaml.Node) error {
		switch k.Value {
		case "strict":
			s, err := parseStrict(v)
			settings = s
			return err
		case "nodeID":
			if scalar(v) == "" {
				return nodeErrorf(v, "nodeID must be a non-empty string")
			}
			nodes = append(nodes, scalar(v))
		case "nodeIDs":
			v = resolveAlias(v)
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				return nodeErrorf(v, "nodeIDs must be a non-empty list of node IDs")
			}
			for _, e := range v.Content {
				if scalar(e) == "" {
					return nodeErrorf(e, "node IDs must be non-empty strings")
				}
				nodes = append(nodes, scalar(e))
			}
		default:
			return nodeErrorf(k, "unknown field %q in %s: want nodeIDs or strict", k.Value, TargetFile)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 && settings == nil {
		return nil, fmt.Errorf("%s names no node: add nodeIDs: [...]", TargetFile)
	}
	return &targetFile{nodes: nodes, settings: settings}, nil
}

// parseStrict reads `strict: {missingClusters: error}`.
func parseStrict(v *yaml.Node) (*Settings, error) {
	v = resolveAlias(v)
	if v.Kind != yaml.MappingNode {
		return nil, nodeErrorf(v, "strict must be a mapping, e.g. strict: {missingClusters: error}")
	}
	s := &Settings{}
	err := eachPair(v, func(k, v *yaml.Node) error {
		switch k.Value {
		case "missingClusters":
			switch scalar(v) {
			case SeverityError, SeverityWarning:
				s.MissingClusters = scalar(v)
			default:
				return nodeErrorf(v, "strict.missingClusters: %q is not one of error, warning", scalar(v))
			}
		default:
			return nodeErrorf(k, "unknown field %q in strict: want missingClusters", k.Value)
		}
		return nil
	})
	return s, err
}

// pathNodes applies the nodes/<nodeID>/ convention to a document path.
func pathNodes(p string) []string {
	parts := strings.Split(path.Clean(strings.ReplaceAll(p, "\\", "/")), "/")
	for i := len(parts) - 3; i >= 0; i-- {
		if parts[i] == "nodes" {
			return []string{parts[i+1]}
		}
	}
	return nil
}

// NodesOf returns the node IDs that the place of file in fsys gives the raw
// resources it holds: the nearest legate.yaml or nodes/<nodeID>/ directory
// (see Load). Nil means no convention applies (Options.DefaultNode). It
// lets Generators target nodes exactly as YAML files are.
func NodesOf(fsys fs.FS, file string) ([]string, error) {
	l := &loader{fsys: fsys, targets: map[string]*targetFile{}}
	nodes, err := l.nodesFor(file)
	var ne *nodeError
	if errors.As(err, &ne) {
		return nil, errors.New(ne.msg)
	}
	return nodes, err
}
