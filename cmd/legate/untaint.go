package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newUntaintCommand() *cobra.Command {
	var server string
	var tf tokenFlags
	cmd := &cobra.Command{
		Use:   "untaint NODE REVISION",
		Short: "Clear the taint of a revision so that it may be published again",
		Long: `untaint clears a revision's taint on a running legate (the revision hash, or
a unique prefix of it as shown by legate status). Taints are only ever
cleared on request: legate does not retry a configuration proxies rejected.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			node, hash := args[0], args[1]
			endpoint := strings.TrimSuffix(server, "/") + "/api/v1/nodes/" + url.PathEscape(node) +
				"/revisions/" + url.PathEscape(hash) + "/taint"
			req, err := http.NewRequestWithContext(cmd.Context(), http.MethodDelete, endpoint, nil)
			if err != nil {
				return err
			}
			tok, err := tf.token()
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				return unreachable(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("clear taint of %s on node %s: %s: %s", hash, node, resp.Status, strings.TrimSpace(string(body)))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "taint cleared: node %s revision %s\n", node, hash)
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "http://127.0.0.1:8080", "legate's HTTP address")
	tf.bind(cmd.Flags())
	return cmd
}
