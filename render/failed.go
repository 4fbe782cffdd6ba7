package render

import (
	"path"
	"strings"
)

// FailedCheck is an optional interface of a Check. A Check that implements
// it also sees the resources that failed strict decoding or PGV, in the
// JSON form the decoder read, with the diagnostics the proto path gave
// each, so that it can add its own explanation (the CUE schema's errors)
// without repeating what is already reported.
type FailedCheck interface {
	CheckFailed(resources []*Failed) []Diagnostic
}

// Failed is one resource that failed decoding or PGV, handed to a
// FailedCheck. Decoded.Message is nil when decoding failed.
type Failed struct {
	Decoded
	// JSON is the resource as the decoder read it (YAML turned into JSON,
	// field names as written, without "@type").
	JSON []byte
	// Diagnostics are the proto path's decode and PGV diagnostics.
	Diagnostics []Diagnostic
}

// failedChecks hands the resources that failed decoding or PGV to the
// Checks that implement FailedCheck.
func (r *renderer) failedChecks() {
	var fcs []FailedCheck
	for _, c := range r.opts.Checks {
		if fc, ok := c.(FailedCheck); ok {
			fcs = append(fcs, fc)
		}
	}
	if len(fcs) == 0 {
		return
	}
	var failed []*Failed
	jw := jsonWriter{budget: r.jw.budget}
	for _, it := range r.items {
		if it.kind == nil || it.ext != nil {
			continue
		}
		var ds []Diagnostic
		for _, d := range it.problems {
			if d.Rule == RuleDecode || d.Rule == RulePGV {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			continue
		}
		err := jw.writeResource(it.root, it.skip...)
		if err != nil {
			continue // not JSON-shaped, or over budget: the decode diagnostic says why.
		}
		failed = append(failed, &Failed{
			Decoded: Decoded{
				Nodes: it.nodes, TypeURL: it.kind.url, Name: it.displayName(),
				Message: it.msg, Source: it.pos(), it: it,
			},
			JSON:        append([]byte(nil), jw.buf...),
			Diagnostics: ds,
		})
	}
	if len(failed) == 0 {
		return
	}
	for _, fc := range fcs {
		r.diags = append(r.diags, fc.CheckFailed(failed)...)
	}
}

// positionMaps collects the Positions of generated documents by path.
func positionMaps(docs []Document) map[string]func(Position) (Position, bool) {
	var out map[string]func(Position) (Position, bool)
	for _, d := range docs {
		if d.Positions == nil {
			continue
		}
		if out == nil {
			out = map[string]func(Position) (Position, bool){}
		}
		dir, fn := path.Dir(d.Path), d.Positions
		out[d.Path] = func(p Position) (Position, bool) {
			q, ok := fn(p.Line, p.Column)
			if !ok {
				return p, false
			}
			if dir != "." && !strings.HasPrefix(q.File, "/") {
				q.File = path.Join(dir, q.File)
			}
			return q, true
		}
	}
	return out
}

func mapPosition(maps map[string]func(Position) (Position, bool), p *Position) {
	if m := maps[p.File]; m != nil {
		if q, ok := m(*p); ok {
			*p = q
		}
	}
}

// mapDiagnostics moves positions in generated documents to their sources.
func mapDiagnostics(maps map[string]func(Position) (Position, bool), ds []Diagnostic) {
	if maps == nil {
		return
	}
	for i := range ds {
		mapPosition(maps, &ds[i].Pos)
	}
}

// mapSources moves the sources of rendered resources to their sources.
func mapSources(maps map[string]func(Position) (Position, bool), nodes map[string]*NodeConfig) {
	if maps == nil {
		return
	}
	for _, nc := range nodes {
		for _, ts := range nc.Types {
			for i := range ts.Resources {
				mapPosition(maps, &ts.Resources[i].Source)
			}
		}
		for i := range nc.ExternalSecrets {
			mapPosition(maps, &nc.ExternalSecrets[i].Source)
		}
		for i := range nc.ExternalEndpoints {
			mapPosition(maps, &nc.ExternalEndpoints[i].Source)
		}
	}
}
