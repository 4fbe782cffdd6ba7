package kubepki

import (
	"context"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/legate-dev/legate/pki"
)

// renewal is a fake API server holding proxy Secrets issued at t0 for
// 30 h, and an authority whose clock is at t0 + 20 h, when they are due.
type renewal struct {
	a     *Authority
	store client.WithWatch
	clk   *clocktesting.FakePassiveClock
	funcs interceptor.Funcs
}

func newRenewal(t *testing.T, secrets ...types.NamespacedName) *renewal {
	t.Helper()
	r := &renewal{store: fake.NewClientBuilder().Build(), clk: clocktesting.NewFakePassiveClock(t0)}
	r.a = &Authority{CA: testSigner(t).ca, Client: interceptor.NewClient(r.store, r.intercept()), Clock: r.clk, Validity: 30 * time.Hour, Log: logr.Discard()}
	for _, key := range secrets {
		require.NoError(t, r.a.EnsureProxy(context.Background(), key.Namespace, key.Name, "edge", false))
	}
	r.clk.SetTime(t0.Add(20 * time.Hour))
	return r
}

// intercept calls r.funcs when set, so that a test may change them.
func (r *renewal) intercept() interceptor.Funcs {
	return interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if r.funcs.List != nil {
				return r.funcs.List(ctx, c, list, opts...)
			}
			return c.List(ctx, list, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if r.funcs.Update != nil {
				return r.funcs.Update(ctx, c, obj, opts...)
			}
			return c.Update(ctx, obj, opts...)
		},
	}
}

func (r *renewal) resourceVersion(t *testing.T, key types.NamespacedName) string {
	t.Helper()
	var s corev1.Secret
	require.NoError(t, r.store.Get(context.Background(), key, &s))
	return s.ResourceVersion
}

var (
	shopCert  = types.NamespacedName{Namespace: "shop", Name: "edge-cert"}
	teamBCert = types.NamespacedName{Namespace: "team-b", Name: "edge-cert"}
)

// An authority limited to a namespace renews only there.
func TestRenewDueKeepsToItsNamespace(t *testing.T) {
	r := newRenewal(t, shopCert, teamBCert)
	before := r.resourceVersion(t, teamBCert)
	r.a.Namespace = "shop"
	_, renewed, err := r.a.RenewDue(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, renewed)
	assert.Equal(t, before, r.resourceVersion(t, teamBCert), "another namespace's Secret is left alone")

	r.a.Namespace = ""
	_, renewed, err = r.a.RenewDue(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, renewed, "all namespaces: the other one, the first is renewed already")
}

// A Secret that cannot be renewed is reported and does not stop the pass.
func TestRenewDueReportsWhatItCannotRenew(t *testing.T) {
	r := newRenewal(t, shopCert)
	stray := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "stray", Labels: map[string]string{LabelCertificate: KindProxy}},
		Type:       corev1.SecretTypeTLS,
	}
	require.NoError(t, r.store.Create(context.Background(), stray))
	_, renewed, err := r.a.RenewDue(context.Background())
	assert.ErrorContains(t, err, "the Secret shop/stray is labelled legate.dev/certificate=proxy but names no node ID")
	assert.Equal(t, 1, renewed, "the other Secret is renewed")
}

