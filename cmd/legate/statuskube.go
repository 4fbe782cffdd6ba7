package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/statuspage"
)

// kubeFlags point legate status at a cluster instead of a legate serve:
// it reads the EnvoyConfig, EnvoySource and EnvoyConfigRevision objects
// and prints the same model.
type kubeFlags struct {
	kubeconfig, context, namespace, home string
	all                                  bool
}

func (f *kubeFlags) bind(fl *pflag.FlagSet) {
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "read the cluster of a legate controller (its EnvoyConfigs, EnvoySources and revisions) instead of a legate serve")
	fl.StringVar(&f.context, "context", "", "with --kubeconfig: the kubeconfig context to use (default: its current context)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "with --kubeconfig: the namespace of the EnvoyConfigs and EnvoySources (default: the context's)")
	fl.BoolVarP(&f.all, "all-namespaces", "A", false, "with --kubeconfig: every namespace")
	fl.StringVar(&f.home, "controller-namespace", "legate-system", "with --kubeconfig: the controller's namespace, where the revisions are")
}

func (f *kubeFlags) set() bool { return f.kubeconfig != "" || f.context != "" }

// client is a client of the cluster and the namespace to read ("" for
// every namespace).
func (f *kubeFlags) client() (crclient.Client, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("--kubeconfig %s: %w", cmp.Or(f.kubeconfig, "(default)"), err)
	}
	ns := f.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("--kubeconfig %s: the context's namespace: %w", f.kubeconfig, err)
		}
	}
	if f.all {
		ns = ""
	}
	c, err := newKubeClient(cfg)
	return c, ns, err
}

func newKubeClient(cfg *rest.Config) (crclient.Client, error) {
	scheme, err := controller.Scheme()
	if err != nil {
		return nil, err
	}
	return crclient.New(cfg, crclient.Options{Scheme: scheme})
}

// clusterStatus reads the nodes and sources of namespace ns ("" for all)
// from the cluster, in the shapes the read API answers. A node's history
// comes from the EnvoyConfigRevisions in home, only for the node IDs of
// the EnvoyConfigs read: a namespace's user learns nothing of another's
// nodes, and one who may not read home sees no history.
func clusterStatus(ctx context.Context, c crclient.Client, ns, home string) ([]statuspage.NodeView, []statuspage.Source, error) {
	var ecs v1alpha1.EnvoyConfigList
	if err := c.List(ctx, &ecs, crclient.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("list EnvoyConfigs: %w", err)
	}
	var ess v1alpha1.EnvoySourceList
	if err := c.List(ctx, &ess, crclient.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("list EnvoySources: %w", err)
	}
	wanted := map[string]bool{}
	for _, ec := range ecs.Items {
		wanted[ec.Spec.NodeID] = true
	}
	for _, es := range ess.Items {
		for _, n := range es.Status.Nodes {
			wanted[n] = true
		}
	}
	history := map[string][]v1alpha1.EnvoyConfigRevision{}
	var revs v1alpha1.EnvoyConfigRevisionList
	switch err := c.List(ctx, &revs, crclient.InNamespace(home)); {
	case apierrors.IsForbidden(err):
		// A tenant may not read the controller's namespace: no history.
	case err != nil:
		return nil, nil, fmt.Errorf("list EnvoyConfigRevisions in %s (--controller-namespace): %w", home, err)
	}
	for _, r := range revs.Items {
		if wanted[r.Spec.NodeID] {
			history[r.Spec.NodeID] = append(history[r.Spec.NodeID], r)
		}
	}

	var srcs []statuspage.Source
	for _, es := range ess.Items {
		srcs = append(srcs, sourceOfObject(sources.EnvoySourceRef(es.Namespace, es.Name).String(), "EnvoySource", es.Status.Conditions, es.Status.LastAttemptedRevision, es.Status.LastAppliedRevision, es.Status.Nodes, es.Status.Diagnostics))
	}
	var nodes []statuspage.NodeView
	for _, ec := range ecs.Items {
		name := sources.EnvoyConfigRef(ec.Namespace, ec.Name).String()
		rev := fmt.Sprintf("%s/%s@%d", ec.Namespace, ec.Name, ec.Generation)
		applied := ""
		if ec.Status.Commit != "" {
			applied = ec.Status.Commit
		}
		src := sourceOfObject(name, "EnvoyConfig", ec.Status.Conditions, rev, applied, []string{ec.Spec.NodeID}, nil)
		srcs = append(srcs, src)
		if ec.Spec.NodeID == "" {
			continue
		}
		st := nodeOfObject(ec, history[ec.Spec.NodeID])
		nodes = append(nodes, statuspage.NewNodeView(st, nil, []statuspage.Source{src}, false))
	}
	return nodes, srcs, nil
}

// sourceOfObject is the Source of an EnvoyConfig or EnvoySource from its
// status: Invalid when its Ready condition says validation refused it.
func sourceOfObject(name, kind string, conds []metav1.Condition, revision, applied string, nodes, diagnostics []string) statuspage.Source {
	s := statuspage.Source{Name: name, Kind: kind, Revision: revision, AppliedRevision: applied, Nodes: nodes, Diagnostics: diagnostics}
	if ready := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); ready != nil && ready.Status != metav1.ConditionTrue {
		s.LastError = ready.Message
		s.Invalid = ready.Reason == "ValidationFailed"
	}
	return s
}

// nodeOfObject is the engine's status of ec's node as the cluster keeps
// it: the controller's state, the revisions newest first, the proxies'
// counts.
func nodeOfObject(ec v1alpha1.EnvoyConfig, revs []v1alpha1.EnvoyConfigRevision) revisions.NodeStatus {
	st := revisions.NodeStatus{NodeID: ec.Spec.NodeID, History: []revisions.RevisionStatus{}}
	// The controller's Rejected is the engine's state plus the refused
	// spec, which the Source says again: the engine's part is what
	// MARIN3R's cacheState keeps.
	switch state := nodestate.State(ec.Status.State); state {
	case nodestate.Rejected, "":
		st.State = nodestate.Pending
		if ec.Status.CacheState != nil && *ec.Status.CacheState != v1alpha1.CacheInSync {
			st.State = revisions.State(*ec.Status.CacheState)
		}
	default:
		st.State = state
	}
	if p := ec.Status.Proxies; p != nil {
		st.Answers = revisions.AnswerCounts{Connected: p.Connected, Accepted: p.Accepted, Rejected: p.Rejected}
	}
	slices.SortFunc(revs, func(a, b v1alpha1.EnvoyConfigRevision) int {
		return b.Spec.CreatedAt.Compare(a.Spec.CreatedAt.Time)
	})
	for _, r := range revs {
		rs := revisions.RevisionStatus{Hash: r.Spec.Hash, CreatedAt: r.Spec.CreatedAt.Time, Tainted: r.Status.Tainted}
		if o := r.Status.Origin; o != nil {
			rs.Commit, rs.Revision, rs.Source, rs.Author, rs.Message = o.Commit, o.Revision, o.Source, o.Author, o.Message
		}
		if t := r.Status.Taint; t != nil {
			rs.Taint = &revisions.Taint{Message: t.Message}
		}
		if r.Status.Published {
			st.Published = &revisions.PublishedStatus{Hash: rs.Hash, Commit: rs.Commit, Revision: rs.Revision, Source: rs.Source}
		}
		st.History = append(st.History, rs)
	}
	if st.Published == nil && ec.Status.PublishedVersion != nil {
		st.Published = &revisions.PublishedStatus{Hash: *ec.Status.PublishedVersion, Revision: ec.Status.Commit}
	}
	return st
}
