package controller

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/rollout/kuberollout"
)

// announceRollout records the events of obj's rollout going from was to
// now (readiness.RolloutEvents).
func (s *shared) announceRollout(obj runtime.Object, was, now *v1alpha1.RolloutStatus) {
	for _, ev := range readiness.RolloutEvents(was, now) {
		s.recorder.Eventf(obj, nil, ev.Type, ev.Reason, "Rollout", "%s", ev.Note)
	}
}

// rolloutCommand carries out cmd, the legate.dev/rollout annotation of
// obj (which source stands for), on nodes (kuberollout.Command decides
// which), then removes the annotation. A command that cannot be carried
// out is removed too, with a Warning event saying why (refusal when none
// of nodes is this object's).
func (s *shared) rolloutCommand(ctx context.Context, obj client.Object, source string, nodes []string, cmd, refusal string) error {
	out, err := kuberollout.Command(ctx, s.core.Engine(), s.core.Owner, source, nodes, cmd, refusal)
	if err != nil {
		return err // the leader will do it
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1alpha1.RolloutAnnotation+`":null}}}`))
	if err := s.client.Patch(ctx, obj, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	if len(out.Done) > 0 {
		s.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "RolloutCommand", "Reconcile", "%s=%s carried out on node %s", v1alpha1.RolloutAnnotation, cmd, strings.Join(out.Done, ", "))
	}
	if len(out.Warnings) > 0 {
		note := readiness.Bounded(v1alpha1.RolloutAnnotation+"="+cmd+": "+strings.Join(out.Warnings, "; "), 1024)
		s.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "RolloutCommandRefused", "Reconcile", "%s", note)
	}
	return nil
}
