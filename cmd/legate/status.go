package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/standalone"
)

func newStatusCommand() *cobra.Command {
	var server, output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show nodes, revisions, proxies and sources of a running legate",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base := strings.TrimSuffix(server, "/")
			var nodes []standalone.NodeView
			if err := getJSON(base+"/api/v1/nodes", &nodes); err != nil {
				return err
			}
			var srcs []standalone.SourceStatus
			if err := getJSON(base+"/api/v1/sources", &srcs); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"nodes": nodes, "sources": srcs})
			}
			printStatus(w, nodes, srcs)
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "http://127.0.0.1:8080", "legate's HTTP address")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// unreachable explains a failed request to legate serve.
func unreachable(err error) error {
	return fmt.Errorf("cannot reach legate serve (is it running? --server sets its HTTP address): %w", err)
}

func getJSON(url string, v any) error {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	return nil
}

func printStatus(w io.Writer, nodes []standalone.NodeView, srcs []standalone.SourceStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tREVISION\tAPPLIED\tNODES\tERROR")
	for _, s := range srcs {
		applied := s.AppliedRevision
		if applied == s.Revision && applied != "" {
			applied = "same"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, dash(s.Revision), dash(applied), dash(strings.Join(s.Nodes, ",")), dash(s.LastError))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NODE\tSTATE\tPUBLISHED\tCOMMIT\tPROXIES\tACCEPTED\tREJECTED")
	for _, n := range nodes {
		hash, commit := "-", "-"
		if n.Published != nil {
			hash, commit = short(n.Published.Hash), short(n.Published.Commit)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\n", n.NodeID, n.State, hash, commit,
			len(n.Proxies), n.Answers.Accepted, n.Answers.Rejected)
	}
	_ = tw.Flush()
	for _, n := range nodes {
		if wt := n.Waiting; wt != nil {
			fmt.Fprintf(w, "\n%s waits to serve %s (commit %s) since %s: %s\n", n.NodeID, short(wt.Hash), dash(short(wt.Commit)), wt.Since.Format(time.RFC3339), wt.Message)
		}
		fmt.Fprintf(w, "\n%s history (newest first):\n", n.NodeID)
		for _, r := range n.History {
			mark := ""
			if n.Published != nil && r.Hash == n.Published.Hash {
				mark = " (published)"
			}
			line := fmt.Sprintf("  %s  commit %s%s", short(r.Hash), dash(short(r.Commit)), mark)
			if r.Tainted && r.Taint != nil {
				line += "  TAINTED: " + r.Taint.Message
			}
			fmt.Fprintln(w, line)
		}
		for _, p := range n.Proxies {
			fmt.Fprintf(w, "  proxy %s (%s) connected since %s\n", p.Proxy, p.Stream, p.ConnectedSince.Format(time.RFC3339))
		}
	}
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
