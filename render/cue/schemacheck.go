package cue

import (
	"strings"

	"github.com/legate-dev/legate/render"
)

// RuleSchema names diagnostics of the generated CUE schema.
const RuleSchema = "schema"

// CheckFailed checks the resources the proto path rejected against the
// generated CUE schema, so that a YAML or JSON author gets every schema
// error at once in CUE's words (strict protojson stops at the first).
// Errors on a field the proto path already reported are dropped. Valid
// resources are not re-checked: decoding and PGV imply the schema. It
// implements render.FailedCheck.
func (s *Stage) CheckFailed(resources []*render.Failed) []render.Diagnostic {
	var diags []render.Diagnostic
	for _, f := range resources {
		value, err := parseJSON(f.JSON)
		if err != nil {
			continue
		}
		var errs []SchemaError
		s.fast.with(func(c *schemaCache) { errs = c.validateFast(f.TypeURL, value) })
		reported := map[string]bool{}
		for _, d := range f.Diagnostics {
			reported[foldPath(d.Field)] = true
		}
		for _, e := range errs {
			if reported[foldPath(e.Field)] {
				continue
			}
			diags = append(diags, f.Diagnose(e.Field, RuleSchema, e.Message))
		}
	}
	return diags
}

// foldPath compares field paths across spellings: connectTimeout and
// connect_timeout are one field.
func foldPath(p string) string {
	return strings.ToLower(strings.ReplaceAll(p, "_", ""))
}

var _ render.FailedCheck = (*Stage)(nil)
