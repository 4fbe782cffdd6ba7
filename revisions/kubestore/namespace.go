package kubestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// CheckNamespace fails when namespace, where the controller keeps its
// revisions, node records and outbox (this store's namespace), does not
// exist: started anyway, the controller would report ready and then fail
// every revision write of every object; legate controller checks it first.
// It asks with a server-side dry run of a ConfigMap create, which the
// controller's role already allows (no permission on Namespace objects is
// needed, so a namespaced install can run it) and which stores nothing.
// An answer other than "namespace not found" lets the start go on: the
// controller reports that error where it meets it.
func CheckNamespace(ctx context.Context, cfg *rest.Config, namespace string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for the API server: %w", err)
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "legate-preflight-", Namespace: namespace}}
	_, err = cs.CoreV1().ConfigMaps(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("--controller-namespace %s does not exist: create it (kubectl create namespace %s) or name another with --controller-namespace", namespace, namespace)
	}
	return nil
}