// What a failed write means for the next pass: a Secret deleted or
// written meanwhile is not an error (written: look again now), another
// failure is one, tried again in half a minute.
func TestRenewDueAfterAFailedWrite(t *testing.T) {
	now := t0.Add(20 * time.Hour)
	for _, tc := range []struct {
		name string
		err  error
		next time.Time
		fail bool
	}{
		{name: "deleted", err: apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "edge-cert"), next: time.Time{}},
		{name: "written meanwhile", err: apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "edge-cert", errors.New("changed")), next: now},
		{name: "refused", err: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "edge-cert", errors.New("no")), next: now.Add(retryAfter), fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRenewal(t, shopCert)
			r.funcs.Update = func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error { return tc.err }
			next, renewed, err := r.a.RenewDue(context.Background())
			assert.Equal(t, tc.next, next)
			assert.Zero(t, renewed)
			if tc.fail {
				assert.ErrorContains(t, err, "renew the proxy Secret shop/edge-cert")
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// A pass that outlives its list's snapshot (410 Gone on a later page)
// starts again from the first page, twice at most; an expired first
// page is an error.
func TestRenewDueStartsAgainWhenItsListExpires(t *testing.T) {
	expired := apierrors.NewResourceExpired("the continue token is too old")
	for _, tc := range []struct {
		name    string
		expire  int // how many times the second page is gone
		first   bool
		pages   []string // the Continue tokens asked for, in order
		renewed int
		err     string
	}{
		{name: "no expiry", pages: []string{"", "page-2"}, renewed: 2},
		{name: "once", expire: 1, pages: []string{"", "page-2", "", "page-2"}, renewed: 2},
		{name: "twice", expire: 2, pages: []string{"", "page-2", "", "page-2", "", "page-2"}, renewed: 2},
		{name: "three times", expire: 3, pages: []string{"", "page-2", "", "page-2", "", "page-2"}, renewed: 1, err: "list the proxy Secrets: the continue token is too old"},
		{name: "the first page", first: true, pages: []string{""}, err: "list the proxy Secrets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRenewal(t, shopCert, teamBCert)
			var asked []string
			gone := 0
			r.funcs.List = func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				var o client.ListOptions
				o.ApplyOptions(opts)
				asked = append(asked, o.Continue)
				if o.Continue == "" && tc.first {
					return expired
				}
				if o.Continue != "" && gone < tc.expire {
					gone++
					return expired
				}
				all := &corev1.SecretList{}
				if err := c.List(ctx, all, opts...); err != nil {
					return err
				}
				// One Secret a page: shop's, then team-b's.
				page := list.(*corev1.SecretList)
				if o.Continue == "" {
					page.Items, page.Continue = all.Items[:1], "page-2"
				} else {
					page.Items = all.Items[1:]
				}
				return nil
			}
			_, renewed, err := r.a.RenewDue(context.Background())
			assert.Equal(t, tc.pages, asked)
			assert.Equal(t, tc.renewed, renewed)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// A certificate no longer than the backdate (not legate's) counts its
// two thirds from NotBefore.
func TestRenewAfterOfACertificateAsLongAsTheBackdate(t *testing.T) {
	c := &x509.Certificate{NotBefore: t0, NotAfter: t0.Add(pki.Backdate)}
	assert.Equal(t, t0.Add(pki.Backdate/3*2), renewAfter(c))
}

// A certificate issued for a new proxy moves Run's next pass only when it
// is due before that pass: a burst of new proxies (a rollout) makes Run
// list nothing, since a pass reads and checks every proxy Secret.
func TestIssuingMovesThePassOnlyWhenDueBeforeIt(t *testing.T) {
	ctx := context.Background()
	r := newRenewal(t)
	now := r.clk.Now()
	dueOf := func(name string) time.Time {
		t.Helper()
		var s corev1.Secret
		require.NoError(t, r.store.Get(ctx, types.NamespacedName{Namespace: "shop", Name: name}, &s))
		due, err := time.Parse(time.RFC3339, s.Annotations[AnnotationRenewAfter])
		require.NoError(t, err)
		return due
	}

	planned := now.Add(time.Hour)
	require.NoError(t, r.a.EnsureProxy(ctx, "shop", "a-cert", "a", false))
	require.True(t, dueOf("a-cert").After(planned), "a 30 h certificate is due in about 20 h")
	assert.Equal(t, planned, r.a.rearm(planned), "due after the planned pass: the pass stays")

	later := now.Add(48 * time.Hour)
	require.NoError(t, r.a.EnsureProxy(ctx, "shop", "b-cert", "b", false))
	r.clk.SetTime(now.Add(time.Minute))
	require.NoError(t, r.a.EnsureProxy(ctx, "shop", "c-cert", "c", false))
	require.True(t, dueOf("b-cert").Before(dueOf("c-cert")))
	assert.Equal(t, dueOf("b-cert"), r.a.rearm(later), "due before the planned pass: the earliest of the new ones")
	assert.Equal(t, later, r.a.rearm(later), "each issue is told once")
}

// Run's wait ends early for a certificate due before its planned pass.
func TestSleepEndsForACertificateDueFirst(t *testing.T) {
	r := newRenewal(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woke := make(chan bool, 1)
	go func() { woke <- r.a.sleep(ctx, r.clk.Now().Add(time.Hour)) }()
	r.a.noteIssued(r.clk.Now().Add(-time.Minute)) // due already: a pass in minWait
	select {
	case ok := <-woke:
		assert.True(t, ok, "a pass is due, not the end of Run")
	case <-time.After(30 * time.Second):
		t.Fatal("the wait for a pass an hour away did not end for a certificate due now")
	}
}
