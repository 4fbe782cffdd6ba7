package v1alpha1_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spec.previews is refused by the API server without what a preview
// needs: a branch the pull requests target and a forge to ask and tell;
// its concurrency is bounded.
func TestPreviewsNeedABranchAndAForge(t *testing.T) {
	cluster, ns := apiServer.Namespace(t)
	c := cluster.Client
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(spec map[string]any)
		refuse string
	}{
		{name: "ok", change: func(map[string]any) {}},
		{name: "no-forge", change: func(s map[string]any) { delete(s, "commitStatus") }, refuse: "spec.previews.enabled needs spec.git with ref.branch"},
		{name: "a-tag", change: func(s map[string]any) { s["git"].(map[string]any)["ref"] = map[string]any{"tag": "v1"} }, refuse: "spec.previews.enabled needs spec.git with ref.branch"},
		{name: "off-without-forge", change: func(s map[string]any) {
			delete(s, "commitStatus")
			s["previews"] = map[string]any{"enabled": false}
		}},
		{name: "too-many", change: func(s map[string]any) { s["previews"] = map[string]any{"enabled": true, "concurrency": 9} }, refuse: "spec.previews.concurrency"},
	} {
		u := readSample(t, ns, "envoysource-git.yaml")
		u.SetName(tc.name)
		spec := u.Object["spec"].(map[string]any)
		spec["previews"] = map[string]any{"enabled": true}
		tc.change(spec)
		err := c.Create(ctx, u)
		if tc.refuse == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.refuse, tc.name)
	}
}
