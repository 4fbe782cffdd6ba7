package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
)

func newRolloutCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "rollout",
		Short: "Show or steer the progressive rollout of a node",
		Long: `rollout shows where a node's progressive rollout stands (step k of n, the
proxies on the new and the old revision, the gate it waits for, why it
waits or failed) and steers it: promote ends the current step (an untimed
pause, an inconclusive analysis, a held failure) and goes to the next;
pause holds it at its step; resume lets it go on; abort serves the old
revision to every proxy again and taints the new one. Steering needs the
admin token.`,
		Example: `  legate rollout status edge
  # an untimed pause (pause: {}) waits for this
  legate rollout promote edge
  legate rollout abort edge`,
	}
	root.AddCommand(newRolloutStatusCommand())
	for _, c := range []struct {
		cmd   rollout.Command
		short string
	}{
		{rollout.CommandPromote, "End the current step of a node's rollout and go to the next"},
		{rollout.CommandPause, "Hold a node's rollout at its step"},
		{rollout.CommandResume, "Let a paused rollout go on"},
		{rollout.CommandAbort, "Stop a node's rollout: the old revision to every proxy, the new one tainted"},
	} {
		root.AddCommand(newRolloutStepCommand(c.cmd, c.short))
	}
	return root
}

func newRolloutStatusCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:               "status NODE",
		Short:             "Show a node's rollout",
		Example:           "  legate rollout status edge",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			var v revisions.RolloutView
			if err := c.do(cmd.Context(), http.MethodGet, "/api/v1/nodes/"+url.PathEscape(args[0])+"/rollout", false, &v); err != nil {
				return fmt.Errorf("rollout of node %s: %w", args[0], err)
			}
			printRollout(cmd.OutOrStdout(), v)
			return nil
		},
	}
	cf.bind(cmd.Flags(), false)
	return cmd
}

func newRolloutStepCommand(c rollout.Command, short string) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:               string(c) + " NODE",
		Short:             short,
		Example:           "  legate rollout " + string(c) + " edge",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := cf.client()
			if err != nil {
				return err
			}
			var v revisions.RolloutView
			path := "/api/v1/nodes/" + url.PathEscape(args[0]) + "/rollout/" + string(c)
			if err := cl.do(cmd.Context(), http.MethodPost, path, true, &v); err != nil {
				return fmt.Errorf("%s the rollout of node %s: %w", c, args[0], err)
			}
			printRollout(cmd.OutOrStdout(), v)
			return nil
		},
	}
	cf.bind(cmd.Flags(), true)
	return cmd
}

// printRollout writes a rollout for people, one fact a line.
func printRollout(w io.Writer, v revisions.RolloutView) {
	st := v.Status
	fmt.Fprintf(w, "node:      %s (source %s)\n", v.Node, v.Source)
	fmt.Fprintf(w, "revision:  %s over %s", revisions.Short(st.Candidate), revisions.Short(st.Stable))
	if st.Commit != "" {
		fmt.Fprintf(w, " (commit %s)", revisions.Short(st.Commit))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "phase:     %s, %s\n", st.Phase, v.Step)
	fmt.Fprintf(w, "proxies:   %d on the new revision (%d ACKed), %d on the old; %s of proxies served the new one\n",
		v.OnCandidate, v.Acked, v.OnStable, rollout.FormatShare(st.Share))
	if v.NextGate != "" {
		fmt.Fprintf(w, "next gate: %s\n", v.NextGate)
	}
	if st.Message != "" {
		fmt.Fprintf(w, "status:    %s\n", st.Message)
	}
	if f := st.Failure; f != nil {
		who := ""
		if f.Proxy != "" {
			who = "proxy " + f.Proxy + ": "
		}
		fmt.Fprintf(w, "failure:   step %d (%s): %s%s\n", f.Step, f.Describe, who, f.Message)
	}
	var gates []string
	for _, g := range st.Gates {
		mark := "passed"
		if !g.Passed {
			mark = "not passed"
		}
		gates = append(gates, string(g.Gate)+" "+mark)
	}
	if len(gates) > 0 {
		fmt.Fprintf(w, "gates:     %s\n", strings.Join(gates, ", "))
	}
}
