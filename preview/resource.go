package preview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/render"
)

// maxDiffInput bounds the lines of one resource fed to the diff: the
// matcher's cost grows faster than the input, and a resource this long is
// not read line by line by a reviewer anyway.
const maxDiffInput = 5000

// diff is the bounded diff of one resource between its base and head
// versions; either may be nil (added or removed).
func (c *comparer) diff(url string, b, h *render.Resource) ResourceDiff {
	d := ResourceDiff{}
	switch {
	case b == nil:
		d.Name, d.Change, d.Source = h.Name, Added, c.sourceOf(h)
	case h == nil:
		d.Name, d.Change, d.Source = b.Name, Removed, c.sourceOf(b)
	default:
		d.Name, d.Change, d.Source = h.Name, Changed, c.sourceOf(h)
	}
	if url == render.SecretType {
		d.Note = "secret: key material not shown"
		return d
	}
	if c.budget <= 0 {
		c.omitted++
		d.Note = "diff left out: the report reached its size bound"
		return d
	}
	var left, right []string
	if b != nil {
		left = resourceLines(url, b.Body)
	}
	if h != nil {
		right = resourceLines(url, h.Body)
	}
	if len(left) > maxDiffInput || len(right) > maxDiffInput {
		d.Note = fmt.Sprintf("diff left out: the resource has more than %d lines", maxDiffInput)
		return d
	}
	kind := shortType(url)
	text, omitted := UnifiedDiff(left, right, c.opts.BaseLabel+" "+kind+" "+d.Name, c.opts.HeadLabel+" "+kind+" "+d.Name, c.opts.MaxDiffLines)
	if len(text) > c.budget {
		c.omitted++
		d.Note = "diff left out: the report reached its size bound"
		return d
	}
	c.budget -= len(text)
	d.Diff, d.LinesOmitted = text, omitted
	return d
}

func (c *comparer) sourceOf(r *render.Resource) string {
	if p := r.Source.InDir(c.opts.Dir).String(); p != "-" {
		return p
	}
	return ""
}

// UnifiedDiff is the unified diff (three lines of context) of two texts
// split in lines (each ending in "\n"), cut after maxLines lines when
// maxLines > 0; it returns the number of lines cut. Equal texts give "".
func UnifiedDiff(a, b []string, fromLabel, toLabel string, maxLines int) (string, int) {
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: a, B: b, FromFile: fromLabel, ToFile: toLabel, Context: 3,
	})
	if err != nil {
		// difflib fails only when its writer does, and a strings.Builder
		// does not.
		return "", 0
	}
	if maxLines <= 0 {
		return text, 0
	}
	n := 0
	for i := range len(text) {
		if text[i] != '\n' {
			continue
		}
		n++
		if n == maxLines {
			rest := strings.Count(text[i+1:], "\n")
			return text[:i+1], rest
		}
	}
	return text, 0
}

// resourceLines is a resource as YAML with Envoy's field names (keys
// sorted, as legate get shows it), split in lines for the diff.
func resourceLines(url string, body []byte) []string {
	return Lines(ResourceYAML(url, body))
}

// Lines splits text in lines that keep their "\n", as UnifiedDiff takes
// them; a last line without one gets it.
func Lines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		return lines[:len(lines)-1]
	}
	lines[len(lines)-1] += "\n"
	return lines
}

// ResourceYAML is a resource as YAML with Envoy's (protobuf) field names,
// every field Envoy marks sensitive cleared; an SDS secret gives only a
// note. A type this build does not know, or a body that does not decode,
// gives a note instead.
func ResourceYAML(url string, body []byte) string {
	if url == render.SecretType {
		return "# secret: key material not shown\n"
	}
	js, err := ResourceJSON(url, body, protojson.MarshalOptions{UseProtoNames: true})
	if err != nil {
		return "# " + err.Error() + "\n"
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return "# cannot print: " + err.Error() + "\n"
	}
	return string(y)
}

// ResourceJSON decodes a resource's canonical body and prints it with
// opts, after clearing every field Envoy marks sensitive. The output is
// compact. It refuses an SDS secret.
func ResourceJSON(url string, body []byte, opts protojson.MarshalOptions) (json.RawMessage, error) {
	if url == render.SecretType {
		return nil, fmt.Errorf("%s: key material not shown", shortType(url))
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err != nil {
		return nil, fmt.Errorf("type %s not known to this build", url)
	}
	msg := mt.New().Interface()
	if err := proto.Unmarshal(body, msg); err != nil {
		return nil, fmt.Errorf("cannot decode a %s: %w", shortType(url), err)
	}
	redactSensitive(msg.ProtoReflect())
	if opts.Resolver == nil {
		opts.Resolver = protoregistry.GlobalTypes
	}
	out, err := opts.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("cannot print a %s: %w", shortType(url), err)
	}
	// protojson's whitespace is deliberately unstable: compact it.
	var b bytes.Buffer
	if err := json.Compact(&b, out); err != nil {
		return out, nil
	}
	return b.Bytes(), nil
}
