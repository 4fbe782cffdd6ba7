package controller_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/webhook"
)

// bombEnvoyConfig is the EnvoyConfig of issue 23's third finding: a few
// hundred bytes whose cluster, a YAML string in MARIN3R's envoyResources,
// holds an alias bomb of 8^10 values in its metadata.
func bombEnvoyConfig(namespace, name string) *v1alpha1.EnvoyConfig {
	var b strings.Builder
	b.WriteString("name: bomb\nconnect_timeout: 1s\nmetadata:\n  filter_metadata:\n    x:\n")
	fmt.Fprintf(&b, "      a0: &a0 [%s]\n", strings.TrimSuffix(strings.Repeat("1,", 8), ","))
	for l := 1; l <= 9; l++ {
		fmt.Fprintf(&b, "      a%d: &a%d [%s]\n", l, l, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", l-1), 8), ","))
	}
	yamlSer := "yaml"
	return &v1alpha1.EnvoyConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "EnvoyConfig"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.EnvoyConfigSpec{NodeID: name, Serialization: &yamlSer, EnvoyResources: &v1alpha1.EnvoyResources{
			Clusters: []v1alpha1.EnvoyResource{{Value: b.String()}},
		}},
	}
}

// heapDuring runs fn and returns the peak of the process's live heap
// objects while it ran (sampled every millisecond) and what the process
// allocated meanwhile (an upper bound of how far the heap could grow).
func heapDuring(fn func()) (peak, alloc uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var top atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		defer close(stopped)
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	<-stopped
	runtime.ReadMemStats(&after)
	return top.Load(), after.TotalAlloc - before.TotalAlloc
}

// The attack of issue 23 (finding 3) through the real API server and
// straight to the webhook port: one kubectl apply of a 700-byte
// EnvoyConfig took the controller from 92 MB to 1 GB, four 1 KB reviews
// to 3.5 GB. Each is refused by the render's budget, naming the document,
// line and field, and the controller's heap stays far under the
// Deployment's 256 MiB; afterwards admission still answers (its slots
// were given back).
func TestHostileEnvoyConfigsKeepTheControllerBounded(t *testing.T) {
	t.Parallel()
	c, cluster, _ := admitted(t, nil)
	ctx := context.Background()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(cluster.Webhooks.CAPEM))
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	raw, err := json.Marshal(bombEnvoyConfig("team-b", "direct"))
	require.NoError(t, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "bomb", Kind: metav1.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: "v1alpha1", Kind: "EnvoyConfig"},
			Resource:  metav1.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: "v1alpha1", Resource: "envoyconfigs"},
			Namespace: "team-b", Name: "direct", Operation: admissionv1.Create,
		},
	})
	require.NoError(t, err)
	body = bytes.Replace(body, []byte(`"operation":"CREATE"`), append([]byte(`"operation":"CREATE","object":`), raw...), 1)
	t.Logf("the review is %d bytes, the object %d", len(body), len(raw))

	var applied string
	answers := make([]*admissionv1.AdmissionResponse, 4)
	peak, alloc := heapDuring(func() {
		applied = refusal(t, c.Create(ctx, bombEnvoyConfig("default", "bomb")))
		var wg sync.WaitGroup
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := hc.Post("https://"+cluster.Webhooks.Addr+webhook.ValidateEnvoyConfigsPath, "application/json", bytes.NewReader(body))
				if !assert.NoError(t, err) {
					return
				}
				defer func() { _ = resp.Body.Close() }()
				var out admissionv1.AdmissionReview
				if assert.NoError(t, json.NewDecoder(resp.Body).Decode(&out)) {
					answers[i] = out.Response
				}
			}()
		}
		wg.Wait()
	})
	t.Logf("during one apply and four direct reviews: heap peak %d MiB, %d MiB allocated", peak>>20, alloc>>20)

	assert.Contains(t, applied, "EnvoyConfig default/bomb is refused by validation")
	assert.Contains(t, applied, "EnvoyConfig default/bomb spec.", "the refusal names the object and the field path in it")
	assert.Contains(t, applied, "metadata.filter_metadata.x.", "the refusal names the field")
	assert.Contains(t, applied, "expands to more than its budget")
	for i, a := range answers {
		if assert.NotNil(t, a, "review %d answered", i) {
			assert.False(t, a.Allowed)
			assert.Contains(t, a.Result.Message, "expands to more than its budget")
		}
	}
	assert.Less(t, alloc, uint64(256<<20), "the controller allocated %d MiB for the attack", alloc>>20)
	assert.Less(t, peak, uint64(256<<20), "the heap peaked at %d MiB", peak>>20)

	require.NoError(t, c.Create(ctx, sample(t)), "admission still answers: the slots were given back")
}
