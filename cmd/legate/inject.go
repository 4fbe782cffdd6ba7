package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newInjectCommand() *cobra.Command {
	var flags sidecarFlags
	var file, namespace string
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
the Secret yourself.

The flags are legate controller's, with its defaults: given the same flags
the sidecar printed is the one the webhook stores. The short forms --image,
--xds-address, --xds-server-name, --mode and --allow-admin-beyond-loopback
are kept.`,
		Example: `  legate inject -f deployment.yaml | kubectl apply -f -
  kubectl get deploy shop -o yaml | legate inject -f - --sidecar-mode classic`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := flags.injector(namespace)
			if err != nil {
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
			_, err = io.Copy(cmd.OutOrStdout(), &out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "filename", "f", "", `manifests to read ("-": standard input)`)
	flags.register(fl)
	fl.StringVar(&namespace, "controller-namespace", defaultControllerNamespace(), "namespace legate controller runs in: the default xDS address is legate-xds.<it>.svc:18000")
	fl.SetNormalizeFunc(injectFlagAliases)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// injectFlagAliases keeps the flag names legate inject had before it took
// legate controller's.
func injectFlagAliases(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	switch name {
	case "image", "xds-address", "xds-server-name", "mode", "requests", "limits":
		name = "sidecar-" + name
	case "allow-admin-beyond-loopback":
		name = "sidecar-allow-admin-beyond-loopback"
	}
	return pflag.NormalizedName(name)
}
