package engineio

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/revisions/kubestore"
)

// BenchmarkAPIServerCPUPerCall: the CPU kube-apiserver, etcd and the
// client spend on one API write of each shape a publication could make,
// the calls of a shape made one after the other (the server's work, not
// queueing) and the shapes interleaved, callsPerShape at a time, so that
// a change of the machine's load falls on all of them alike. It answers
// "what does the revision object's shape cost" (its resources list, its
// conditions) against the floor of any write (a small ConfigMap), which
// is what bounds a commit that changes 1 000 nodes (ThousandNodes).
func BenchmarkAPIServerCPUPerCall(b *testing.B) {
	const callsPerShape = 100
	c := apiClient(b)
	ctx := context.Background()

	seq := 0
	var records []*corev1.ConfigMap
	shapes := []struct {
		name string
		make func() client.Object
		// update, when true, writes the newest object of make again
		// changed (a record's update) instead of creating one.
		update bool
	}{
		{name: "revision", make: func() client.Object { return revisionObject(seq, false, true) }},
		{name: "revision-gzip-resources", make: func() client.Object { return revisionObject(seq, true, true) }},
		{name: "revision-no-conditions", make: func() client.Object { return revisionObject(seq, false, false) }},
		{name: "revision-no-resources", make: func() client.Object {
			obj := revisionObject(seq, false, true)
			obj.Spec.Resources = nil
			return obj
		}},
		{name: "configmap", make: func() client.Object {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("record-%d", seq), Namespace: "default"},
				Data:       map[string]string{"record": fmt.Sprintf(`{"node":%q,"revision":1,"history":[%q]}`, nodeID(seq), strings.Repeat("a", 64))},
			}
			records = append(records, cm)
			return cm
		}},
		{name: "configmap-update", update: true},
	}
	cpu := map[string]map[string]time.Duration{}
	for b.Loop() {
		for _, shape := range shapes {
			before := cpuUse()
			for range callsPerShape {
				seq++
				if shape.update {
					cm := records[len(records)-1]
					cm.Data["record"] += " "
					require.NoError(b, c.Update(ctx, cm))
					continue
				}
				require.NoError(b, c.Create(ctx, shape.make()))
			}
			after := cpuUse()
			if cpu[shape.name] == nil {
				cpu[shape.name] = map[string]time.Duration{}
			}
			for proc, d := range after {
				cpu[shape.name][proc] += d - before[proc]
			}
		}
	}
	for _, shape := range shapes {
		for proc, d := range cpu[shape.name] {
			proc = strings.NewReplacer("kube-apiserver", "apiserver").Replace(proc)
			b.ReportMetric(float64(d.Microseconds())/float64(callsPerShape*b.N), shape.name+"-"+proc+"-cpu-us/call")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// apiClient is a client of a fresh API server with legate's CRDs (the one
// kubeStore starts), which writes objects itself.
func apiClient(b *testing.B) client.Client {
	b.Helper()
	calls := &callTimes{}
	_ = kubeStore(b, calls.wrap)
	scheme := runtime.NewScheme()
	require.NoError(b, clientgoscheme.AddToScheme(scheme))
	require.NoError(b, v1alpha1.AddToScheme(scheme))
	c, err := client.New(calls.cfg, client.Options{Scheme: scheme})
	require.NoError(b, err)
	return c
}

// revisionObject is the EnvoyConfigRevision kubestore writes for one of
// ThousandNodes' node configurations (the shape of its toObject and
// setConditions: ten resources of one type, origin, published flag and
// four conditions), its resources gzip-compressed into
// spec.compressedResources when packed.
func revisionObject(seq int, packed, conditions bool) *v1alpha1.EnvoyConfigRevision {
	cfg := configOf(nodeID(seq), seq)
	v3 := "v3"
	now := metav1.Now()
	obj := &v1alpha1.EnvoyConfigRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: kubestore.RevisionName(cfg.NodeID, cfg.Hash), Namespace: "default",
			Labels: map[string]string{kubestore.LabelNode: fmt.Sprint(seq), kubestore.LabelComponent: "revision", kubestore.LabelManagedBy: "legate"},
		},
		Spec: v1alpha1.EnvoyConfigRevisionSpec{NodeID: cfg.NodeID, Hash: cfg.Hash, EnvoyAPI: &v3, CreatedAt: now},
		Status: v1alpha1.EnvoyConfigRevisionStatus{
			Origin:    &v1alpha1.RevisionOrigin{Kind: "git", Source: "bench", Ref: "main", Commit: fmt.Sprintf("%040d", seq)},
			Published: true, LastPublishedAt: &now,
		},
	}
	for url, set := range cfg.Types {
		rs := v1alpha1.RevisionResources{TypeURL: url, Hash: set.Hash}
		for _, res := range set.Resources {
			rs.Resources = append(rs.Resources, v1alpha1.RevisionResource{Name: res.Name, Body: res.Body})
		}
		obj.Spec.Resources = append(obj.Spec.Resources, rs)
	}
	if packed {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if err := json.NewEncoder(zw).Encode(obj.Spec.Resources); err == nil && zw.Close() == nil {
			obj.Spec.Resources, obj.Spec.CompressedResources = nil, buf.Bytes()
		}
	}
	if conditions {
		for _, t := range []string{v1alpha1.ConditionPublished, v1alpha1.ConditionTainted, v1alpha1.MARIN3RRevisionPublished, v1alpha1.MARIN3RRevisionTainted} {
			obj.Status.Conditions = append(obj.Status.Conditions, metav1.Condition{
				Type: t, Status: metav1.ConditionTrue, Reason: "Published", Message: fmt.Sprintf("served to the proxies of node %q", cfg.NodeID),
				LastTransitionTime: now, ObservedGeneration: 1,
			})
		}
	}
	return obj
}
