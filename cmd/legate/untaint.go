package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
)

func newUntaintCommand() *cobra.Command {
	var cf clientFlags
	var kubeconfig, namespace string
	cmd := &cobra.Command{
		Use:   "untaint NODE REVISION",
		Short: "Clear the taint of a revision so that it may be published again",
		Long: `untaint clears a revision's taint on a running legate (the revision hash, or
a unique prefix of it as shown by legate status). Taints are only ever
cleared on request: legate does not retry a configuration proxies rejected.
It needs the admin token.

With --kubeconfig it talks to the cluster of a legate controller instead:
it annotates the revision's EnvoyConfigRevision in --namespace with
legate.dev/untaint (what kubectl annotate would do) and waits until the
controller has cleared the taint.`,
		Example: `  # the tainted revision as legate status edge shows it
  legate untaint edge 3c959b7021e1
  # with the token of a legate serve started with --state-dir /var/lib/legate
  legate untaint edge 3c959b7021e1 --state-dir /var/lib/legate
  # on Kubernetes, through the API server
  legate untaint edge 3c959b7021e1 --kubeconfig ~/.kube/config --namespace legate-system`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			node, hash := args[0], args[1]
			if kubeconfig != "" {
				return untaintInCluster(cmd, kubeconfig, namespace, node, hash)
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var out struct {
				Revision string `json:"revision"`
				Status   string `json:"status"`
			}
			path := "/api/v1/nodes/" + url.PathEscape(node) + "/revisions/" + url.PathEscape(hash) + "/taint"
			if err := c.do(cmd.Context(), http.MethodDelete, path, true, &out); err != nil {
				return fmt.Errorf("clear the taint of %s on node %s: %w", hash, node, err)
			}
			if out.Status == "not tainted" {
				fmt.Fprintf(cmd.OutOrStdout(), "revision %s of node %s is not tainted; nothing to clear\n", revisions.Short(out.Revision), node)
				return nil
			}
			printUntainted(cmd.OutOrStdout(), node, out.Revision)
			return nil
		},
	}
	cf.bind(cmd.Flags(), true)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "untaint through this cluster's API server (a legate controller) instead of a legate serve")
	cmd.Flags().StringVar(&namespace, "namespace", "legate-system", "with --kubeconfig: the namespace of the controller's revisions")
	return cmd
}

func untaintInCluster(cmd *cobra.Command, kubeconfig, namespace, node, prefix string) error {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := controller.Scheme()
	if err != nil {
		return err
	}
	c, err := crclient.New(cfg, crclient.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
	defer cancel()
	hash, err := kubestore.RequestUntaint(ctx, c, namespace, node, prefix)
	if err != nil {
		return err
	}
	printUntainted(cmd.OutOrStdout(), node, hash)
	return nil
}

// printUntainted says that the taint is gone and what happens next: the
// revision is the newest untainted one again, so it is published at once,
// and proxies that still reject it taint it again within seconds. Saying
// so spares the user a surprise when the node rolls back a second time.
func printUntainted(w io.Writer, node, hash string) {
	fmt.Fprintf(w, "taint cleared: node %s revision %s\n", node, revisions.Short(hash))
	fmt.Fprintf(w, "if it is the newest untainted revision of node %s, it is published again now; if the proxies still reject it, it is tainted again within seconds and node %s rolls back again (legate status %s shows which)\n",
		node, node, node)
}
