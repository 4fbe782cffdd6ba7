package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/webhook"
)

func newInjectCommand() *cobra.Command {
	var in webhook.Injector
	var file string
	cmd := &cobra.Command{
		Use:   "inject -f FILE",
		Short: "Print Kubernetes manifests with the Envoy sidecar injected, offline",
		Long: `inject reads Kubernetes manifests (YAML or JSON, several documents) and
prints them with the Envoy sidecar that legate's admission webhook would add
to every Pod and pod template asking for one (label legate.dev/inject:
enabled, or MARIN3R's marin3r.3scale.net/status: enabled). It reads Pods,
Deployments, StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers,
Jobs, CronJobs and v1 Lists of them; other documents, and pods that do not
ask, are printed as they were read. Nothing is sent to a cluster.

The proxy mounts its client certificate from a Secret (one per node ID,
legate-proxy-<node ID>-<hash>, unless the client-certificate annotation names
one). The printed pods carry the label legate.dev/proxy, so a legate
controller running its own PKI (--pki-ca-secret) issues that Secret once a
pod is stored, as it does for pods its webhook injected; without it, create
the Secret yourself.`,
		Example: `  legate inject -f deployment.yaml | kubectl apply -f -
  kubectl get deploy shop -o yaml | legate inject -f - --mode classic`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := in.Check(); err != nil {
				return err
			}
			r := cmd.InOrStdin()
			name := "standard input"
			if file != "-" {
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				r, name = bytes.NewReader(data), file
			}
			var out bytes.Buffer
			if err := in.InjectManifests(r, &out); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			_, err := io.Copy(cmd.OutOrStdout(), &out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "filename", "f", "", `manifests to read ("-": standard input)`)
	fl.StringVar(&in.Image, "image", webhook.DefaultImage, "Envoy image, unless a pod's envoy-image annotation names one")
	fl.StringVar(&in.XDSAddress, "xds-address", webhook.DefaultXDSAddress, "legate's xDS Service, host:port")
	fl.StringVar(&in.XDSServerName, "xds-server-name", "", "name legate's server certificate must carry (default: the host of --xds-address)")
	fl.BoolVar(&in.AllowAdminBeyondLoopback, "allow-admin-beyond-loopback", false, "accept an admin.bind-address annotation that is not a loopback address (Envoy's admin interface reachable by other pods)")
	fl.StringVar(&in.Mode, "mode", webhook.ModeNative, `sidecar mode unless a pod's sidecar-mode annotation says: "native" (an init container with restartPolicy Always, Kubernetes 1.29+) or "classic" (one more container)`)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}
