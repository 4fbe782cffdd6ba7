package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/logging"
)

func newControllerCommand() *cobra.Command {
	var namespace, watchNamespace, xdsAddr, logLevel, logFormat string
	cmd := &cobra.Command{
		Use: "controller",
		Example: `  # with the CRDs installed (kubectl apply -f config/crd/), as the current kubectl context
  legate controller --namespace legate-system
  # only the EnvoyConfig objects of one namespace
  legate controller --watch-namespace team-a`,
		Short: "Run the Kubernetes home: EnvoyConfig objects served over xDS, revisions in the API server",
		Long: `controller reconciles the EnvoyConfig objects of the cluster (or of
--watch-namespace) through the same renderer, revision engine and xDS server
as legate serve. Revisions are EnvoyConfigRevision objects and node records
ConfigMaps in --namespace; each EnvoyConfig's status says whether it is
served (cacheState, publishedVersion, desiredVersion, conditions) and, when
proxies reject it, their own text. Install the CRDs first:
kubectl apply -f config/crd/. It reads the cluster configuration as kubectl
does (KUBECONFIG, or the pod's service account in a cluster).

Not built yet: EnvoySource, Flux sources, EndpointSlices, leader election,
xDS over mutual TLS; until then xDS listens on loopback only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logging.New(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return err
			}
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			ctl, err := controller.New(controller.Options{
				Config: cfg, Namespace: namespace, WatchNamespace: watchNamespace, XDSAddr: xdsAddr,
				Render: newRenderOptions(), Log: log,
			})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			log.Info("serving", "xds", ctl.XDSAddr(), "namespace", namespace, "watchNamespace", watchNamespace)
			return ctl.Run(ctx)
		},
	}
	fl := cmd.Flags()
	defaultNS := os.Getenv("POD_NAMESPACE")
	if defaultNS == "" {
		defaultNS = "legate-system"
	}
	fl.StringVar(&namespace, "namespace", defaultNS, "namespace of the revisions and node records (default: $POD_NAMESPACE, else legate-system)")
	fl.StringVar(&watchNamespace, "watch-namespace", "", "reconcile the EnvoyConfig objects of this namespace only (default: every namespace)")
	fl.StringVar(&xdsAddr, "xds-addr", controller.DefaultXDSAddr, "address of the xDS (ADS) server; loopback only until xDS over mutual TLS is built here")
	fl.StringVar(&logFormat, "log-format", "text", "log format: "+strings.Join(logging.Formats, " or "))
	fl.StringVar(&logLevel, "log-level", "info", "least severe level logged: "+strings.Join(logging.Levels, ", "))
	return cmd
}
