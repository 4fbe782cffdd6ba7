package kubepki

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pageSize is how many Secrets one List returns, so that a pass over a
// large fleet holds one page in memory at a time.
const pageSize = 250

// RenewDue renews the proxy certificates that are due (listing the
// Secrets labelled LabelCertificate=KindProxy in Namespace, or in all
// namespaces), and returns how many it renewed and when the next one is
// due (zero when there is none). A Secret that cannot be renewed does
// not stop the pass: its error joins err and next is at most half a
// minute away (as after a List that failed); one that changed meanwhile
// makes next now. A Secret legate cannot own (labelled but with no node
// ID) is reported in err but sets no due time.
func (a *Authority) RenewDue(ctx context.Context) (next time.Time, renewed int, err error) {
	ca, err := newSigner(a.CA)
	if err != nil {
		return time.Time{}, 0, err
	}
	opts := []client.ListOption{client.MatchingLabels{LabelCertificate: KindProxy}, client.Limit(pageSize)}
	if a.Namespace != "" {
		opts = append(opts, client.InNamespace(a.Namespace))
	}
	var errs []error
	cont, restarts := "", 0
	for {
		list := &corev1.SecretList{}
		err := a.Client.List(ctx, list, append(opts, client.Continue(cont))...)
		if apierrors.IsResourceExpired(err) && cont != "" && restarts < 2 {
			// The pass outlived the list's snapshot: start again; what
			// was renewed is no longer due.
			cont, restarts = "", restarts+1
			continue
		}
		if err != nil {
			return a.now().Add(retryAfter), renewed, fmt.Errorf("list the proxy Secrets: %w", err)
		}
		for i := range list.Items {
			if ctx.Err() != nil {
				return time.Time{}, renewed, ctx.Err()
			}
			due, did, err := a.renewIfDue(ctx, ca, &list.Items[i])
			if err != nil {
				errs = append(errs, err)
			}
			if did {
				renewed++
			}
			next = earliest(next, due)
		}
		if cont = list.Continue; cont == "" {
			return next, renewed, errors.Join(errs...)
		}
	}
}

// renewIfDue renews the certificate of s when it is due, and returns when
// it is next due and whether it renewed it.
func (a *Authority) renewIfDue(ctx context.Context, ca signer, s *corev1.Secret) (time.Time, bool, error) {
	now := a.now()
	if err := owned(s, KindProxy, ""); err != nil {
		return time.Time{}, false, err
	}
	nodeID := s.Annotations[AnnotationNodeID]
	v := check(s.Data, ca, proxyWant(nodeID), now)
	if v.Reason == "" {
		return v.RenewAt, false, nil
	}
	due, err := a.renewProxy(ctx, ca, s, nodeID, v.Reason)
	switch {
	case apierrors.IsNotFound(err):
		return time.Time{}, false, nil // deleted meanwhile
	case apierrors.IsConflict(err):
		return now, false, nil // written meanwhile: read it again soon
	case err != nil:
		return now.Add(retryAfter), false, err
	}
	return due, true, nil
}

// Run renews the proxy certificates until ctx ends: a RenewDue pass, then
// a wait until the next certificate is due (at least a second, at most an
// hour), sooner when EnsureProxy issues one that is due before it. It
// returns nil when ctx ends.
func (a *Authority) Run(ctx context.Context) error {
	for {
		next, renewed, err := a.RenewDue(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			a.Log.Error(err, "renewing proxy certificates")
		}
		now := a.now()
		wait := waitUntil(next, now, maxWait)
		a.Log.V(1).Info("proxy certificates checked", "renewed", renewed, "next", next, "wait", wait)
		if !a.sleep(ctx, now.Add(wait)) {
			return nil
		}
	}
}

// sleep waits until the pass planned at at, or until the earlier time a
// certificate issued meanwhile is due (rearm); false when ctx ended. A
// pass lists and checks every proxy Secret: a certificate issued for a
// new proxy, due in two thirds of its validity, must not cause one.
func (a *Authority) sleep(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(waitUntil(at, a.now(), maxWait))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-a.wakeup():
			// Only an earlier time moves the timer: issues that keep
			// coming must not keep postponing a pass that is due.
			if next := a.rearm(at); next.Before(at) {
				at = next
				t.Reset(waitUntil(at, a.now(), maxWait))
			}
		}
	}
}

// rearm is when the next pass is due, for a Run that planned it at at:
// the due time of a certificate issued since it last looked, when that
// is earlier.
func (a *Authority) rearm(at time.Time) time.Time {
	a.issuedMu.Lock()
	due := a.issued
	a.issued = time.Time{}
	a.issuedMu.Unlock()
	return earliest(at, due)
}

// Start is Run, for a controller-runtime manager.
func (a *Authority) Start(ctx context.Context) error { return a.Run(ctx) }

// NeedLeaderElection is true: only the leader renews proxy certificates.
func (a *Authority) NeedLeaderElection() bool { return true }
