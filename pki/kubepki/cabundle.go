package kubepki

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/webhook"
)

// CABundle writes legate's CA into the caBundle of its webhook
// configurations (webhook.InjectorConfiguration and
// webhook.ValidationConfiguration), so that the API server trusts the
// serving certificate legate issues itself (what cert-manager's CA
// injector does otherwise). As a manager.Runnable it needs leader
// election: the leader alone writes.
type CABundle struct {
	Client client.Client
	// CA is the CA's certificate, PEM-encoded.
	CA  []byte
	Log logr.Logger
}

// caBundleInterval is how often the configurations are checked again (an
// apply of config/webhook resets their caBundle).
const caBundleInterval = time.Minute

// Start writes the CA at once and every caBundleInterval until ctx ends
// (manager.Runnable).
func (b CABundle) Start(ctx context.Context) error {
	t := time.NewTicker(caBundleInterval)
	defer t.Stop()
	for {
		if err := b.write(ctx); err != nil && ctx.Err() == nil {
			b.Log.Error(err, "writing legate's CA into the webhook configurations")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// write sets the caBundle of every webhook of legate's configurations that
// lacks the CA; a configuration not installed yet is skipped.
func (b CABundle) write(ctx context.Context) error {
	var errs []error
	for _, obj := range []client.Object{&admissionregv1.MutatingWebhookConfiguration{}, &admissionregv1.ValidatingWebhookConfiguration{}} {
		name := webhook.ValidationConfiguration
		if _, ok := obj.(*admissionregv1.MutatingWebhookConfiguration); ok {
			name = webhook.InjectorConfiguration
		}
		if err := b.Client.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		base := obj.DeepCopyObject().(client.Object)
		changed := false
		for _, cc := range clientConfigs(obj) {
			if !bytes.Equal(cc.CABundle, b.CA) {
				cc.CABundle, changed = b.CA, true
			}
		}
		if !changed {
			continue
		}
		if err := b.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		b.Log.Info("wrote legate's CA into the caBundle", "configuration", name)
	}
	return errors.Join(errs...)
}

// clientConfigs are the client configurations of a webhook
// configuration's webhooks.
func clientConfigs(obj client.Object) []*admissionregv1.WebhookClientConfig {
	var out []*admissionregv1.WebhookClientConfig
	switch o := obj.(type) {
	case *admissionregv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			out = append(out, &o.Webhooks[i].ClientConfig)
		}
	case *admissionregv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			out = append(out, &o.Webhooks[i].ClientConfig)
		}
	}
	return out
}
