package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
)

// outputFormats are what -o takes on legate status.
var outputFormats = []string{"text", "wide", "json", "yaml"}

func checkFormat(format string, allowed []string) error {
	if !slices.Contains(allowed, format) {
		return fmt.Errorf("unknown output format %q: use one of %s", format, strings.Join(allowed, ", "))
	}
	return nil
}

func stateLegend() string {
	var b strings.Builder
	for _, m := range statuspage.StateMeanings {
		fmt.Fprintf(&b, "  %-15s %s\n", m.State, m.Meaning)
	}
	return b.String()
}

func newStatusCommand() *cobra.Command {
	var cf clientFlags
	var kf kubeFlags
	var output string
	cmd := &cobra.Command{
		Use:   "status [NODE]",
		Short: "Show sources, nodes, revisions and proxies of a running legate",
		Long: `status asks a running legate serve where every source and node stands: the
revision each source fetched and applied, what each node serves, the newest
commit that tried to change it and its verdict, and its proxies. With a NODE,
it shows that node's history and proxies in full. With --kubeconfig or
--context it reads a legate controller's cluster instead (EnvoyConfigs,
EnvoySources and EnvoyConfigRevisions, in -n NAMESPACE or -A) and prints the
same states.

Node states:
` + stateLegend() + `A node no source renders any more is marked orphaned; legate prune NODE stops
serving it.`,
		Example: `  # every source and node
  legate status
  # one node with its history and proxies
  legate status edge
  # more columns (proxies' versions, ages)
  legate status -o wide
  # for scripts
  legate status edge -o json | jq .state
  # a legate serve elsewhere, or a legate controller replica (its role too)
  legate status --server 10.0.0.5:8080
  # a cluster's EnvoyConfigs and EnvoySources, through its API server
  legate status --kubeconfig ~/.kube/config -n team-a
  legate status --context prod -A`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output, outputFormats); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if kf.set() {
				return statusOfCluster(cmd.Context(), w, &kf, args, output)
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				n, err := c.node(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if output == "json" || output == "yaml" {
					return printJSONOrYAML(w, output, n)
				}
				printNode(w, n, output == "wide", time.Now())
				return nil
			}
			nodes, err := c.nodes(cmd.Context())
			if err != nil {
				return err
			}
			srcs, err := c.sources(cmd.Context())
			if err != nil {
				return err
			}
			replica, err := c.replica(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" || output == "yaml" {
				all := map[string]any{"nodes": nodes, "sources": srcs}
				if replica != nil {
					all["replica"] = replica
				}
				return printJSONOrYAML(w, output, all)
			}
			if replica != nil && replica.Role != "single" {
				fmt.Fprintf(w, "replica %s: %s (the Lease holder is %s), serving %d xDS streams\n\n", replica.Replica, replica.Role, cmp.Or(replica.LeaseHolder, "nobody"), replica.Proxies)
			}
			printStatus(w, nodes, srcs, output == "wide", time.Now())
			return nil
		},
	}
	cf.bind(cmd.Flags(), false)
	kf.bind(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: "+strings.Join(outputFormats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// statusOfCluster is legate status against a cluster: the same tables,
// the same model, read from the API server.
func statusOfCluster(ctx context.Context, w io.Writer, kf *kubeFlags, args []string, output string) error {
	c, ns, err := kf.client()
	if err != nil {
		return err
	}
	nodes, srcs, err := clusterStatus(ctx, c, ns, kf.home)
	if err != nil {
		return err
	}
	if len(args) == 1 {
		for _, n := range nodes {
			if n.NodeID == args[0] {
				if output == "json" || output == "yaml" {
					return printJSONOrYAML(w, output, n)
				}
				printNode(w, n, output == "wide", time.Now())
				return nil
			}
		}
		return fmt.Errorf("no EnvoyConfig configures node %q in %s", args[0], cmp.Or(ns, "any namespace"))
	}
	if output == "json" || output == "yaml" {
		return printJSONOrYAML(w, output, map[string]any{"nodes": nodes, "sources": srcs})
	}
	printStatus(w, nodes, srcs, output == "wide", time.Now())
	return nil
}

// maxErrorCell bounds, in characters, a source's problem in the narrow
// sources table.
const maxErrorCell = 60

// printStatus writes the sources and nodes tables and the meaning of the
// states shown.
func printStatus(w io.Writer, nodes []statuspage.NodeView, srcs []statuspage.Source, wide bool, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "SOURCE\tREVISION\tAPPLIED\tNODES\tFETCHED\tURL\tERROR")
	} else {
		fmt.Fprintln(tw, "SOURCE\tREVISION\tAPPLIED\tNODES\tERROR")
	}
	// A long problem would stretch every row of the narrow table: it is
	// cut there and said in full below it, once.
	var cut []statuspage.Source
	for _, s := range srcs {
		applied := s.AppliedRevision
		if applied == s.Revision && applied != "" {
			applied = "same"
		}
		name := s.Name
		if s.Suspended {
			name += " (suspended)"
		}
		problem := strings.Join(nonEmpty(s.Rejection, s.LastError), "; ")
		if wide {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, dash(s.Revision), dash(applied), dash(strings.Join(s.Nodes, ",")), ago(s.LastFetch, now), s.URL, dash(problem))
		} else {
			if len([]rune(problem)) > maxErrorCell {
				cut = append(cut, s)
				problem = string([]rune(problem)[:maxErrorCell]) + "… (below)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, dash(shortRev(s.Revision)), dash(shortRev(applied)), dash(strings.Join(s.Nodes, ",")), dash(problem))
		}
	}
	fmt.Fprintln(tw)
	nodes = statuspage.ProblemsFirst(nodes)
	if wide {
		fmt.Fprintln(tw, "NODE\tSTATE\tSERVED\tCOMMIT\tPROXIES\tNEWEST COMMIT\tVERDICT\tSUMMARY")
	} else {
		fmt.Fprintln(tw, "NODE\tSTATE\tSERVED\tCOMMIT\tPROXIES\tNEWEST ATTEMPT")
	}
	states := map[nodestate.State]bool{}
	for _, n := range nodes {
		states[n.State] = true
		hash, commit := "-", "-"
		if n.Published != nil {
			hash, commit = revisions.Short(n.Published.Hash), dash(cmp.Or(revisions.Short(n.Published.Commit), n.Published.Revision))
		}
		state := string(n.State)
		if n.Orphaned {
			state += ",Orphaned"
		}
		proxies := proxiesCell(n)
		newest, verdict := "-", "-"
		if a := n.Attempt; a != nil {
			newest, verdict = dash(cmp.Or(revisions.Short(a.Commit), a.Revision)), a.Verdict
		}
		if wide {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.NodeID, state, hash, commit, proxies, newest, verdict, n.Summary)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.NodeID, state, hash, commit, proxies, newest+" "+verdict)
		}
	}
	_ = tw.Flush()
	if len(nodes) == 0 {
		fmt.Fprintln(w, "no nodes yet")
	} else {
		fmt.Fprintf(w, "\nnodes: %s\n", nodestate.Counts(nodeStates(nodes)))
	}
	var said strings.Builder
	for _, n := range nodes {
		detail := nodeDetail(n)
		if len(detail) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %s\n", n.NodeID, detail[0])
		for _, line := range detail[1:] {
			fmt.Fprintf(w, "  %s\n", line)
		}
		said.WriteString(strings.Join(detail, "\n"))
	}
	for _, s := range cut {
		if problem := strings.Join(nonEmpty(s.Rejection, s.LastError), "; "); !strings.Contains(said.String(), problem) {
			fmt.Fprintf(w, "\n%s: %s\n", s.Name, problem)
		}
	}
	// An accepted commit's warnings (a route to a cluster the node does
	// not define: Envoy takes it and answers 503) are served along with
	// it: said here, as the page does, or only legate validate shows them.
	for _, s := range srcs {
		if s.Invalid || len(s.Diagnostics) == 0 {
			continue
		}
		noun := "warnings"
		if len(s.Diagnostics) == 1 {
			noun = "warning"
		}
		fmt.Fprintf(w, "\n%s: accepted with %d %s:\n", s.Name, len(s.Diagnostics), noun)
		for _, d := range s.Diagnostics {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	if len(states) > 0 {
		fmt.Fprintln(w)
		for _, m := range statuspage.StateMeanings {
			if states[m.State] {
				fmt.Fprintf(w, "%s: %s\n", m.State, m.Meaning)
			}
		}
	}
}

// nodeDetail is what legate status says under the tables of a node that
// needs a person: its newest commit's error, or its closest configured
// IDs, then what to do.
func nodeDetail(n statuspage.NodeView) []string {
	var lines []string
	if a := n.Attempt; a != nil && a.Error != "" {
		lines = append(lines, fmt.Sprintf("newest %s %s: %s", a.Name(), a.Verdict, a.Error))
	}
	if n.State == nodestate.Unconfigured {
		lines = append(lines, n.Summary)
	}
	for _, step := range statuspage.NextSteps(n) {
		lines = append(lines, "→ "+step)
	}
	return lines
}

// proxiesCell is "none" or "<connected> (<accepted> ok, <rejected> rejected)".
func proxiesCell(n statuspage.NodeView) string {
	connected := max(len(n.Proxies), n.Answers.Connected)
	if connected == 0 {
		return "none connected"
	}
	cell := fmt.Sprintf("%d (%d ok", connected, n.Answers.Accepted)
	if n.Answers.Rejected > 0 {
		cell += fmt.Sprintf(", %d rejected", n.Answers.Rejected)
	}
	if n.Answers.GuestsAside > 0 {
		cell += fmt.Sprintf(", %d guests not counted", n.Answers.GuestsAside)
	}
	return cell + ")"
}

// printNode writes one node in full: state, summary, newest attempt,
// history with the served revision marked, and proxies.
func printNode(w io.Writer, n statuspage.NodeView, wide bool, now time.Time) {
	fmt.Fprintf(w, "Node:     %s\n", n.NodeID)
	state := string(n.State)
	if n.Orphaned {
		state += " (orphaned)"
	}
	fmt.Fprintf(w, "State:    %s — %s\n", state, statuspage.StateMeaning(n.State))
	fmt.Fprintf(w, "Summary:  %s\n", n.Summary)
	if p := n.Published; p != nil {
		// A cluster's EnvoyConfig status keeps no xDS version: say none
		// rather than "(version )".
		version := ""
		if p.Version != "" {
			version = " (version " + p.Version + ")"
		}
		fmt.Fprintf(w, "Served:   %s%s from %s\n", revisions.Short(p.Hash), version, dash(p.Revision))
	} else {
		fmt.Fprintln(w, "Served:   nothing")
	}
	if a := n.Attempt; a != nil {
		line := fmt.Sprintf("Newest:   %s %s", a.Name(), a.Verdict)
		if a.Error != "" {
			line += ": " + a.Error
		}
		fmt.Fprintln(w, line)
	}
	if wt := n.Waiting; wt != nil {
		fmt.Fprintf(w, "Waiting:  %s (commit %s) for %s: %s\n", revisions.Short(wt.Hash), dash(revisions.Short(wt.Commit)), humanDuration(now.Sub(wt.Since)), wt.Message)
	}
	// What to do comes after the error it refers to ("the error above").
	for _, step := range statuspage.NextSteps(n) {
		fmt.Fprintf(w, "Next:     %s\n", step)
	}
	fmt.Fprintln(w, "\nHistory (newest first):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tREVISION\tCOMMIT\tSOURCE\tCREATED\tTAINT")
	for _, r := range n.History {
		mark := ""
		if n.Published != nil && r.Hash == n.Published.Hash {
			mark = "*"
		}
		taint := "-"
		if r.Tainted && r.Taint != nil {
			taint = "TAINTED: " + r.Taint.Message
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", mark, revisions.Short(r.Hash), dash(revisions.Short(r.Commit)), dash(r.Source), ago(&r.CreatedAt, now), taint)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  (* served)")
	fmt.Fprintln(w, "\nProxies:")
	if len(n.Proxies) == 0 {
		fmt.Fprintln(w, "  none connected")
	}
	for _, p := range n.Proxies {
		fmt.Fprintf(w, "  %s (%s stream, connected %s)\n", p.Proxy, p.Stream, ago(&p.ConnectedSince, now))
		if !wide {
			continue
		}
		for _, t := range p.Types {
			line := fmt.Sprintf("    %s sent %s acked %s", shortType(t.TypeURL), dash(t.SentVersion), dash(t.AckedVersion))
			if t.LastNACK != nil {
				line += fmt.Sprintf(" last NACK %s: %s", t.LastNACK.Version, t.LastNACK.Error)
			}
			fmt.Fprintln(w, line)
		}
	}
}

func nodeStates(nodes []statuspage.NodeView) []nodestate.State {
	out := make([]nodestate.State, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.State)
	}
	return out
}

func shortType(typeURL string) string {
	return typeURL[strings.LastIndex(typeURL, ".")+1:]
}

// shortRev abbreviates the SHA of a Flux revision ("main@sha1:<12>").
func shortRev(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 && len(rev)-i-1 > 12 {
		return rev[:i+13]
	}
	return rev
}

func ago(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return humanDuration(now.Sub(*t)) + " ago"
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
