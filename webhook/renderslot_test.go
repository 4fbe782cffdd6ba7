package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/legate-dev/legate/render"
)

// fakeRender answers at once, as an admission render answered at its
// limit does, and stops only when the test says.
type fakeRender struct {
	stop chan struct{}
	ran  int
}

func (f *fakeRender) run(context.Context) (*render.Result, <-chan struct{}) {
	f.ran++
	return &render.Result{Diagnostics: []render.Diagnostic{{Rule: render.RuleLimit, Message: "rendering did not finish within 10s"}}}, f.stop
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// An admission slot is held until its render has stopped, not released
// when admission answers: renders given up on at their limit cannot pile
// up past admissionRenders, each holding its memory.
func TestAdmissionSlotIsHeldUntilTheRenderStops(t *testing.T) {
	slots := newRenderSlots(admissionRenders, admissionRenders)
	renders := make([]*fakeRender, admissionRenders)
	for i := range renders {
		renders[i] = &fakeRender{stop: make(chan struct{})}
		res, err := renderInSlot(context.Background(), slots, "10.0.0.1", renders[i].run)
		require.NoError(t, err)
		assert.Equal(t, render.RuleLimit, res.Diagnostics[0].Rule, "admission answered")
	}
	assert.Equal(t, admissionRenders, slots.running(), "every answered render still holds its slot")

	// A third admission waits for a slot; its deadline passes first.
	third := &fakeRender{stop: make(chan struct{})}
	_, err := renderInSlot(cancelled(), slots, "10.0.0.1", third.run)
	require.ErrorIs(t, err, errBusy)
	assert.Zero(t, third.ran, "no render starts without a slot")

	// The first render stops: its slot is free, and only that one.
	close(renders[0].stop)
	require.Eventually(t, func() bool { return slots.running() == admissionRenders-1 }, 10*time.Second, time.Millisecond)
	res, err := renderInSlot(cancelled(), slots, "10.0.0.1", third.run)
	require.NoError(t, err, "a free slot is taken even by a review at its deadline")
	assert.NotNil(t, res)
	assert.Equal(t, 1, third.ran)
	_, err = renderInSlot(cancelled(), slots, "10.0.0.1", (&fakeRender{}).run)
	require.ErrorIs(t, err, errBusy, "the slot of a render still running was not freed")
	close(renders[1].stop)
	close(third.stop)
	require.Eventually(t, func() bool { return slots.running() == 0 }, 10*time.Second, time.Millisecond)
}

// One client cannot hold every slot: whoever reaches the port may send
// reviews, and the API server's must still find one.
func TestOneClientCannotTakeEverySlot(t *testing.T) {
	slots := newRenderSlots(admissionRenders, admissionRendersPerPeer)
	var held []*fakeRender
	for range admissionRendersPerPeer {
		f := &fakeRender{stop: make(chan struct{})}
		held = append(held, f)
		_, err := renderInSlot(context.Background(), slots, "203.0.113.9", f.run)
		require.NoError(t, err)
	}
	_, err := renderInSlot(cancelled(), slots, "203.0.113.9", (&fakeRender{}).run)
	require.ErrorIs(t, err, errBusy, "the client holds its share")

	api := &fakeRender{stop: make(chan struct{})}
	_, err = renderInSlot(cancelled(), slots, "10.0.0.1", api.run)
	require.NoError(t, err, "another client finds a slot at once")
	close(api.stop)

	// A review of the client waits for its own render to stop, and no
	// longer.
	next := &fakeRender{stop: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := renderInSlot(ctx, slots, "203.0.113.9", next.run)
		done <- err
	}()
	for _, f := range held {
		close(f.stop)
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("a freed slot did not wake the review waiting for it")
	}
	close(next.stop)
}

// A review is bounded by the timeout the API server sends with it (less a
// margin for the answer), 10 s when it sends none, 30 s at most, counted
// from its arrival: the request's own context lasts as long as its client
// keeps the connection. The validator sees the client's address.
func TestReviewIsBoundedByTheAPIServersTimeout(t *testing.T) {
	var deadline time.Time
	var peer string
	s := &Server{EnvoyConfigs: func(ctx context.Context, _ *admissionv1.AdmissionRequest) error {
		deadline, _ = ctx.Deadline()
		peer = peerOf(ctx)
		return nil
	}, Log: logr.Discard()}
	req := &admissionv1.AdmissionRequest{UID: "uid-1", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}
	for query, want := range map[string]time.Duration{
		"?timeout=3s": 3*time.Second - reviewMargin,
		"":            defaultReviewTimeout - reviewMargin,
		"?timeout=5m": maxReviewTimeout - reviewMargin,
		"?timeout=x":  defaultReviewTimeout - reviewMargin,
	} {
		deadline, peer = time.Time{}, ""
		before := time.Now()
		resp := answerOf(t, post(t, s.Handler(), ValidateEnvoyConfigsPath+query, "application/json", review(t, req)))
		after := time.Now()
		require.True(t, resp.Allowed)
		require.False(t, deadline.IsZero(), "%q: the review has a deadline", query)
		assert.False(t, deadline.Before(before.Add(want)), "%q: deadline %s, want %s after arrival", query, deadline.Sub(before), want)
		assert.False(t, deadline.After(after.Add(want)), "%q: deadline %s, want %s after arrival", query, deadline.Sub(before), want)
		assert.Equal(t, "192.0.2.1", peer, "httptest's client address")
	}
}

// Through the webhook's handler: a client that keeps a render running
// and sends another review is answered busy at that review's deadline,
// while a review from another address renders at once.
func TestHostileClientDoesNotStarveTheAPIServer(t *testing.T) {
	slots := newRenderSlots(admissionRenders, admissionRendersPerPeer)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	var mu sync.Mutex
	ran := map[string]int{}
	s := &Server{EnvoyConfigs: func(ctx context.Context, _ *admissionv1.AdmissionRequest) error {
		_, err := renderInSlot(ctx, slots, peerOf(ctx), func(context.Context) (*render.Result, <-chan struct{}) {
			mu.Lock()
			ran[peerOf(ctx)]++
			mu.Unlock()
			return &render.Result{}, stop // answers, and keeps its slot
		})
		return err
	}, Log: logr.Discard()}
	req := &admissionv1.AdmissionRequest{UID: "uid-1", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}
	from := func(addr string) *admissionv1.AdmissionResponse {
		r := httptest.NewRequest(http.MethodPost, ValidateEnvoyConfigsPath+"?timeout=1s", bytes.NewReader(review(t, req)))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Handler().ServeHTTP(w, r)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("the review from %s was not answered within 20s: is the review's deadline broken?", addr)
		}
		return answerOf(t, w)
	}
	assert.True(t, from("203.0.113.9:40000").Allowed)
	busy := from("203.0.113.9:40001")
	assert.False(t, busy.Allowed)
	assert.Contains(t, busy.Result.Message, "legate is busy")
	assert.True(t, from("10.0.0.1:50000").Allowed, "the API server's review renders")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"203.0.113.9": 1, "10.0.0.1": 1}, ran)
}

