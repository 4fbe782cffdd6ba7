package helm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// chartDir is charts/legate from this package's directory.
var chartDir = filepath.Join("..", "..", "charts", "legate")

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	require.NoError(t, err, "load %s", chartDir)
	return c
}

// renderChart is helm template: the chart's templates with values over its
// defaults, checked against values.schema.json, for a release in
// namespace. It returns the templates' objects in file order; the CRDs
// (which helm installs before them) are crds().
func renderChart(t *testing.T, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	c := loadChart(t)
	vals, err := chartutil.ToRenderValues(c, values, chartutil.ReleaseOptions{
		Name: "legate", Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, helpers
		}
		objs = append(objs, decode(t, name, []byte(files[name]))...)
	}
	return objs, nil
}

// crds are the chart's crds/ files as objects.
func crds(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, f := range loadChart(t).CRDObjects() {
		objs = append(objs, decode(t, f.Filename, f.File.Data)...)
	}
	return objs
}

// decode splits a rendered file into its objects, skipping documents
// that are empty (a template whose condition is off).
func decode(t *testing.T, name string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for i, doc := range bytes.Split(data, []byte("\n---")) {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &m), "%s: document %d:\n%s", name, i+1, doc)
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// find returns the one object of kind and name among objs, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func kinds(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func readFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(parts...))
	require.NoError(t, err)
	return data
}

// container is the first container of a Deployment's Pod template.
func container(t *testing.T, deployment map[string]any) map[string]any {
	t.Helper()
	spec, ok := deployment["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	require.True(t, ok)
	cs, ok := spec["containers"].([]any)
	require.True(t, ok)
	require.NotEmpty(t, cs)
	return cs[0].(map[string]any)
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
