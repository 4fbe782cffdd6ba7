package webhook

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const askingPod = `apiVersion: v1
kind: Pod
metadata:
  name: shop
  labels: {legate.dev/inject: enabled}
  annotations: {legate.dev/node-id: shop-edge}
spec:
  containers: [{name: shop, image: "shop:1"}]
`

// An error names the document by its number, its object and the field of
// the pod template; a Pod's own fields are "the pod".
func TestInjectManifestsNamesWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{
			name: "third document, a Pod",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" + askingPod + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec: {containerz: []}\n",
			want: `document 3 (Pod broken): the pod: json: unknown field "containerz"`,
		},
		{
			name: "a Deployment's template",
			in:   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shop}\nspec:\n  template:\n    spec: {containerz: []}\n",
			want: `document 1 (Deployment shop): spec.template: json: unknown field "containerz"`,
		},
		{
			name: "a List's item that is no object",
			in:   "apiVersion: v1\nkind: List\nitems: [x]\n",
			want: "document 1 (List items[0]): not a Kubernetes object",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := testInjector().InjectManifests(strings.NewReader(tc.in), &out)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// The pods of a List's items are injected like any other.
func TestInjectManifestsInjectsListItems(t *testing.T) {
	in := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(askingPod, "\n"), "\n", "\n  ") + "\n"
	var out bytes.Buffer
	require.NoError(t, testInjector().InjectManifests(strings.NewReader(in), &out))
	assert.Contains(t, out.String(), "name: "+DefaultContainerName)
	assert.Contains(t, out.String(), InjectedAnnotation)
}