// A review that arrives before the home can decide (its caches still
// filling) waits for it within the review's deadline: decided once the
// home is ready, refused with a message that says why when the deadline
// comes first, and never decided from the reads that would fail.
func TestReviewWaitsUntilTheHomeIsReady(t *testing.T) {
	ready := make(chan struct{})
	waiting := make(chan struct{}, 4)
	var decided atomic.Int32
	s := &Server{
		EnvoyConfigs: func(context.Context, *admissionv1.AdmissionRequest) error {
			decided.Add(1)
			return nil
		},
		Ready: func(ctx context.Context) bool {
			waiting <- struct{}{}
			select {
			case <-ready:
				return true
			case <-ctx.Done():
				return false
			}
		},
		Log: logr.Discard(),
	}
	req := &admissionv1.AdmissionRequest{UID: "uid-1", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}

	// Never ready within a 1 s deadline (?timeout=2s less the margin).
	late := answerOf(t, post(t, s.Handler(), ValidateEnvoyConfigsPath+"?timeout=2s", "application/json", review(t, req)))
	assert.False(t, late.Allowed)
	assert.Equal(t, int32(http.StatusServiceUnavailable), late.Result.Code)
	assert.Contains(t, late.Result.Message, "legate has just started and cannot decide yet")
	assert.Zero(t, decided.Load(), "nothing is decided before the home is ready")
	<-waiting

	// Ready while the review waits: it is decided then.
	answered := make(chan *httptest.ResponseRecorder, 1)
	body := review(t, req)
	go func() {
		r := httptest.NewRequest(http.MethodPost, ValidateEnvoyConfigsPath+"?timeout=30s", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		answered <- w
	}()
	select {
	case <-waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("the review did not wait for the home within 20 s")
	}
	assert.Zero(t, decided.Load(), "the review waits, undecided")
	close(ready)
	select {
	case w := <-answered:
		assert.True(t, answerOf(t, w).Allowed)
	case <-time.After(20 * time.Second):
		t.Fatal("the review was not answered within 20 s of the home being ready")
	}
	assert.Equal(t, int32(1), decided.Load())
}
