package main

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/revisions"
)

func newUntaintCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "untaint NODE REVISION",
		Short: "Clear the taint of a revision so that it may be published again",
		Long: `untaint clears a revision's taint on a running legate (the revision hash, or
a unique prefix of it as shown by legate status). Taints are only ever
cleared on request: legate does not retry a configuration proxies rejected.
It needs the admin token.`,
		Example: `  # the tainted revision as legate status edge shows it
  legate untaint edge 3c959b7021e1
  # with the token of a legate serve started with --state-dir /var/lib/legate
  legate untaint edge 3c959b7021e1 --state-dir /var/lib/legate`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			node, hash := args[0], args[1]
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
			fmt.Fprintf(cmd.OutOrStdout(), "taint cleared: node %s revision %s\n", node, revisions.Short(out.Revision))
			return nil
		},
	}
	cf.bind(cmd.Flags(), true)
	return cmd
}
