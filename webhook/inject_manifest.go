package webhook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// templatePaths says where each kind that makes pods keeps its pod
// template, by apiVersion and kind; the Pod is its own template.
var templatePaths = map[string][]string{
	"v1/Pod":                   {},
	"apps/v1/Deployment":       {"spec", "template"},
	"apps/v1/StatefulSet":      {"spec", "template"},
	"apps/v1/DaemonSet":        {"spec", "template"},
	"apps/v1/ReplicaSet":       {"spec", "template"},
	"batch/v1/Job":             {"spec", "template"},
	"batch/v1/CronJob":         {"spec", "jobTemplate", "spec", "template"},
	"v1/ReplicationController": {"spec", "template"},
}

// InjectManifests copies Kubernetes manifests (YAML or JSON, several
// documents) from r to w as YAML documents, with the sidecar injected into
// every Pod and pod template that asks for one, as the webhook would
// inject it. Documents of other kinds, and those whose pods do not ask,
// are written as they were read; empty documents are dropped. An error
// names the document (from 1), its kind and name.
func (in Injector) InjectManifests(r io.Reader, w io.Writer) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out bytes.Buffer
	written := 0
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", n, err)
		}
		data, err := in.injectDocument(doc)
		if err != nil {
			var de *docError
			if errors.As(err, &de) && de.where != "" {
				return fmt.Errorf("document %d (%s): %w", n, de.where, de.err)
			}
			return fmt.Errorf("document %d: %w", n, err)
		}
		if data == nil {
			continue
		}
		if written > 0 {
			out.WriteString("---\n")
		}
		out.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			out.WriteByte('\n')
		}
		written++
	}
	_, err := w.Write(out.Bytes())
	return err
}

// docError is an error in one object of a document, and which: "Kind
// name", or "List items[i]: Kind name".
type docError struct {
	where string
	err   error
}

func (de *docError) Error() string { return de.where + ": " + de.err.Error() }

func (de *docError) Unwrap() error { return de.err }

// injectDocument is doc with its pods injected, doc itself when nothing
// asks, nil when it is empty.
func (in Injector) injectDocument(doc []byte) ([]byte, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var obj any
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, nil
	}
	m, ok := obj.(map[string]any)
	if !ok {
		return nil, errors.New("not a Kubernetes object")
	}
	changed, err := in.injectObject(m)
	if err != nil {
		var de *docError
		if errors.As(err, &de) {
			return nil, err
		}
		return nil, &docError{where: describe(m), err: err}
	}
	if !changed {
		return doc, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(data)
}

// injectObject injects the pods of one object, or of every item of a
// List, in place.
func (in Injector) injectObject(m map[string]any) (bool, error) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "v1" && kind == "List" {
		items, _ := m["items"].([]any)
		changed := false
		for i, item := range items {
			im, ok := item.(map[string]any)
			if !ok {
				return false, &docError{where: fmt.Sprintf("List items[%d]", i), err: errors.New("not a Kubernetes object")}
			}
			c, err := in.injectObject(im)
			if err != nil {
				return false, &docError{where: fmt.Sprintf("List items[%d]: %s", i, describe(im)), err: err}
			}
			changed = changed || c
		}
		return changed, nil
	}
	path, ok := templatePaths[apiVersion+"/"+kind]
	if !ok {
		return false, nil
	}
	tmpl := m
	for i, key := range path {
		next, ok := tmpl[key].(map[string]any)
		if !ok {
			return false, fmt.Errorf("%s is missing", strings.Join(path[:i+1], "."))
		}
		tmpl = next
	}
	field := strings.Join(path, ".")
	if field == "" {
		field = "the pod"
	}
	return in.injectTemplate(tmpl, field)
}

// injectTemplate injects the pod template (or Pod) m in place: its
// metadata and spec are decoded strictly, so that a misspelt field is an
// error rather than dropped.
func (in Injector) injectTemplate(m map[string]any, field string) (bool, error) {
	data, err := json.Marshal(map[string]any{"metadata": m["metadata"], "spec": m["spec"]})
	if err != nil {
		return false, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tmpl corev1.PodTemplateSpec
	if err := dec.Decode(&tmpl); err != nil {
		return false, fmt.Errorf("%s: %w", field, err)
	}
	pod := corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	if _, injected, err := in.Inject(&pod); err != nil || !injected {
		return false, err
	}
	data, err = json.Marshal(corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec})
	if err != nil {
		return false, err
	}
	var injected map[string]any
	if err := json.Unmarshal(data, &injected); err != nil {
		return false, err
	}
	m["metadata"], m["spec"] = injected["metadata"], injected["spec"]
	return true, nil
}

// describe is "Kind name" of an object.
func describe(m map[string]any) string {
	kind, _ := m["kind"].(string)
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		if gen, _ := meta["generateName"].(string); gen != "" {
			name = gen + "*"
		}
	}
	return strings.TrimSpace(kind + " " + name)
}
