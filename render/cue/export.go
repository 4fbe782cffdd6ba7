package cue

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"github.com/legate-dev/legate/render"
)

// lineTable maps each line of an exported document to the CUE position of
// the value (or field) written on it.
type lineTable []token.Pos

// exportJSON writes a concrete document as indented JSON, one field or
// element per line, and records for every line the CUE position of what
// it holds: the value's own position when it is in the configuration,
// else (defaults of the generated schema) the enclosing value's.
func exportJSON(v cue.Value) ([]byte, lineTable) {
	e := &exporter{lines: lineTable{token.NoPos}} // line 0 is unused
	e.value(v, token.NoPos, 0)
	e.buf.WriteByte('\n')
	return e.buf.Bytes(), e.lines
}

type exporter struct {
	buf   bytes.Buffer
	lines lineTable
}

// line records the position of the line being written.
func (e *exporter) line(pos token.Pos) {
	e.lines = append(e.lines, pos)
}

func (e *exporter) newline(indent int, pos token.Pos) {
	e.buf.WriteByte('\n')
	e.buf.WriteString(strings.Repeat("  ", indent))
	e.line(pos)
}

// own is v's position when it is in the configuration, else parent.
func own(v cue.Value, parent token.Pos) token.Pos {
	p := v.Pos()
	if !p.IsValid() || inSchema(p) {
		return parent
	}
	return p
}

func (e *exporter) value(v cue.Value, parent token.Pos, indent int) {
	v, _ = v.Default()
	pos := own(v, parent)
	if len(e.lines) == 1 {
		e.line(pos)
	}
	switch v.Kind() {
	case cue.StructKind:
		it, err := v.Fields()
		if err != nil {
			e.buf.WriteString("null")
			return
		}
		e.buf.WriteByte('{')
		n := 0
		for it.Next() {
			if n > 0 {
				e.buf.WriteByte(',')
			}
			n++
			fv, _ := it.Value().Default()
			e.newline(indent+1, own(fv, pos))
			key, _ := json.Marshal(it.Selector().Unquoted())
			e.buf.Write(key)
			e.buf.WriteString(": ")
			e.value(fv, pos, indent+1)
		}
		if n > 0 {
			e.newline(indent, pos)
		}
		e.buf.WriteByte('}')
	case cue.ListKind:
		it, err := v.List()
		if err != nil {
			e.buf.WriteString("null")
			return
		}
		e.buf.WriteByte('[')
		n := 0
		for it.Next() {
			if n > 0 {
				e.buf.WriteByte(',')
			}
			n++
			ev, _ := it.Value().Default()
			e.newline(indent+1, own(ev, pos))
			e.value(ev, pos, indent+1)
		}
		if n > 0 {
			e.newline(indent, pos)
		}
		e.buf.WriteByte(']')
	default:
		data, err := v.MarshalJSON()
		if err != nil {
			data = []byte("null")
		}
		e.buf.Write(data)
	}
}

// mapper returns the render.Document.Positions of a document exported
// from the package in dir: file names are made relative to dir.
func (t lineTable) mapper(dir string) func(line, column int) (render.Position, bool) {
	return func(line, _ int) (render.Position, bool) {
		if line < 1 || line >= len(t) {
			return render.Position{}, false
		}
		p := t[line]
		if !p.IsValid() {
			return render.Position{}, false
		}
		return render.Position{File: relTo(dir, treePath(p.Filename())), Line: p.Line(), Column: p.Column()}, true
	}
}

// relTo writes file (relative to the tree's root) relative to dir.
func relTo(dir, file string) string {
	if dir == "." || dir == "" {
		return file
	}
	if rest, ok := strings.CutPrefix(file, dir+"/"); ok {
		return rest
	}
	up := ""
	for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if rest, ok := strings.CutPrefix(file, d+"/"); ok {
			return up + rest
		}
		up += "../"
	}
	return up + file
}
