package controller_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// printerColumns is what kubectl get prints for obj: each column of the
// CRD named crd as the API server serves it, its JSONPath evaluated on
// the object the way kubectl evaluates it.
func printerColumns(t *testing.T, c client.Client, crd string, obj client.Object, kind string) map[string]string {
	t.Helper()
	ctx := context.Background()
	def := &unstructured.Unstructured{}
	def.SetAPIVersion("apiextensions.k8s.io/v1")
	def.SetKind("CustomResourceDefinition")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: crd}, def))
	versions, _, err := unstructured.NestedSlice(def.Object, "spec", "versions")
	require.NoError(t, err)
	require.NotEmpty(t, versions)
	cols, _, err := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
	require.NoError(t, err)

	u := &unstructured.Unstructured{}
	u.SetAPIVersion("legate.dev/v1alpha1")
	u.SetKind(kind)
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), u))
	out := map[string]string{}
	for _, col := range cols {
		m := col.(map[string]any)
		name, path := m["name"].(string), m["jsonPath"].(string)
		jp := jsonpath.New(name).AllowMissingKeys(true)
		require.NoError(t, jp.Parse(fmt.Sprintf("{%s}", path)), name)
		var b bytes.Buffer
		require.NoError(t, jp.Execute(&b, u.Object), name)
		out[name] = b.String()
	}
	return out
}

// kubectl get envoyconfigs says what legate status says: Pending while no
// proxy is connected (not MARIN3R's InSync), and, after an edit that
// validation refuses, Rejected with READY False and the reason.
func TestKubectlGetColumnsAgreeWithLegateStatus(t *testing.T) {
	t.Parallel()
	c, _ := run(t)
	ctx := context.Background()
	ec := sample(t)
	require.NoError(t, c.Create(ctx, ec))

	var cols map[string]string
	require.Eventually(t, func() bool {
		cols = printerColumns(t, c, "envoyconfigs.legate.dev", ec, "EnvoyConfig")
		return cols["Ready"] == "True"
	}, 60*time.Second, 50*time.Millisecond, "the EnvoyConfig becomes ready")
	assert.Equal(t, "Pending", cols["State"], "no proxy is connected: %v", cols)
	assert.Equal(t, "Succeeded", cols["Reason"])
	assert.Equal(t, "InSync", cols["Cache"], "MARIN3R's cacheState stays, in -o wide")
	assert.Equal(t, "edge", cols["Node"])

	// kubectl get ecr says True or False, never a blank column for a
	// revision that is not tainted.
	var revs v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(ctx, &revs))
	require.Len(t, revs.Items, 1)
	revCols := printerColumns(t, c, "envoyconfigrevisions.legate.dev", &revs.Items[0], "EnvoyConfigRevision")
	assert.Equal(t, "True", revCols["Published"], "%v", revCols)
	assert.Equal(t, "False", revCols["Tainted"], "%v", revCols)

	got := get(t, c, ec)
	got.Spec.Resources[0].Value.Raw = []byte(`{"name":"backend","type":"STRICT_DNS","connect_timeout":"-1s"}`)
	require.NoError(t, c.Update(ctx, got))
	require.Eventually(t, func() bool {
		cols = printerColumns(t, c, "envoyconfigs.legate.dev", ec, "EnvoyConfig")
		return cols["Ready"] == "False"
	}, 60*time.Second, 50*time.Millisecond, "the refused update is reported")
	assert.Equal(t, "Rejected", cols["State"], "not InSync after a refused update: %v", cols)
	assert.Equal(t, "ValidationFailed", cols["Reason"])

	def := &unstructured.Unstructured{}
	def.SetAPIVersion("apiextensions.k8s.io/v1")
	def.SetKind("CustomResourceDefinition")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "envoysources.legate.dev"}, def))
	versions, _, _ := unstructured.NestedSlice(def.Object, "spec", "versions")
	srcCols, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
	var names []string
	for _, col := range srcCols {
		names = append(names, col.(map[string]any)["name"].(string))
	}
	assert.Subset(t, names, []string{"Ready", "Reason"}, "EnvoySource prints READY and REASON")
}
