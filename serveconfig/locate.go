package serveconfig

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/render"
)

// fieldPath matches the field a problem of Validate starts with:
// "sources[1].git.url", "xdsTLS.certFile", "history".
var fieldPath = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\[[0-9]+\])?(\.[A-Za-z][A-Za-z0-9]*(\[[0-9]+\])?)*$`)

// sourceIndex reads the index of a "sources[i]…" field.
var sourceIndex = regexp.MustCompile(`^sources\[([0-9]+)\]`)

// Locate names the config file, line and column in each problem of a
// Validate error whose field the file sets, so that the author of a long
// file is sent to the line: "legate.yaml:7:5: sources[0].git.url:
// required" (a missing field is placed at the nearest field around it
// that the file has). first is the index the file's first source has
// among all the sources (1 when --git-url adds one before them); a source
// beyond the file's came from a --source flag, and a field the file does
// not set at all came from a flag: both are left as they are.
func Locate(err error, file string, data []byte, first int) error {
	if err == nil {
		return nil
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return err
	}
	fileSources := 0
	if l, ok := top["sources"].([]any); ok {
		fileSources = len(l)
	}
	var problems []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	} else {
		problems = []error{err}
	}
	out := make([]error, 0, len(problems))
	for _, p := range problems {
		out = append(out, locateOne(p, file, data, top, first, fileSources))
	}
	return errors.Join(out...)
}

func locateOne(p error, file string, data []byte, top map[string]any, first, fileSources int) error {
	head, _, ok := strings.Cut(p.Error(), ": ")
	if !ok {
		return p
	}
	field, _, _ := strings.Cut(head, " (") // a knob: "history (--history)"
	if !fieldPath.MatchString(field) {
		return p
	}
	if m := sourceIndex.FindStringSubmatch(field); m != nil {
		i, _ := strconv.Atoi(m[1])
		i -= first
		if i < 0 || i >= fileSources {
			return p
		}
		field = "sources[" + strconv.Itoa(i) + "]" + field[len(m[0]):]
	} else if name, _, _ := strings.Cut(field, "."); top[name] == nil {
		return p
	}
	line, col := render.YAMLFieldPosition(data, field)
	if line == 0 {
		return p
	}
	return fmt.Errorf("%s: %w", render.Position{File: file, Line: line, Column: col}, p)
}
