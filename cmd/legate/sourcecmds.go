package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/standalone"
	"github.com/legate-dev/legate/statuspage"
)

func newReconcileCommand() *cobra.Command {
	var cf clientFlags
	var timeout time.Duration
	var noWait bool
	cmd := &cobra.Command{
		Use:   "reconcile SOURCE",
		Short: "Fetch a source now and wait for the verdict",
		Long: `reconcile asks a running legate serve to fetch SOURCE now (as a push webhook
would), waits until that fetch is rendered and applied, then until the
proxies of its nodes answered, and prints the verdict. It exits non-zero
when the commit was rejected (by validation or by the proxies) or the fetch
failed. It needs the admin token.`,
		Example: `  legate reconcile config
  # do not wait for the proxies' answers
  legate reconcile config --no-wait
  legate reconcile config --timeout 2m`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSources(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			err = reconcile(ctx, c, args[0], !noWait, cmd.OutOrStdout())
			if errors.Is(err, context.DeadlineExceeded) && cmd.Context().Err() == nil {
				// A slow fetch (a large repository) outlasts the default
				// minute: say which flag waits longer.
				return fmt.Errorf("%w (--timeout %s waits longer; legate status shows where source %s stands)", err, timeout, args[0])
			}
			return err
		},
	}
	cf.bind(cmd.Flags(), true)
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the verdict")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the fetch is applied, without waiting for the proxies")
	return cmd
}

// pollEvery paces reconcile's status polls.
const pollEvery = 200 * time.Millisecond

func reconcile(ctx context.Context, c *client, name string, waitProxies bool, w io.Writer) error {
	var req standalone.FetchResponse
	if err := c.do(ctx, http.MethodPost, "/api/v1/sources/"+url.PathEscape(name)+"/fetch", true, &req); err != nil {
		return fmt.Errorf("reconcile %s: %w", name, err)
	}
	fmt.Fprintf(w, "► fetching source %s\n", name)
	src, err := waitFor(ctx, func() (statuspage.Source, bool, error) {
		srcs, err := c.sources(ctx)
		if err != nil {
			return statuspage.Source{}, false, err
		}
		for _, s := range srcs {
			if s.Name == name {
				return s, s.LastAttempt != nil && !s.LastAttempt.Before(req.RequestedAt), nil
			}
		}
		return statuspage.Source{}, false, fmt.Errorf("source %q is gone", name)
	})
	if err != nil {
		return fmt.Errorf("reconcile %s: waiting for the fetch: %w", name, err)
	}
	if src.LastError != "" && src.AppliedRevision != src.Revision {
		fmt.Fprintf(w, "✗ %s: %s\n", dash(src.Revision), src.LastError)
		return fmt.Errorf("source %s: revision %s not applied", name, dash(src.Revision))
	}
	fmt.Fprintf(w, "✔ fetched and applied %s\n", src.Revision)
	if !waitProxies || len(src.Nodes) == 0 {
		return nil
	}
	var failed []string
	for _, node := range src.Nodes {
		n, err := waitFor(ctx, func() (statuspage.NodeView, bool, error) {
			n, err := c.node(ctx, node)
			return n, err == nil && (n.State != nodestate.Pending || len(n.Proxies) == 0), err
		})
		switch {
		case err == nil && n.State == nodestate.Pending:
			fmt.Fprintf(w, "◎ node %s: %s\n", node, n.Summary)
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintf(w, "◎ node %s: %s\n", node, n.Summary)
			failed = append(failed, node+" (no verdict in time)")
		case err != nil:
			return err
		case n.State == nodestate.InSync || n.State == nodestate.Degraded:
			fmt.Fprintf(w, "✔ node %s %s: %s\n", node, n.State, n.Summary)
		default:
			msg := n.Summary
			if n.Attempt != nil && n.Attempt.Error != "" {
				msg += ": " + n.Attempt.Error
			}
			fmt.Fprintf(w, "✗ node %s %s: %s\n", node, n.State, msg)
			failed = append(failed, node)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("source %s: %s not in sync: %v", name, src.Revision, failed)
	}
	return nil
}

// waitFor polls get until it reports done, an error, or ctx ends; it
// returns the last value seen.
func waitFor[T any](ctx context.Context, get func() (T, bool, error)) (T, error) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		v, done, err := get()
		if err != nil || done {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-t.C:
		}
	}
}

func newSuspendCommand(suspend bool) *cobra.Command {
	var cf clientFlags
	use, short, long, verb := "suspend", "Stop fetching a source until it is resumed",
		`suspend stops a running legate serve from fetching SOURCE: neither its
interval, nor push webhooks, nor legate reconcile fetch it, and its nodes keep
serving what they serve. It survives restarts. legate resume undoes it.`, "suspend"
	if !suspend {
		use, short, long, verb = "resume", "Fetch a suspended source again",
			`resume lets a running legate serve fetch a suspended SOURCE again, and
fetches it at once.`, "resume"
	}
	cmd := &cobra.Command{
		Use:               use + " SOURCE",
		Short:             short,
		Long:              long + " It needs the admin token.",
		Example:           "  legate " + use + " config",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSources(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			var out struct {
				Status string `json:"status"`
			}
			if err := c.do(cmd.Context(), http.MethodPost, "/api/v1/sources/"+url.PathEscape(args[0])+"/"+verb, true, &out); err != nil {
				return fmt.Errorf("%s %s: %w", verb, args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "source %s %s\n", args[0], out.Status)
			return nil
		},
	}
	cf.bind(cmd.Flags(), true)
	return cmd
}

func newPruneCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "prune NODE",
		Short: "Stop serving an orphaned node",
		Long: `prune stops serving NODE, which no configured source renders any more
(legate status marks it orphaned): its proxies receive an empty configuration
and its history is deleted. legate keeps serving orphaned nodes until pruned
so that a file deleted by mistake does not take proxies down. A node a source
still renders is refused. It needs the admin token.`,
		Example:           "  legate prune old-edge",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			if err := c.do(cmd.Context(), http.MethodPost, "/api/v1/nodes/"+url.PathEscape(args[0])+"/prune", true, nil); err != nil {
				return fmt.Errorf("prune %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %s pruned: no longer served\n", args[0])
			return nil
		},
	}
	cf.bind(cmd.Flags(), true)
	return cmd
}
