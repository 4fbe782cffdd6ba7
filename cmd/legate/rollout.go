package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/statuspage"
)

func newRolloutCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "rollout",
		Short: "Show or steer the progressive rollout of a node or of a source's nodes",
		Long: `rollout shows where a node's progressive rollout stands (step k of n, the
proxies on the new and the old revision, the gate it waits for, why it
waits or failed) and steers it: promote ends the current step (an untimed
pause, an inconclusive analysis, a held failure) and goes to the next;
pause holds it at its step; resume lets it go on; abort serves the old
revision to every proxy again and taints the new one. Steering needs the
admin token.

NAME is a node ID, or a source's name (in a cluster envoysource/NS/NAME or
envoyconfig/NS/NAME): a source acts on each of its nodes with a rollout
and prints each. --source takes the name as a source's when a node has
the same ID.`,
		Example: `  legate rollout status edge
  # an untimed pause (pause: {}) waits for this
  legate rollout promote edge
  legate rollout abort edge
  # every node of the source config
  legate rollout promote config`,
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

// rolloutTargets resolves NAME to the rollouts it means, from the one list
// of GET /api/v1/rollouts: the node of that ID when it has a rollout
// (unless asSource), else every node of the source of that name (a
// standalone source's name, or in a cluster "envoysource/NS/NAME" and
// "envoyconfig/NS/NAME", as the read API names sources). isSource says
// which it was. No match is an error naming what was looked for.
func rolloutTargets(ctx context.Context, c *client, name string, asSource bool) (views []revisions.RolloutView, isSource bool, err error) {
	var all []revisions.RolloutView
	if err := c.do(ctx, http.MethodGet, "/api/v1/rollouts", false, &all); err != nil {
		return nil, false, fmt.Errorf("list the rollouts: %w", err)
	}
	if !asSource {
		for _, v := range all {
			if v.Node == name {
				return []revisions.RolloutView{v}, false, nil
			}
		}
	}
	for _, v := range all {
		if v.Source == name {
			views = append(views, v)
		}
	}
	if len(views) == 0 {
		if asSource {
			return nil, true, fmt.Errorf("no node of source %q has a rollout", name)
		}
		return nil, false, fmt.Errorf("no rollout matches %q: it is neither a node with a rollout nor a source whose nodes have one (legate rollout status lists by node or source name; legate status shows both)", name)
	}
	slices.SortFunc(views, func(a, b revisions.RolloutView) int { return strings.Compare(a.Node, b.Node) })
	return views, true, nil
}

func newRolloutStatusCommand() *cobra.Command {
	var cf clientFlags
	var asSource bool
	cmd := &cobra.Command{
		Use:   "status NODE|SOURCE",
		Short: "Show the rollout of a node, or of every node of a source",
		Example: `  legate rollout status edge
  # every node of the source "config" with a rollout
  legate rollout status config`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			views, _, err := rolloutTargets(cmd.Context(), c, args[0], asSource)
			if err != nil {
				return err
			}
			for i, v := range views {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				printRollout(cmd.OutOrStdout(), v, time.Now())
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asSource, "source", false, "take the name as a source's even when a node has that ID")
	cf.bind(cmd.Flags(), false)
	return cmd
}

func newRolloutStepCommand(c rollout.Command, short string) *cobra.Command {
	var cf clientFlags
	var asSource bool
	cmd := &cobra.Command{
		Use:   string(c) + " NODE|SOURCE",
		Short: short,
		Long: short + `.

A source's name acts on every node of the source whose rollout is under
way, one after the other, and says for each what happened; the command
fails when any node did or when none has a rollout under way.`,
		Example:           "  legate rollout " + string(c) + " edge\n  legate rollout " + string(c) + " config   # every node of source config",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := cf.client()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			views, isSource, err := rolloutTargets(cmd.Context(), cl, args[0], asSource)
			if err != nil {
				return err
			}
			if isSource {
				views = slices.DeleteFunc(views, func(v revisions.RolloutView) bool { return v.Status.Phase.Done() })
				if len(views) == 0 {
					return fmt.Errorf("no node of source %q has a rollout under way (legate rollout status %s shows how they ended)", args[0], args[0])
				}
			}
			var failed []string
			for i, v := range views {
				if i > 0 {
					fmt.Fprintln(w)
				}
				var after revisions.RolloutView
				path := "/api/v1/nodes/" + url.PathEscape(v.Node) + "/rollout/" + string(c)
				if err := cl.do(cmd.Context(), http.MethodPost, path, true, &after); err != nil {
					failed = append(failed, v.Node)
					fmt.Fprintf(w, "node:      %s\nerror:     %s the rollout: %v\n", v.Node, c, err)
					continue
				}
				printRollout(w, after, time.Now())
			}
			switch {
			case len(failed) == 1 && len(views) == 1:
				return fmt.Errorf("%s the rollout of node %s failed", c, failed[0])
			case len(failed) > 0:
				return fmt.Errorf("%s failed on %d of %d nodes of source %s: %s", c, len(failed), len(views), args[0], strings.Join(failed, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asSource, "source", false, "take the name as a source's even when a node has that ID")
	cf.bind(cmd.Flags(), true)
	return cmd
}

// printRollout writes a rollout for people, one fact a line.
func printRollout(w io.Writer, v revisions.RolloutView, now time.Time) {
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
	// The page's words: what it waits for and how long, or how it ended
	// (the proxy's text without control characters, bounded).
	fmt.Fprintf(w, "waits for: %s\n", statuspage.RolloutWait(v, now))
	if st.Message != "" {
		fmt.Fprintf(w, "status:    %s\n", statuspage.CleanText(st.Message))
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
