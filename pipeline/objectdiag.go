package pipeline

import (
	"io/fs"
	"strings"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
)

// InObject rewrites the diagnostics of the document legate made of a
// Kubernetes object (sources/kube.Tree: one file, NAMESPACE/NAME.yaml) so
// that they name the object and the field path in it, as kubectl explain
// spells it: the API server keeps no manifest, so a line of a document
// the author never saw would point nowhere.
//
//	EnvoyConfig team-a/edge spec.resources[1].value.virtual_hosts[0]: route "main" …: cluster "api" is not defined
func InObject(kind string, files fs.FS, ds []render.Diagnostic) []render.Diagnostic {
	docs := map[string][]byte{}
	for i, d := range ds {
		name, ok := strings.CutSuffix(d.Pos.File, ".yaml")
		if !ok || strings.Count(name, "/") != 1 {
			continue
		}
		doc, seen := docs[d.Pos.File]
		if !seen {
			doc, _ = fs.ReadFile(files, d.Pos.File)
			docs[d.Pos.File] = doc
		}
		if doc == nil {
			continue // not a document of the object
		}
		object := kind + " " + name
		if path := render.YAMLFieldPathAt(doc, d.Pos.Line, d.Pos.Column); path != "" {
			object += " " + path
			if d.Field != "" && strings.HasSuffix(path, d.Field) {
				d.Field = "" // the path says it already
			}
		}
		d.Pos = render.Position{File: object}
		ds[i] = d
	}
	return ds
}

// inObject is InObject for a source's fetch result: the documents of
// EnvoyConfig objects, not of files.
func inObject(origin sources.Origin, files fs.FS, result *render.Result) {
	if origin.Kind != sources.KindKube || result == nil {
		return
	}
	result.Diagnostics = InObject("EnvoyConfig", files, result.Diagnostics)
	result.Warnings = InObject("EnvoyConfig", files, result.Warnings)
}
